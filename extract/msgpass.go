package extract

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/internal/instant"
	"github.com/kandev/kandev-extract/models"
)

// The message pass (SQLite): the message evidence and the writer-health
// counts from ONE streaming read of task_session_messages and ONE of
// task_session_subagents, neither sorted nor joined in SQL; the set logic
// (distinct keys, anti-joins, per-turn and per-session counts) is done in
// Go on compact hashed keys. Asked to (ReadMessagesAndFanout), the same
// read of task_session_subagents also counts the turns' and sessions'
// fan-out for their scans (fanout.go).
//
// It computes exactly what the SQL of messages.go (sqliteEvidence),
// health.go (sqliteHealth) and the scans' fan-out join compute —
// TestMessagePassMatchesSQL compares them on every fixture and on hostile
// stores — with two deliberate
// approximations of the same kind as the deletion detection's
// (pipeline/deletions.go): keys are compared through hashes, 128 bits for
// a (session, tool call) key, and for a tool call within one turn or one
// session the turn or session itself exactly and the tool call by 64 bits
// (a wrong count needs two different tool call ids of one turn to collide
// in 64 bits: about 10^-13 for a million rows); and a message identifier
// over 1 MiB is compared by its length only where writer health compares
// the whole value (the evidence query already read it as NULL).
//
// SQL does per row only what must be read inside SQLite: the bounded ids,
// json_valid of the metadata (the malformed count needs it for every
// message), and, behind the exact pre-filter, the kind and tool_call_id of
// the candidates. Memory: about 16 bytes per subagent-task message for each
// of the turn and session sets, 32 per message at or after capture_since,
// 32 per subagent row at or after it, and the per-turn and per-session
// evidence maps the transformer reads anyway; SQLite holds no sorter and no
// temporary table. Those per-row lists (and the fan-out's kept calls) are
// released as soon as the counts are made.

// msgPassMessages: every message whose metadata is not NULL and that
// matters — malformed (not JSON, or over the 1 MiB read bound: ok = 0) or a
// subagent-task message (ok = 1) — with its bounded ids, a bitmask of which
// id is over the bound (1 turn, 2 session, 4 task), the created_at text
// (bounded), and the tool_call_id of a subagent-task message.
//
// The inner query computes each function once per row (it is not
// flattened); the metadata is passed on only when within the read bound
// (octet_length reads no content, so an oversized value is measured, never
// loaded), and json_valid, the one full parse every message may need, runs
// only where its answer is used: on the candidates of the exact pre-filter
// (a JSON string that decodes to subagent_task is spelled out or escaped,
// which needs a backslash), and on the other messages only when they may be
// at or after capture_since, for the malformed count. That test is
// lexical and exact as a pre-filter: every form a stored timestamp takes
// (transform.ParseStamp) begins with its local date, and its offset is
// under a day, so a message at or after capture_since C has a created_at
// not before the date of C minus a day (?1; NULL: no capture_since).
// The outer query keeps the malformed messages and the subagent-task ones;
// json_extract runs on the latter only, and its second call finds the
// parse in SQLite's JSON cache.
const msgPassMessages = `
SELECT turn_id, task_session_id, task_id, over, created_at, ok,
	CASE WHEN ok THEN json_extract(meta, '$.tool_call_id') END
FROM (SELECT turn_id, task_session_id, task_id, over, created_at, cand,
		CASE WHEN sized IS NULL THEN NULL WHEN NOT sized THEN 0
			WHEN cand OR recent THEN json_valid(meta) END AS ok,
		CASE WHEN cand THEN meta END AS meta
	FROM (SELECT turn_id, task_session_id, task_id, over, created_at, sized, recent, meta,
			instr(meta, 'subagent_task') > 0 OR instr(meta, '\') > 0 AS cand
		FROM (SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id END AS turn_id,
				CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id END AS task_session_id,
				CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id END AS task_id,
				(octet_length(m.turn_id) > 1048576) | ((octet_length(m.task_session_id) > 1048576) << 1) | ((octet_length(m.task_id) > 1048576) << 2) AS over,
				CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END AS created_at,
				CASE WHEN octet_length(m.metadata) > ` + maxMessageMetadata + ` THEN 0 WHEN m.metadata IN ('', 'null') THEN NULL ELSE 1 END AS sized,
				m.created_at >= ?1 AS recent,
				CASE WHEN octet_length(m.metadata) <= ` + maxMessageMetadata + ` THEN m.metadata END AS meta
			FROM task_session_messages m WHERE m.metadata IS NOT NULL /*sessions*/ LIMIT -1 OFFSET 0)
		LIMIT -1 OFFSET 0)
	LIMIT -1 OFFSET 0)
WHERE ok = 0 OR (ok AND cand AND json_extract(meta, '$.normalized.kind') = 'subagent_task')`

// msgPassSubagents: every subagent row's bounded ids and observed_at.
const msgPassSubagents = `
SELECT CASE WHEN octet_length(turn_id) <= 1048576 THEN turn_id END,
	CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END,
	CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END,
	CASE WHEN octet_length(observed_at) <= 64 THEN observed_at END
FROM task_session_subagents`

// msgPassSubagentsFanout is msgPassSubagents with each row's source class
// (scans.FanoutSource), when the pass also counts the fan-out (fanout.go).
var msgPassSubagentsFanout = strings.Replace(msgPassSubagents, "\nFROM", ",\n\t"+scans.FanoutSource+"\nFROM", 1)

