package evidence

import (
	"encoding/hex"
	"fmt"
	"math"

	"github.com/kandev/kandev-extract/models"
)

// The per-turn and per-session fan-out, counted by the message pass.
//
// The scans of task_session_turns and task_sessions give each row five
// counts over the subagent rows grouped by turn_id or task_session_id
// (scans.fanoutJoin): subagents_observed (rows), subagents_live and
// subagents_backfill (rows by source), distinct_tool_calls (distinct tc)
// and live_backfill_overlap (distinct live tc + distinct backfill tc −
// distinct tc, which a tool call of another source makes negative), where
// tc is the tool_call_id when it is not '' and within the 1 MiB key bound,
// else NULL, and a key over the bound or NULL groups nothing. In SQL that
// is one more GROUP BY over every subagent row per scan. The message pass
// already streams every subagent row (msgPassSubagents, pgPassSubagents),
// with the driver's types: with source's class added (scans.FanoutSource,
// evaluated by the store itself), it counts the same in the process.
//
//   - Groups are the pass's own tables of turn and session values
//     (groupTable: exact, typed — a TEXT and a BLOB of the same bytes are
//     two groups, as in GROUP BY under BINARY); the groups of messages come
//     first, those of subagent rows only after them (msgTurns, msgSess),
//     and the evidence reads only the former.
//   - Distinct tool calls are counted per group on the 64-bit typed hash of
//     the value (hash64), the pass's documented approximation for a tool
//     call within one turn or session.
//   - A scanned row finds its group by its id as the join compares it
//     (fanoutKey): the SQL hands over a TEXT id within the column's cap as
//     the id cell itself, any other id within the key bound through one
//     more column (fanoutKeyExpr).
//
// The plan (extract.ScanPlan) allows it only where Go's equality is the
// join's: SQLite key columns with TEXT affinity and BINARY collation,
// PostgreSQL text or varchar under one deterministic collation. Otherwise,
// and when the pass did not count (no task_session_messages table, or more
// than 2^31 groups or 2^32 rows), the scan keeps the SQL join.

// FanoutCounts are the five fan-out columns of a turn or a session.
type FanoutCounts struct {
	Observed, Live, Backfill, Distinct, Overlap int64
}

// Fanout is the per-turn and per-session fan-out of one snapshot, from the
// message pass (ReadMessagesAndFanout). It is read-only once made: the
// turns and sessions scans may read it at once.
type Fanout struct {
	turns, sessions fanoutSide
}

type fanoutSide struct {
	groups groupTable
	counts []groupCounts // by group; a group without subagent rows has none
}

// Turn and Session are the counts of a turn or session id (TEXT).
func (f *Fanout) Turn(id string) FanoutCounts {
	return f.turns.get(sqlValue{tag: tagText, s: id})
}

func (f *Fanout) Session(id string) FanoutCounts {
	return f.sessions.get(sqlValue{tag: tagText, s: id})
}

func (s *fanoutSide) get(v sqlValue) FanoutCounts {
	i, ok := s.groups.lookup(v)
	if !ok || int(i) >= len(s.counts) {
		return FanoutCounts{}
	}
	c := s.counts[i]
	return FanoutCounts{Observed: int64(c.rows), Live: int64(c.live), Backfill: int64(c.backfill),
		Distinct: int64(c.distinct), Overlap: int64(c.overlap)}
}

// groupCounts are one group's counts (32 bits: the pass gives up counting
// beyond, see fanAcc.full).
type groupCounts struct {
	rows, live, backfill, distinct uint32
	overlap                        int32
}

// fanCall is a subagent row with a tool call: its 64-bit hash and its turn
// and session groups (noGroup: none), the turn's top bit set for a live
// row, the session's for a backfill row.
type fanCall struct {
	tc         uint64
	turn, sess uint32
}

const (
	groupMask = 1<<31 - 1
	noGroup   = groupMask
	flagBit   = 1 << 31
)

