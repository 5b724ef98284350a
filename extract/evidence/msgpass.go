package evidence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/extract/scans"
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
// with is in oracle_test.go. snap is one of extract's snapshots (a
// Snapshot).
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
func ReadMessagesAndFanout(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool, healthSince *time.Time, plan FanoutPlan) (MessageEvidence, *models.HealthCounts, error) {
	fanout := subagents && plan != nil && (plan.PassFanout(models.SourceTurns) || plan.PassFanout(models.SourceSessions))
	return readMessages(ctx, snap, since, subagents, healthSince, fanout)
}

// FanoutPlan says for which scans the pass counts the fan-out:
// extract.ScanPlan.
type FanoutPlan interface {
	// PassFanout reports whether the scan of source (models.SourceTurns,
	// models.SourceSessions) takes its fan-out from the pass.
	PassFanout(source string) bool
}

func readMessages(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool, healthSince *time.Time, fanout bool) (MessageEvidence, *models.HealthCounts, error) {
	health := healthSince != nil
	if health && (since == nil || !since.Equal(*healthSince) || !subagents) {
		// Writer health runs only where capture_since is an instant and the
		// table exists (transform.HealthPlan), and is measured from it.
		return MessageEvidence{}, nil, errors.New("message pass: writer health is measured from capture_since, with a subagent table")
	}
	s, ok := snap.(Snapshot)
	if !ok {
		return MessageEvidence{}, nil, fmt.Errorf("message pass: unsupported snapshot %T", snap)
	}
	pg, isPG := s.(PostgresSnapshot)
	if s.Dialect() == models.DialectPostgres && !isPG {
		return MessageEvidence{}, nil, fmt.Errorf("message pass: unsupported snapshot %T", snap)
	}
	ev := MessageEvidence{Turns: map[string]models.MessageCounts{}, Sessions: map[string]models.MessageCounts{}}
	if health {
		if err := checkHealthSchema(ctx, s, s.Location()); err != nil {
			return ev, nil, err
		}
	}
	okTable, err := s.TableExists(ctx, "task_session_messages")
	if err != nil || !okTable {
		if err == nil && health {
			err = &models.MissingTableError{Source: s.Location(), Table: "task_session_messages"}
		}
		return ev, nil, err
	}
	cols, err := s.Columns(ctx, "task_session_messages")
	if err != nil {
		return ev, nil, err
	}
	if err := sqlkit.RequireColumns(s.Location(), "task_session_messages", cols, "id", "task_session_id", "task_id", "turn_id", "metadata", "created_at"); err != nil {
		return ev, nil, err
	}
	err = s.Stream(ctx, `SELECT count(*) FROM task_session_messages`, nil, false, func(row []any) error {
		ev.MessagesRead, _ = row[0].(int64)
		return nil
	})
	if s.Dialect() == models.DialectPostgres {
		if err != nil {
			return ev, nil, s.Wrap("message pass over", "task_session_messages", err)
		}
		return readMessagesPG(ctx, pg, ev, since, subagents, health, fanout)
	}
	if err != nil {
		return ev, nil, s.Wrap("count task_session_messages", "", err)
	}
	p := newMsgPass(since, subagents, health, fanout)
	defer p.release()
	// Borrowed: raw keeps no value of a row beyond it (the ids it keeps
	// are copied into the group tables, the rest is hashed or parsed).
	if err := readSQLite(ctx, s, "message pass over task_session_messages", msgPassRaw, true, p.raw); err != nil {
		return ev, nil, err
	}
	if p.odd {
		// Some metadata is not TEXT: SQLite's JSON functions decide for
		// those messages (a second, filtered pass: such values are not
		// Kandev's).
		q := strings.Replace(msgPassMessages, "/*sessions*/", `AND typeof(m.metadata) NOT IN ('text', 'null')`, 1)
		if err := readSQLite(ctx, s, "message pass over task_session_messages", q, true, p.message, p.recentBound()); err != nil {
			return ev, nil, err
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
		if err := readSQLite(ctx, s, "message pass over task_session_subagents", q, true, p.subagent); err != nil {
			return ev, nil, err
		}
	}
	counts := p.finish(&ev)
	if len(p.missingKeys) > 0 {
		// The shortfall's tool call ids were not kept: read them back from
		// the sessions' messages (a shortfall is rare and small).
		if err := p.readMissing(ctx, s, &ev); err != nil {
			return ev, nil, err
		}
	}
	if !health {
		return ev, nil, nil
	}
	return ev, &counts, nil
}

// readSQLite streams q's rows to fn (Snapshot.Stream), its error wrapped
// as reading what (the pass's row functions return none).
func readSQLite(ctx context.Context, s Snapshot, what, q string, borrow bool, fn func(row []any) error, args ...any) error {
	if err := s.Stream(ctx, q, args, borrow, fn); err != nil {
		return s.Wrap("read "+what, "", err)
	}
	return nil
}

// readMissing reads the shortfall's rows back: the subagent-task messages
// of the sessions concerned, at or after capture_since, whose key has no
// row observed at or after it (the same test as the pass), distinct.
func (p *msgPass) readMissing(ctx context.Context, s Snapshot, ev *MessageEvidence) error {
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
		q := strings.Replace(msgPassMessages, "/*sessions*/", `AND m.task_session_id IN (`+sqlkit.Placeholders(len(args), "?")+`)`, 1)
		args = append([]any{p.recentBound()}, args...)
		err := readSQLite(ctx, s, "shortfall over task_session_messages", q, false, func(row []any) error {
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
				if _, found := slices.BinarySearchFunc(p.sinceKeys.All(), p.pairKey(sess, tc), hashkey.Compare); found {
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