// msgPassRaw is the main read of the messages: every message whose
// metadata is not NULL, its bounded ids and created_at, and the metadata
// itself when within the read bound (NULL over it: measured by
// octet_length, never loaded). The JSON work is done in the process
// (jsonscan.go), on the TEXT values; a message whose metadata is another
// type (a BLOB, a number) is read again through msgPassMessages, by rowid,
// for SQLite's own json_valid and json_extract.
const msgPassRaw = `
SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id WHEN m.turn_id IS NOT NULL THEN ` + overlongMarker + ` END,
	CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id WHEN m.task_session_id IS NOT NULL THEN ` + overlongMarker + ` END,
	CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id WHEN m.task_id IS NOT NULL THEN ` + overlongMarker + ` END,
	CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END,
	CASE WHEN octet_length(m.metadata) <= ` + maxMessageMetadata + ` THEN m.metadata END
FROM task_session_messages m WHERE m.metadata IS NOT NULL`

// overlongMarker stands, in msgPassRaw, for an id over the 1 MiB read
// bound (read as NULL by the evidence, compared whole by writer health): a
// 16-byte BLOB no Kandev id is.
const overlongMarker = `X'6b782d6f7665726c6f6e672d69642e00'`

var overlongBytes = string([]byte{0x6b, 0x78, 0x2d, 0x6f, 0x76, 0x65, 0x72, 0x6c, 0x6f, 0x6e, 0x67, 0x2d, 0x69, 0x64, 0x2e, 0x00})

// ReadMessages reads the message evidence and, when healthSince is set,
// the writer-health counts (spec AC-28, AC-29), for activity at or after
// since (nil: no shortfall is measured), in one pass over the messages and
// the subagent rows (above; msgpass_pg.go on PostgreSQL). subagents says
// whether task_session_subagents exists. healthSince, when set, must be
// since: writer health is measured from capture_since. This pass is the
// only production implementation of both; the SQL the tests compare it
// with is in oracle_test.go.
func ReadMessages(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool, healthSince *time.Time) (MessageEvidence, *models.HealthCounts, error) {
	return readMessages(ctx, snap, since, subagents, healthSince, false)
}

// ReadMessagesAndFanout is ReadMessages that also counts, from the same
// read of task_session_subagents, the per-turn and per-session fan-out
// (ev.Fanout, see fanout.go) for the plan's turns and sessions scans, when
// the plan allows either. ev.Fanout is nil when the pass did not count it:
// the plan does not allow it, there is no subagent table (the counts are
// 0) or no task_session_messages table (no pass), health runs its own
// queries, or the counts would not fit 32 bits; the scans then count in
// SQL.
func ReadMessagesAndFanout(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool, healthSince *time.Time, plan *ScanPlan) (MessageEvidence, *models.HealthCounts, error) {
	fanout := subagents && (plan.PassFanout(models.SourceTurns) || plan.PassFanout(models.SourceSessions))
	return readMessages(ctx, snap, since, subagents, healthSince, fanout)
}

func readMessages(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool, healthSince *time.Time, fanout bool) (MessageEvidence, *models.HealthCounts, error) {
	health := healthSince != nil
	inner, mask := snap, func(err error) error { return err }
	if m, ok := snap.(*maskedSnapshot); ok {
		inner, mask = m.Snapshot, m.mask.err
	}
	if health && (since == nil || !since.Equal(*healthSince) || !subagents) {
		// Writer health runs only where capture_since is an instant and the
		// table exists (transform.HealthPlan), and is measured from it.
		return MessageEvidence{}, nil, errors.New("message pass: writer health is measured from capture_since, with a subagent table")
	}
	if pg, ok := inner.(*pgSnapshot); ok {
		ev, c, err := pg.readMessages(ctx, since, subagents, health, fanout)
		return ev, c, mask(err)
	}
	s, ok := inner.(*sqliteSnapshot)
	if !ok {
		return MessageEvidence{}, nil, fmt.Errorf("message pass: unsupported snapshot %T", snap)
	}
	ev := MessageEvidence{Turns: map[string]models.MessageCounts{}, Sessions: map[string]models.MessageCounts{}}
	if health {
		if err := checkHealthSchema(ctx, s, s.src.Path); err != nil {
			return ev, nil, mask(err)
		}
	}
	okTable, err := s.TableExists(ctx, "task_session_messages")
	if err != nil || !okTable {
		if err == nil && health {
			err = &models.MissingTableError{Source: s.src.Path, Table: "task_session_messages"}
		}
		return ev, nil, mask(err)
	}
	cols, err := s.Columns(ctx, "task_session_messages")
	if err != nil {
		return ev, nil, mask(err)
	}
	if err := requireColumns(s.src.Path, "task_session_messages", cols, "id", "task_session_id", "task_id", "turn_id", "metadata", "created_at"); err != nil {
		return ev, nil, mask(err)
	}
	p := newMsgPass(since, subagents, health, fanout)
	defer p.release()
	if err := s.tx.QueryRowContext(ctx, `SELECT count(*) FROM task_session_messages`).Scan(&ev.MessagesRead); err != nil {
		return ev, nil, mask(s.src.wrap("count task_session_messages", err))
	}
	// Borrowed: raw keeps no value of a row beyond it (the ids it keeps
	// are copied into the group tables, the rest is hashed or parsed).
	if err := s.rawStreamBorrowed(ctx, "message pass over task_session_messages", msgPassRaw, p.raw); err != nil {
		return ev, nil, mask(err)
	}
	if p.odd {
		// Some metadata is not TEXT: SQLite's JSON functions decide for
		// those messages (a second, filtered pass: such values are not
		// Kandev's).
		q := strings.Replace(msgPassMessages, "/*sessions*/", `AND typeof(m.metadata) NOT IN ('text', 'null')`, 1)
		if err := s.rawStreamBorrowed(ctx, "message pass over task_session_messages", q, p.message, p.recentBound()); err != nil {
			return ev, nil, mask(err)
		}
	}
	p.sealMessages()
	if subagents {
		q := msgPassSubagents
		if p.fan != nil {
			q = msgPassSubagentsFanout
		}
		// Borrowed too: subagent keeps copies of the ids (the group
		// tables), hashes and a parsed instant.
		if err := s.rawStreamBorrowed(ctx, "message pass over task_session_subagents", q, p.subagent); err != nil {
			return ev, nil, mask(err)
		}
	}
	counts := p.finish(&ev)
	if len(p.missingKeys) > 0 {
		// The shortfall's tool call ids were not kept: read them back from
		// the sessions' messages (a shortfall is rare and small).
		if err := p.readMissing(ctx, s, &ev); err != nil {
			return ev, nil, mask(err)
		}
	}
	if !health {
		return ev, nil, nil
	}
	return ev, &counts, nil
}