// fanAcc collects the fan-out during the pass.
type fanAcc struct {
	turnN, sessN []groupCounts
	calls        list[fanCall]
	rows         uint64
	full         bool // too many rows or groups for 32 bits: not counted
}

// Source classes (scans.FanoutSource).
const (
	sourceLive     = 1
	sourceBackfill = 2
)

// fanoutRowLimit is the number of subagent rows at which the fan-out stops
// counting (its counts are 32 bits); a variable so a test can reach it.
var fanoutRowLimit uint64 = math.MaxUint32

// fanRow counts one subagent row: its turn, session and tool call bounded
// as the join bounds them (NULL over 1 MiB), and its source class. It
// returns the row's groups for the evidence (addSubagentIn).
func (p *msgPass) fanRow(turn, sess, tc sqlValue, class int64) rowGroups {
	f := p.fan
	if f == nil || f.full {
		return rowGroups{}
	}
	if f.rows++; f.rows >= fanoutRowLimit || p.turns.values.len() >= noGroup-1 || p.sess.values.len() >= noGroup-1 {
		f.full = true
		p.unkeepCalls()
		return rowGroups{}
	}
	ti, si := uint32(noGroup), uint32(noGroup)
	if !turn.null() {
		ti = p.turns.id(turn)
		f.turnN = countRow(f.turnN, ti, class)
	}
	if !sess.null() {
		si = p.sess.id(sess)
		f.sessN = countRow(f.sessN, si, class)
	}
	g := rowGroups{turn: ti, sess: si, ok: true}
	if (ti == noGroup && si == noGroup) || !tc.nonEmpty() {
		return g
	}
	g.h = p.hash64(tc)
	c := fanCall{tc: g.h, turn: ti, sess: si}
	switch class {
	case sourceLive:
		c.turn |= flagBit
	case sourceBackfill:
		c.sess |= flagBit
	}
	f.calls.Append(c)
	g.kept = true
	return g
}

func countRow(n []groupCounts, g uint32, class int64) []groupCounts {
	for int(g) >= len(n) {
		n = append(n, groupCounts{})
	}
	c := &n[g]
	c.rows++
	switch class {
	case sourceLive:
		c.live++
	case sourceBackfill:
		c.backfill++
	}
	return n
}

// unkeepCalls gives up the kept calls when the fan-out stops counting: the
// evidence's search (addSubagentIn) is done for each of them now.
func (p *msgPass) unkeepCalls() {
	for _, c := range p.fan.calls.All() {
		p.evidenceOnly(c.turn&groupMask, c.sess&groupMask, c.tc)
	}
	p.fan.calls.Free()
}

// finishFanout counts the distinct tool calls per group (the calls sorted
// by group and hash, once per side) and returns the fan-out, or nil when
// it was not counted. On the way it adds to turnOnly and sessOnly the
// calls of the messages' groups that no message of the group names (the
// evidence's part of addSubagentIn for the kept calls): a merge with the
// sorted turnTC and sessTC.
func (p *msgPass) finishFanout() *Fanout {
	f := p.fan
	p.fan = nil
	if f == nil || f.full {
		return nil
	}
	defer f.calls.Free()
	calls := f.calls.All()
	distinct := func(n []groupCounts, group func(c fanCall) uint32, named []member, groups uint32, only *[]member) {
		j := 0 // in named, sorted as the calls are: by group, then hash
		// Buckets by group, the calls without one (noGroup) last.
		all := uint32(len(n))
		bucketSort(calls, int(all)+1, func(c fanCall) uint32 { return min(group(c), all) }, func(a, b fanCall) int {
			if ga, gb := group(a), group(b); ga != gb {
				return cmpUint32(ga, gb)
			}
			switch {
			case a.tc < b.tc:
				return -1
			case a.tc > b.tc:
				return 1
			}
			return 0
		})
		for i := 0; i < len(calls); {
			g, h := group(calls[i]), calls[i].tc
			var live, backfill int32
			k := i
			for ; k < len(calls) && group(calls[k]) == g && calls[k].tc == h; k++ {
				if calls[k].turn&flagBit != 0 {
					live = 1
				}
				if calls[k].sess&flagBit != 0 {
					backfill = 1
				}
			}
			if g != noGroup {
				n[g].distinct++
				n[g].overlap += live + backfill - 1
			}
			if g < groups {
				m := newMember(g, h)
				for ; j < len(named) && cmpMember(named[j], m) < 0; j++ {
				}
				if j == len(named) || named[j] != m {
					*only = append(*only, m)
				}
			}
			i = k
		}
	}
	distinct(f.turnN, func(c fanCall) uint32 { return c.turn & groupMask }, p.turnTC.All(), p.msgTurns, &p.turnOnly)
	distinct(f.sessN, func(c fanCall) uint32 { return c.sess & groupMask }, p.sessTC.All(), p.msgSess, &p.sessOnly)
	return &Fanout{turns: fanoutSide{groups: p.turns, counts: f.turnN}, sessions: fanoutSide{groups: p.sess, counts: f.sessN}}
}

