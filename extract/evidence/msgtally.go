package evidence

import (
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
	"github.com/kandev/kandev-extract/internal/instant"
	"github.com/kandev/kandev-extract/models"
)

// The message pass's state: what it keeps of each message and subagent
// row, and how it turns them into the evidence and writer-health counts
// (msgpass.go reads the rows, msgkeys.go keys them).

// healthRow is a subagent-task message at or after capture_since: its
// (session, tool call) key, for writer health and the shortfall.
type healthRow struct {
	key   hashkey.Key
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
	sinceKeys     list[hashkey.Key]
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
	concat, asText hashkey.Key
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
	p.h[0].SetSeed(hashkey.Seeds[0])
	p.h[1].SetSeed(hashkey.Seeds[1])
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
	clear(p.row) // its values may be borrowed (Snapshot.Stream)
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
	bucketSort(p.sinceKeys.All(), keyBuckets, keyBucket, hashkey.Compare)
	p.sinceKeys.Truncate(len(slices.Compact(p.sinceKeys.All())))
	sinceKeys, recent := p.sinceKeys.All(), p.recent.All()
	inSince := func(k hashkey.Key) bool {
		_, ok := slices.BinarySearchFunc(sinceKeys, k, hashkey.Compare)
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
		var odd []hashkey.Key
		for _, r := range p.special {
			if r.hasText && inSince(r.asText) {
				continue
			}
			odd = append(odd, r.concat)
		}
		slices.SortFunc(odd, hashkey.Compare)
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
			func(a, b healthRow) int { return hashkey.Compare(a.key, b.key) })
		j := 0 // in sinceKeys
		for i := 0; i < len(recent); {
			k, expected := recent[i].key, false
			for ; i < len(recent) && recent[i].key == k; i++ {
				expected = expected || recent[i].flags&hrExpected != 0
			}
			for ; j < len(sinceKeys) && hashkey.Compare(sinceKeys[j], k) < 0; j++ {
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
				for ; j < len(sinceKeys) && hashkey.Compare(sinceKeys[j], r.key) < 0; j++ {
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