// rawStream runs q and hands each row to fn with the driver's types kept
// (stream turns BLOBs into strings; SQL compares a BLOB and a TEXT as
// different values, and so does the message pass).
func (s *sqliteSnapshot) rawStream(ctx context.Context, what, q string, fn func(row []any) error, args ...any) error {
	return s.rowStream(ctx, what, q, false, fn, args)
}

// rawStreamBorrowed is rawStream whose TEXT values are valid only until fn
// returns (liteConn.queryBorrowed): fn copies what it keeps.
func (s *sqliteSnapshot) rawStreamBorrowed(ctx context.Context, what, q string, fn func(row []any) error, args ...any) error {
	return s.rowStream(ctx, what, q, true, fn, args)
}

func (s *sqliteSnapshot) rowStream(ctx context.Context, what, q string, borrow bool, fn func(row []any) error, args []any) error {
	if s.lite != nil && !strings.Contains(q, driverFunction) {
		var fnErr error
		err := s.lite.run(ctx, q, args, borrow, func(row []any) error {
			fnErr = fn(row)
			return fnErr
		})
		if err != nil && err == fnErr {
			return err
		}
		if err != nil {
			return s.src.wrap("read "+what, err)
		}
		return nil
	}
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return s.src.wrap("read "+what, err)
	}
	defer rows.Close()
	n := len(mustColumns(rows))
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return s.src.wrap("read "+what, err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.src.wrap("read "+what, err)
	}
	return nil
}

// Typed hashing of SQL values: the storage class is part of the key, as in
// SQL's DISTINCT, EXCEPT and UNION (an INTEGER and a REAL of equal value
// are the same value; a TEXT and a BLOB of the same bytes are not).
var passSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

const (
	tagNull = iota + 1
	tagNum
	tagText
	tagBlob
	tagOverlong // an id over the 1 MiB read bound, by its length
)

// sqlValue is a SQL value as the driver returned it, classified.
type sqlValue struct {
	tag  byte
	s    string // text or blob bytes
	n    uint64 // a number's canonical bits, or an overlong id's length
	isNu bool
}

func classifyValue(v any) sqlValue {
	switch x := v.(type) {
	case nil:
		return sqlValue{tag: tagNull}
	case string:
		return sqlValue{tag: tagText, s: x}
	case []byte:
		return sqlValue{tag: tagBlob, s: string(x)}
	case int64:
		return sqlValue{tag: tagNum, n: uint64(x)}
	case float64:
		if x == math.Trunc(x) && x >= -9.2e18 && x <= 9.2e18 {
			return sqlValue{tag: tagNum, n: uint64(int64(x))}
		}
		if x == 0 {
			x = 0 // -0 is 0
		}
		return sqlValue{tag: tagNum, n: math.Float64bits(x) ^ 1<<63, isNu: true}
	case bool:
		if x {
			return sqlValue{tag: tagNum, n: 1}
		}
		return sqlValue{tag: tagNum}
	case time.Time:
		// Not produced for the expression columns read here.
		return sqlValue{tag: tagText, s: x.String()}
	}
	return sqlValue{tag: tagText, s: fmt.Sprint(v)}
}

func (v sqlValue) null() bool { return v.tag == tagNull }

// nonEmpty is COALESCE(v, ”) <> ”.
func (v sqlValue) nonEmpty() bool { return v.tag != tagNull && !(v.tag == tagText && v.s == "") }

func (v sqlValue) write(h *maphash.Hash) {
	h.WriteByte(v.tag)
	switch v.tag {
	case tagText, tagBlob:
		var n [8]byte
		putUint64(n[:], uint64(len(v.s)))
		h.Write(n[:])
		h.WriteString(v.s)
	case tagNum, tagOverlong:
		var n [9]byte
		putUint64(n[:], v.n)
		if v.isNu {
			n[8] = 1
		}
		h.Write(n[:])
	}
}

func putUint64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

type key128 [2]uint64

// keyBucket is a key's bucket for bucketSort: its top 16 bits, uniform
// (the keys are hashes under a seed of the process's own).
func keyBucket(k key128) uint32 { return uint32(k[0] >> 48) }