// The scans' side: a turns or sessions scan reads each row's key
// (FanoutKeyExpr) and looks its counts up (Row); extract.ScanPlan.ScanSpec
// renders the scan.

// FanoutKeyExpr is the column a turns or sessions scan adds, in dialect d,
// when its fan-out comes from the pass (Fanout.Row reads it; the scan drops
// it before the row is handed on): NULL when the id cell itself is the key (a
// TEXT id within the column's cap idCap, or an id with no key: NULL or
// over the key bound), else the id as the join compares it, 't' and its
// text or 'b' and the hex of its bytes. (A number, which a TEXT column
// never holds, would be compared as its text: the join gives the id TEXT
// affinity.)
func FanoutKeyExpr(d models.Dialect, idCap int) string {
	if d == models.DialectPostgres {
		return fmt.Sprintf(`CASE WHEN octet_length(t.id) > %d AND octet_length(t.id) <= %d THEN 't' || t.id END`, idCap, models.SQLitePrefixBytes)
	}
	return fmt.Sprintf(`CASE WHEN typeof(t.id) = 'text' THEN CASE WHEN octet_length(t.id) > %[1]d AND octet_length(t.id) <= %[2]d THEN 't' || t.id END `+
		`WHEN typeof(t.id) = 'blob' THEN CASE WHEN octet_length(t.id) <= %[2]d THEN 'b' || hex(t.id) END `+
		`WHEN t.id IS NOT NULL THEN 't' || t.id END`, idCap, models.SQLitePrefixBytes)
}

// fanoutKey is the key of a scanned row: from the key column when it is
// set, else from the id cell (a string: a TEXT id within the cap; nil or a
// models.Truncated: no key).
func fanoutKey(key, id any) (sqlValue, bool, error) {
	switch k := key.(type) {
	case nil:
		if s, ok := id.(string); ok {
			return sqlValue{tag: tagText, s: s}, true, nil
		}
		return sqlValue{}, false, nil
	case string:
		if len(k) > 0 && k[0] == 't' {
			return sqlValue{tag: tagText, s: k[1:]}, true, nil
		}
		if len(k) > 0 && k[0] == 'b' {
			b, err := hex.DecodeString(k[1:])
			if err == nil {
				return sqlValue{tag: tagBlob, s: string(b)}, true, nil
			}
		}
	}
	return sqlValue{}, false, fmt.Errorf("fan-out key column: unexpected value %T", key)
}

// Row is the fan-out of a row of the scan of source (models.SourceTurns
// or models.SourceSessions) that added FanoutKeyExpr's column: from its
// key cell and its id cell.
func (f *Fanout) Row(source string, key, id any) (FanoutCounts, error) {
	side := &f.sessions
	if source == models.SourceTurns {
		side = &f.turns
	}
	v, ok, err := fanoutKey(key, id)
	if err != nil || !ok {
		return FanoutCounts{}, err
	}
	return side.get(v), nil
}