const keyBuckets = 1 << 16

// memberGroup is a member's bucket for bucketSort: its group.
func memberGroup(m member) uint32 { return m.group }

func cmpKey(a, b key128) int {
	switch {
	case a[0] < b[0]:
		return -1
	case a[0] > b[0]:
		return 1
	case a[1] < b[1]:
		return -1
	case a[1] > b[1]:
		return 1
	}
	return 0
}

// hashPair is the 128-bit key of a pair of values.
func (p *msgPass) hashPair(a, b sqlValue) key128 {
	var k key128
	for i := range k {
		h := &p.h[i]
		h.Reset()
		a.write(h)
		b.write(h)
		k[i] = h.Sum64()
	}
	return k
}

// pairKey is the key of a (session, tool call) pair: hashPair, with its
// lowest bit saying whether the pair is plain — two TEXT values without a
// ':' — so that the distinct concatenations of collisions can be counted
// from the distinct keys (see finish).
func (p *msgPass) pairKey(a, b sqlValue) key128 {
	k := p.hashPair(a, b)
	k[1] &^= 1
	if plainPair(a, b) {
		k[1] |= 1
	}
	return k
}

func plainPair(a, b sqlValue) bool {
	return a.tag == tagText && b.tag == tagText && !strings.Contains(a.s, ":") && !strings.Contains(b.s, ":")
}

// hashConcat is the 128-bit key of a || ':' || b (both not NULL): the
// text of the concatenation, whatever the storage classes.
func (p *msgPass) hashConcat(a, b sqlValue) key128 {
	var k key128
	for i := range k {
		h := &p.h[i]
		h.Reset()
		h.WriteString(a.text())
		h.WriteByte(':')
		h.WriteString(b.text())
		k[i] = h.Sum64()
	}
	return k
}

// text is the value as || renders it (only TEXT and BLOB ids reach it).
func (v sqlValue) text() string {
	if v.tag == tagNum && !v.isNu {
		return strconv.FormatInt(int64(v.n), 10)
	}
	return v.s
}

func (p *msgPass) hash64(v sqlValue) uint64 {
	h := &p.h[0]
	h.Reset()
	v.write(h)
	return h.Sum64()
}

// member is one tool call of a turn or session: the group exactly (its
// index in the pass's table of turns or sessions), the tool call by a
// 64-bit hash (two halves: 12 bytes, no padding).
type member struct {
	group, lo, hi uint32
}

func newMember(group uint32, tc uint64) member { return member{group, uint32(tc), uint32(tc >> 32)} }

func cmpMember(a, b member) int {
	switch {
	case a.group != b.group:
		return cmpUint32(a.group, b.group)
	case a.hi != b.hi:
		return cmpUint32(a.hi, b.hi)
	}
	return cmpUint32(a.lo, b.lo)
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// groupTable numbers the distinct turn (or session) values of the
// subagent-task messages: TEXT ids (all of Kandev's) in an open-addressing
// index of 4-byte slots over their strings (a Go map of strings took ~25 MB
// for the 500,000 turns and sessions of the large store, this 4), any other
// value (NULL, a BLOB) in a small side table.
type groupTable struct {
	slots  []uint32 // index+1 of a TEXT group, 0 when free; len a power of 2
	text   int      // TEXT groups
	seed   maphash.Seed
	other  map[sqlKey]uint32
	values idStore // by index: the id as the evidence prints it
	odd    map[uint32]sqlValue
	// The TEXT group id last found (lastOK): rows of one turn or session
	// mostly follow each other in a table, so most ids are found here
	// without hashing. Only id, which the pass alone calls, reads it: a
	// finished table stays read-only (Fanout).
	last   string
	lastID uint32
	lastOK bool
}

// sqlKey is a map key for an id that is not TEXT.
type sqlKey struct {
	tag byte
	s   string
	n   uint64
}

func newGroupTable() groupTable {
	return groupTable{slots: make([]uint32, 1024), seed: passSeeds[0], other: map[sqlKey]uint32{}, odd: map[uint32]sqlValue{}}
}

func (t *groupTable) id(v sqlValue) uint32 {
	if v.tag == tagText && t.lastOK && v.s == t.last {
		return t.lastID
	}
	i, ok := t.lookup(v)
	if !ok {
		i = t.add(v)
	}
	if v.tag == tagText {
		t.last, t.lastID, t.lastOK = t.values.at(i), i, true
	}
	return i
}

// add numbers a new group.
func (t *groupTable) add(v sqlValue) uint32 {
	i := uint32(t.values.len())
	v.s = t.values.add(v.s)
	if v.tag == tagText {
		if 2*(t.text+1) > len(t.slots) {
			t.grow()
		}
		t.place(v.s, i)
		t.text++
	} else {
		t.other[sqlKey{v.tag, v.s, v.n}] = i
		t.odd[i] = v
	}
	return i
}

// place puts TEXT group i (of string s) in its slot.
func (t *groupTable) place(s string, i uint32) {
	mask := uint64(len(t.slots) - 1)
	for h := maphash.String(t.seed, s) & mask; ; h = (h + 1) & mask {
		if t.slots[h] == 0 {
			t.slots[h] = i + 1
			return
		}
	}
}

func (t *groupTable) grow() {
	old := t.slots
	t.slots = make([]uint32, 2*len(old))
	for _, x := range old {
		if x != 0 {
			t.place(t.values.at(x-1), x-1)
		}
	}
}

func (t *groupTable) lookup(v sqlValue) (uint32, bool) {
	if v.tag == tagText {
		mask := uint64(len(t.slots) - 1)
		for h := maphash.String(t.seed, v.s) & mask; ; h = (h + 1) & mask {
			x := t.slots[h]
			if x == 0 {
				return 0, false
			}
			if t.values.at(x-1) == v.s { // slots hold TEXT groups only
				return x - 1, true
			}
		}
	}
	i, ok := t.other[sqlKey{v.tag, v.s, v.n}]
	return i, ok
}

// value is the group's SQL value.
func (t *groupTable) value(i uint32) sqlValue {
	if v, ok := t.odd[i]; ok {
		return v
	}
	return sqlValue{tag: tagText, s: t.values.at(i)}
}

// healthRow is a subagent-task message at or after capture_since: its
// (session, tool call) key, for writer health and the shortfall.
type healthRow struct {
	key   key128
	sess  uint32 // in the session table (evidence rows only)
	flags uint8
}

const (
	hrExpected = 1 << iota // session, task and tool call not empty: an expected key
	hrEvidence             // a tool call id that is text and not empty: the evidence's
)

type msgPass struct {
	since          string // capture_since as kx_instant renders it ("" = none)
	sinceAt        time.Time
	subagents      bool
	health         bool
	h              [2]maphash.Hash
	turns, sess    groupTable
	turnTC, sessTC list[member] // evidence: distinct tool calls per turn / session
	recent         list[healthRow]
	malformed      int64
	// From the subagent rows.
	sinceRows     int64
	sinceKeys     list[key128]
	special       []special
	lastObserved  time.Time
	turnOnly      []member // tool calls of rows of a message turn that no message of the turn names
	sessOnly      []member
	lexSince      string          // recentBound as a string
	odd           bool            // some message's metadata is not TEXT
	row           []any           // raw's scratch row
	missingKeys   map[uint32]bool // sessions whose shortfall ids are read back
	missingGroups []uint32
	// The groups of turns and sessions of the messages (sealMessages): the
	// evidence's; the fan-out adds those of subagent rows after them.
	msgTurns, msgSess uint32
	fan               *fanAcc // nil unless the pass counts the fan-out
}

// special is a subagent row at or after capture_since whose (session,
// tool call) pair is not plain: the key of its concatenation, and, when
// neither part holds a ':', the key of the plain pair that concatenates
// alike.
type special struct {
	concat, asText key128
	hasText        bool
}

type missingKey struct {
	turn uint64
	sess uint32
	tc   uint64
}

func newMsgPass(since *time.Time, subagents, health, fanout bool) *msgPass {
	p := &msgPass{subagents: subagents, health: health,
		turns: newGroupTable(), sess: newGroupTable()}
	if fanout && subagents {
		p.fan = &fanAcc{}
	}
	p.h[0].SetSeed(passSeeds[0])
	p.h[1].SetSeed(passSeeds[1])
	if since != nil {
		p.sinceAt = since.UTC()
		p.since = since.UTC().Format(instantLayout)
		p.lexSince, _ = p.recentBound().(string)
	}
	return p
}

// release frees the pass's lists (they are kept outside the Go heap):
// once its evidence and counts are read.
func (p *msgPass) release() {
	p.turnTC.Free()
	p.sessTC.Free()
	p.recent.Free()
	p.sinceKeys.Free()
	if p.fan != nil {
		p.fan.calls.Free()
	}
}

// recentBound is the lexical lower bound of the created_at of a message at
// or after capture_since (msgPassMessages): the date of capture_since minus
// a day, or NULL without capture_since.
func (p *msgPass) recentBound() any {
	if p.since == "" {
		return nil
	}
	t, err := time.Parse(instantLayout, p.since)
	if err != nil {
		return nil
	}
	return t.Add(-24 * time.Hour).Format("2006-01-02")
}

// atOrAfter is kx_instant(v) >= the pass's since: v a stored timestamp at
// or after capture_since. kx_instant renders an instant of the years
// 0001-9999 (all ParseStamp accepts) in a fixed-width form, so comparing
// the instants is comparing its texts.
func (p *msgPass) atOrAfter(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok || p.since == "" {
		return time.Time{}, false
	}
	t, _, err := instant.ParseStamp(s)
	if err != nil {
		return time.Time{}, false
	}
	return t, !t.Before(p.sinceAt)
}

// raw takes one row of msgPassRaw: the JSON work of msgPassMessages, done
// here, then message.
func (p *msgPass) raw(row []any) error {
	var ok int64
	var tc any
	switch meta := row[4].(type) {
	case nil: // over the read bound: malformed
	case string:
		if meta == "" || meta == "null" {
			return nil // no kind, and not malformed
		}
		cand := strings.Contains(meta, "subagent_task") || strings.IndexByte(meta, '\\') >= 0
		if !cand {
			// Only the malformed count needs its validity, and only at or
			// after capture_since (the lexical test is the exact
			// pre-filter of recentBound).
			created, isText := row[3].(string)
			if p.since == "" || !isText || created < p.lexSince || jsonValid(meta) {
				return nil
			}
			break // malformed
		}
		valid, kind, v := validSubagentTask(meta)
		if !valid {
			break // malformed
		}
		if !kind {
			return nil
		}
		ok, tc = 1, v
	default:
		// A BLOB or a number: SQLite's JSON functions decide (ReadMessages).
		p.odd = true
		return nil
	}
	var over int64
	for i := 0; i < 3; i++ {
		if b, isBlob := row[i].([]byte); isBlob && string(b) == overlongBytes {
			over |= 1 << i
			row[i] = nil
		}
	}
	p.row = append(p.row[:0], row[0], row[1], row[2], over, row[3], ok, tc)
	err := p.message(p.row)
	clear(p.row) // its values may be borrowed (rawStreamBorrowed)
	return err
}

// message takes one row of msgPassMessages.
func (p *msgPass) message(row []any) error {
	over, _ := row[3].(int64)
	_, recent := p.atOrAfter(row[4])
	ok, _ := row[5].(int64)
	tc := classifyValue(row[6])
	p.addMessage(classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2]), over, recent, ok == 1, tc, tc.tag == tagText && tc.s != "")
	return nil
}

// addMessage takes one message the pass keeps: malformed (ok false) or a
// subagent-task message; recent says it is at or after capture_since;
// evidence that its tool_call_id counts as the evidence's (a non-empty
// string).
func (p *msgPass) addMessage(turn, sess, task sqlValue, over int64, recent, ok bool, tc sqlValue, evidence bool) {
	if !ok {
		if recent {
			p.malformed++
		}
		return
	}
	var si uint32
	if evidence {
		var ti uint32
		ti, si = p.turns.id(turn), p.sess.id(sess)
		h := p.hash64(tc)
		p.turnTC.Append(newMember(ti, h))
		p.sessTC.Append(newMember(si, h))
	}
	if !recent {
		return
	}
	// Writer health compares the ids as stored: one over the read bound is
	// not NULL there.
	hsess, htask := sess, task
	if over&2 != 0 {
		hsess = sqlValue{tag: tagOverlong, n: 1}
	}
	if over&4 != 0 {
		htask = sqlValue{tag: tagOverlong, n: 1}
	}
	r := healthRow{key: p.pairKey(hsess, tc), sess: si}
	if hsess.nonEmpty() && htask.nonEmpty() && tc.nonEmpty() {
		r.flags |= hrExpected
	}
	if evidence && sess.nonEmpty() && task.nonEmpty() {
		r.flags |= hrEvidence
	}
	p.recent.Append(r)
}

// sealMessages sorts the evidence sets: distinct tool calls per group.
func (p *msgPass) sealMessages() {
	p.msgTurns, p.msgSess = uint32(p.turns.values.len()), uint32(p.sess.values.len())
	bucketSort(p.turnTC.All(), int(p.msgTurns), memberGroup, cmpMember)
	p.turnTC.Truncate(len(slices.Compact(p.turnTC.All())))
	bucketSort(p.sessTC.All(), int(p.msgSess), memberGroup, cmpMember)
	p.sessTC.Truncate(len(slices.Compact(p.sessTC.All())))
}

// subagent takes one row of msgPassSubagents (or msgPassSubagentsFanout:
// its ids are bounded as the fan-out's).
func (p *msgPass) subagent(row []any) error {
	obs, since := p.atOrAfter(row[3])
	turn, sess, tc := classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2])
	var g rowGroups
	if p.fan != nil {
		class, _ := row[4].(int64)
		g = p.fanRow(turn, sess, tc, class)
	}
	p.addSubagentIn(turn, sess, tc, since, obs, g)
	return nil
}

// addSubagent takes one subagent row; since says it was observed at or
// after capture_since, at observed.
func (p *msgPass) addSubagent(turn, sess, tc sqlValue, since bool, observed time.Time) {
	p.addSubagentIn(turn, sess, tc, since, observed, rowGroups{})
}

// rowGroups are a subagent row's turn and session groups (noGroup: none)
// and its tool call's hash (0: not computed), when the fan-out has already
// found them (ok) for the same values.
type rowGroups struct {
	turn, sess uint32
	h          uint64
	ok         bool
	kept       bool // the fan-out kept the row's tool call (fanAcc.calls)
}

// addSubagentIn is addSubagent with the row's groups when known.
func (p *msgPass) addSubagentIn(turn, sess, tc sqlValue, since bool, observed time.Time, g rowGroups) {
	if since {
		p.sinceRows++
		if observed.After(p.lastObserved) {
			p.lastObserved = observed
		}
		p.sinceKeys.Append(p.pairKey(sess, tc))
		if !sess.null() && !tc.null() && !plainPair(sess, tc) {
			// A concatenation that a plain pair's may equal, or another odd
			// one's: counted in finish.
			r := special{concat: p.hashConcat(sess, tc)}
			if !strings.Contains(sess.s, ":") && !strings.Contains(tc.s, ":") {
				r.asText, r.hasText = p.pairKey(sqlValue{tag: tagText, s: sess.s}, sqlValue{tag: tagText, s: tc.s}), true
			}
			p.special = append(p.special, r)
		}
	}
	// COALESCE(tool_call_id, '') <> '' (the bounded value: one over the
	// bound is NULL there and counts nowhere).
	if !tc.nonEmpty() {
		return
	}
	if g.kept {
		// The fan-out kept the row's tool call with its groups: finish
		// looks the call up in the messages' sets then, by a merge of the
		// two sorted lists (finishFanout), instead of a search per row.
		return
	}
	// Only the messages' groups (the fan-out adds others after them).
	ti, ts, h := g.turn, g.sess, g.h
	if !g.ok {
		ti, ts = noGroup, noGroup
		if i, ok := p.turns.lookup(turn); ok && !turn.null() {
			ti = i
		}
		if i, ok := p.sess.lookup(sess); ok && !sess.null() {
			ts = i
		}
	}
	if ti >= p.msgTurns && ts >= p.msgSess {
		return
	}
	if h == 0 {
		h = p.hash64(tc)
	}
	p.evidenceOnly(ti, ts, h)
}

// evidenceOnly notes a subagent row's tool call (hash h) of turn group ti
// and session group ts (noGroup: none) when no message of the group names
// it; only the messages' groups count.
func (p *msgPass) evidenceOnly(ti, ts uint32, h uint64) {
	if ti < p.msgTurns {
		m := newMember(ti, h)
		if _, found := slices.BinarySearchFunc(p.turnTC.All(), m, cmpMember); !found {
			p.turnOnly = append(p.turnOnly, m)
		}
	}
	if ts < p.msgSess {
		m := newMember(ts, h)
		if _, found := slices.BinarySearchFunc(p.sessTC.All(), m, cmpMember); !found {
			p.sessOnly = append(p.sessOnly, m)
		}
	}
}

// finish computes the counts and fills the evidence.
func (p *msgPass) finish(ev *MessageEvidence) models.HealthCounts {
	var c models.HealthCounts
	c.MalformedMetadata = p.malformed
	bucketSort(p.sinceKeys.All(), keyBuckets, keyBucket, cmpKey)
	p.sinceKeys.Truncate(len(slices.Compact(p.sinceKeys.All())))
	sinceKeys, recent := p.sinceKeys.All(), p.recent.All()
	inSince := func(k key128) bool {
		_, ok := slices.BinarySearchFunc(sinceKeys, k, cmpKey)
		return ok
	}
	if p.health {
		c.Observed = int64(len(sinceKeys))
		// collisions = rows − COUNT(DISTINCT session || ':' || tool call):
		// distinct plain pairs concatenate to distinct texts, which no other
		// pair's concatenation equals unless it is a plain pair's in
		// another storage class (asText); the rest are counted apart.
		var concat int64
		for _, k := range sinceKeys {
			concat += int64(k[1] & 1)
		}
		var odd []key128
		for _, r := range p.special {
			if r.hasText && inSince(r.asText) {
				continue
			}
			odd = append(odd, r.concat)
		}
		slices.SortFunc(odd, cmpKey)
		concat += int64(len(slices.Compact(odd)))
		c.Collisions = p.sinceRows - concat
		p.special = nil
		if !p.lastObserved.IsZero() {
			// As health reads MAX(kx_instant(observed_at)) back.
			t, err := time.Parse(time.RFC3339Nano, p.lastObserved.UTC().Format(instantLayout))
			if err == nil {
				c.LastObserved = &t
			}
		}
		// The messages' keys: accounted (any), expected (flagged); both
		// lists sorted, then merged.
		bucketSort(recent, keyBuckets, func(r healthRow) uint32 { return keyBucket(r.key) },
			func(a, b healthRow) int { return cmpKey(a.key, b.key) })
		j := 0 // in sinceKeys
		for i := 0; i < len(recent); {
			k, expected := recent[i].key, false
			for ; i < len(recent) && recent[i].key == k; i++ {
				expected = expected || recent[i].flags&hrExpected != 0
			}
			for ; j < len(sinceKeys) && cmpKey(sinceKeys[j], k) < 0; j++ {
				c.Excess++ // observed, never accounted
			}
			observed := j < len(sinceKeys) && sinceKeys[j] == k
			if observed {
				j++
			}
			if expected {
				c.Expected++
				if !observed {
					c.Shortfall++
				}
			}
		}
		c.Excess += int64(len(sinceKeys) - j)
	}
	// The shortfall's keys: evidence messages at or after capture_since
	// with no row observed at or after it.
	if p.since != "" {
		p.missingKeys = map[uint32]bool{}
		j := 0 // in sinceKeys, when recent is sorted too (health): a merge
		for _, r := range recent {
			if r.flags&hrEvidence == 0 {
				continue
			}
			if p.subagents && p.health {
				for ; j < len(sinceKeys) && cmpKey(sinceKeys[j], r.key) < 0; j++ {
				}
				if j < len(sinceKeys) && sinceKeys[j] == r.key {
					continue
				}
			} else if p.subagents && inSince(r.key) {
				continue
			}
			if !p.missingKeys[r.sess] {
				p.missingKeys[r.sess] = true
				p.missingGroups = append(p.missingGroups, r.sess)
			}
		}
	}
	// The keys are not needed any more (the rows' keys only to read a
	// shortfall back, readMissing): let them go before the evidence maps
	// are built (on the 1M-row store the two held ~40 MB).
	p.recent.Free()
	if len(p.missingKeys) == 0 {
		p.sinceKeys.Free()
	}
	sinceKeys, recent = nil, nil // freed, or read again through p.sinceKeys
	// Evidence: per turn and session, the distinct tool calls of the
	// messages, and with those of the rows that no message names.
	expected := func(l []member, t *groupTable, only []member, groups uint32) ([]int64, []int64) {
		exp := make([]int64, groups)
		for _, m := range l {
			exp[m.group]++
		}
		union := slices.Clone(exp)
		slices.SortFunc(only, cmpMember)
		for _, m := range slices.Compact(only) {
			union[m.group]++
		}
		return exp, union
	}
	put := func(dst map[string]models.MessageCounts, t *groupTable, exp, union []int64, groups uint32) {
		// SQL's group order decides which of two groups that print alike
		// (NULL and '', a TEXT and a BLOB) the map keeps: the later one.
		var low, high []uint32 // groups SQL sorts before and after TEXT
		for i := range groups {
			if v, ok := t.odd[i]; ok {
				if v.tag == tagBlob {
					high = append(high, i)
				} else {
					low = append(low, i)
				}
			}
		}
		byOrder := func(a, b uint32) int { return sqlOrder(t.value(a), t.value(b)) }
		slices.SortFunc(low, byOrder)
		slices.SortFunc(high, byOrder)
		set := func(i uint32) {
			dst[t.values.at(i)] = models.MessageCounts{Expected: exp[i], LowerBound: union[i]}
		}
		for _, i := range low {
			set(i)
		}
		for i := range groups {
			if _, ok := t.odd[i]; !ok {
				set(i)
			}
		}
		for _, i := range high {
			set(i)
		}
	}
	// The fan-out first: it adds to turnOnly and sessOnly the tool calls
	// it kept that no message of the group names.
	ev.Fanout = p.finishFanout() // it keeps the tables' indexes
	if ev.Fanout == nil {
		p.turns.slots, p.turns.other = nil, nil // only the values are needed now
	}
	te, tu := expected(p.turnTC.All(), &p.turns, p.turnOnly, p.msgTurns)
	se, su := expected(p.sessTC.All(), &p.sess, p.sessOnly, p.msgSess)
	p.turnTC.Free()
	p.sessTC.Free()
	p.turnOnly, p.sessOnly = nil, nil
	ev.Turns = make(map[string]models.MessageCounts, p.msgTurns)
	ev.Sessions = make(map[string]models.MessageCounts, p.msgSess)
	put(ev.Turns, &p.turns, te, tu, p.msgTurns)
	put(ev.Sessions, &p.sess, se, su, p.msgSess)
	return c
}

// sqlOrder is SQLite's order of values: NULL, numbers, TEXT, BLOB.
func sqlOrder(a, b sqlValue) int {
	rank := func(v sqlValue) int {
		switch v.tag {
		case tagNull:
			return 0
		case tagNum:
			return 1
		case tagText:
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return strings.Compare(a.s, b.s)
}

// readMissing reads the shortfall's rows back: the subagent-task messages
// of the sessions concerned, at or after capture_since, whose key has no
// row observed at or after it (the same test as the pass), distinct.
func (p *msgPass) readMissing(ctx context.Context, s *sqliteSnapshot, ev *MessageEvidence) error {
	type out struct {
		turn, sess sqlValue
		tc         string
	}
	seen := map[missingKey]bool{}
	var rows []out
	for start := 0; start < len(p.missingGroups); start += 500 {
		batch := p.missingGroups[start:min(start+500, len(p.missingGroups))]
		args := make([]any, len(batch))
		for i, g := range batch {
			v := p.sess.value(g)
			if v.tag == tagBlob {
				args[i] = []byte(v.s)
			} else {
				args[i] = v.s
			}
		}
		q := strings.Replace(msgPassMessages, "/*sessions*/", `AND m.task_session_id IN (`+placeholders(len(args), "?")+`)`, 1)
		args = append([]any{p.recentBound()}, args...)
		err := s.rawStream(ctx, "shortfall over task_session_messages", q, func(row []any) error {
			if ok, _ := row[5].(int64); ok == 0 {
				return nil
			}
			if _, ok := p.atOrAfter(row[4]); !ok {
				return nil
			}
			turn, sess, task, tc := classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2]), classifyValue(row[6])
			if tc.tag != tagText || tc.s == "" || !sess.nonEmpty() || !task.nonEmpty() {
				return nil
			}
			si, ok := p.sess.lookup(sess)
			if !ok || !p.missingKeys[si] {
				return nil
			}
			if p.subagents {
				if _, found := slices.BinarySearchFunc(p.sinceKeys.All(), p.pairKey(sess, tc), cmpKey); found {
					return nil
				}
			}
			k := missingKey{p.hashPair(turn, turn)[0], si, p.hash64(tc)}
			if !seen[k] {
				seen[k] = true
				rows = append(rows, out{turn, sess, tc.s})
			}
			return nil
		}, args...)
		if err != nil {
			return err
		}
	}
	for _, r := range rows {
		ev.Missing = append(ev.Missing, models.MissingRow{TurnID: r.turn.s, SessionID: r.sess.s, ToolCallID: r.tc})
	}
	shortfallCounts(ev)
	return nil
}

// shortfallCounts adds the shortfall per turn and per session: distinct
// tool calls of ev.Missing.
func shortfallCounts(ev *MessageEvidence) {
	turnSeen, sessSeen := map[[2]string]bool{}, map[[2]string]bool{}
	for _, m := range ev.Missing {
		if k := [2]string{m.TurnID, m.ToolCallID}; !turnSeen[k] {
			turnSeen[k] = true
			c := ev.Turns[m.TurnID]
			c.Shortfall++
			ev.Turns[m.TurnID] = c
		}
		if k := [2]string{m.SessionID, m.ToolCallID}; !sessSeen[k] {
			sessSeen[k] = true
			c := ev.Sessions[m.SessionID]
			c.Shortfall++
			ev.Sessions[m.SessionID] = c
		}
	}
}
