package extract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/models"
)

// Messages are an independent lower bound on fan-out: every subagent Kandev
// dispatches leaves a subagent-task message with its tool_call_id (the
// health check's own rule, AC-28). MessageEvidence reads, inside the
// snapshot, per turn and per session: the distinct tool calls the messages
// name, the distinct tool calls of rows and messages together, and the
// message keys at or after capture_since that have no row observed at or
// after it — the writer health shortfall itself, placed in its turns.
// Identifiers only: no message content is read into the process.

// MessageEvidence is what the messages of a snapshot say about fan-out.
type MessageEvidence struct {
	// Turns and Sessions map a turn or session id to its counts (only
	// those with subagent-task messages).
	Turns, Sessions map[string]models.MessageCounts
	// Missing are the shortfall's keys, with the turn of their message.
	Missing []models.MissingRow
	// Fanout is the per-turn and per-session fan-out, when the pass
	// counted it (ReadMessagesAndFanout), else nil.
	Fanout *Fanout
	// MessagesRead is how many task_session_messages rows the snapshot
	// holds (every one is examined); Malformed those whose metadata is not
	// JSON (skipped).
	MessagesRead, Malformed int64
}

// ReadMessageEvidence reads the message evidence; since is capture_since
// (nil: no shortfall is measured, as health does not run). subagents says
// whether task_session_subagents exists (without it, messages are the only
// evidence).
func ReadMessageEvidence(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool) (MessageEvidence, error) {
	ev := MessageEvidence{Turns: map[string]models.MessageCounts{}, Sessions: map[string]models.MessageCounts{}}
	ok, err := snap.TableExists(ctx, "task_session_messages")
	if err != nil || !ok {
		return ev, err
	}
	cols, err := snap.Columns(ctx, "task_session_messages")
	if err != nil {
		return ev, err
	}
	if err := requireColumns(sourceOf(snap), "task_session_messages", cols, "id", "task_session_id", "task_id", "turn_id", "metadata", "created_at"); err != nil {
		return ev, err
	}
	add := func(kind, key, session, tcid string, n int64) {
		switch kind {
		case "turn_expected":
			c := ev.Turns[key]
			c.Expected = n
			ev.Turns[key] = c
		case "turn_union":
			c := ev.Turns[key]
			c.LowerBound = n
			ev.Turns[key] = c
		case "session_expected":
			c := ev.Sessions[key]
			c.Expected = n
			ev.Sessions[key] = c
		case "session_union":
			c := ev.Sessions[key]
			c.LowerBound = n
			ev.Sessions[key] = c
		case "missing":
			ev.Missing = append(ev.Missing, models.MissingRow{TurnID: key, SessionID: session, ToolCallID: tcid})
		case "messages":
			ev.MessagesRead = n
		}
	}
	switch s := snap.(type) {
	case *sqliteSnapshot:
		err = s.messageEvidence(ctx, since, subagents, add)
	case *pgSnapshot:
		err = s.messageEvidence(ctx, since, subagents, &ev.Malformed, add)
	default:
		return ev, fmt.Errorf("message evidence: unsupported snapshot %T", snap)
	}
	if err != nil {
		return ev, err
	}
	// The shortfall per turn and per session: distinct tool calls.
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
	return ev, nil
}

// evidenceSelect is the result, written once for both dialects over the
// CTEs msg (subagent-task messages: turn_id, task_session_id, task_id,
// tcid, created) and missing (their keys since capture_since with no row
// since then); sub is the subagent rows' (turn_id, task_session_id,
// tool_call_id), or nothing without the table.
const evidenceSelect = `
SELECT 'turn_expected', turn_id, NULL, NULL, COUNT(DISTINCT tcid) FROM msg GROUP BY turn_id
UNION ALL
SELECT 'session_expected', task_session_id, NULL, NULL, COUNT(DISTINCT tcid) FROM msg GROUP BY task_session_id
UNION ALL
SELECT 'turn_union', k, NULL, NULL, COUNT(DISTINCT tcid) FROM (
	SELECT turn_id AS k, tcid FROM msg
	UNION SELECT turn_id, tool_call_id FROM sub WHERE turn_id IN (SELECT turn_id FROM msg)) u GROUP BY k
UNION ALL
SELECT 'session_union', k, NULL, NULL, COUNT(DISTINCT tcid) FROM (
	SELECT task_session_id AS k, tcid FROM msg
	UNION SELECT task_session_id, tool_call_id FROM sub WHERE task_session_id IN (SELECT task_session_id FROM msg)) u GROUP BY k
UNION ALL
SELECT 'missing', turn_id, task_session_id, tcid, 1 FROM missing
UNION ALL
SELECT 'messages', NULL, NULL, NULL, (SELECT COUNT(*) FROM task_session_messages)`

// sqliteEvidence: the same pre-filter as the health check (exact: a JSON
// string decoding to subagent_task is spelled out or escaped), bounded
// reads of ids and instants (a huge value is measured, never loaded).
const sqliteEvidence = `
WITH msg AS MATERIALIZED (
	SELECT turn_id, task_session_id, task_id, tcid, created FROM (
		SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id END AS turn_id,
			CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id END AS task_session_id,
			CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id END AS task_id,
			json_extract(m.metadata, '$.tool_call_id') AS tcid,
			kx_instant(CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END) AS created
		FROM task_session_messages m
		WHERE m.metadata IS NOT NULL AND octet_length(m.metadata) <= ` + maxMessageMetadata + ` AND m.metadata NOT IN ('', 'null')
			AND (instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\') > 0)
			AND json_valid(m.metadata) AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task'
		LIMIT -1 OFFSET 0)
	WHERE typeof(tcid) = 'text' AND tcid <> ''
),
sub AS (%s),
missing AS (
	SELECT DISTINCT msg.turn_id, msg.task_session_id, msg.tcid FROM msg
	WHERE msg.created >= ?1 AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND NOT EXISTS (SELECT 1 FROM %s)
)` + evidenceSelect

func (s *sqliteSnapshot) messageEvidence(ctx context.Context, since *time.Time, subagents bool, add func(kind, key, session, tcid string, n int64)) error {
	rows := `SELECT NULL AS turn_id, NULL AS task_session_id, NULL AS tool_call_id WHERE 0`
	found := `(SELECT 1) s WHERE 0`
	if subagents {
		rows = `SELECT CASE WHEN octet_length(turn_id) <= 1048576 THEN turn_id END AS turn_id,
			CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END AS task_session_id,
			CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END AS tool_call_id
			FROM task_session_subagents WHERE COALESCE(tool_call_id, '') <> ''`
		found = `task_session_subagents s WHERE s.task_session_id = msg.task_session_id AND s.tool_call_id = msg.tcid
			AND kx_instant(CASE WHEN octet_length(s.observed_at) <= 64 THEN s.observed_at END) >= ?1`
	}
	var bound any
	if since != nil {
		bound = since.UTC().Format(instantLayout)
	}
	q := fmt.Sprintf(sqliteEvidence, rows, found)
	return s.stream(ctx, "message evidence over task_session_messages", q, []any{bound}, func(row []any) error {
		add(str(row[0]), str(row[1]), str(row[2]), str(row[3]), num(row[4]))
		return nil
	})
}

// pgEvidence: jsonb only after a text pre-filter; %s excludes messages
// whose metadata is not JSON (found after a failed first try).
const pgEvidence = `
WITH msg AS (
	SELECT turn_id, task_session_id, task_id, meta #>> '{tool_call_id}' AS tcid, created_at AS created
	FROM (SELECT m.turn_id, m.task_session_id, m.task_id, m.created_at, m.metadata::jsonb AS meta
		FROM task_session_messages m
		WHERE m.metadata IS NOT NULL AND octet_length(m.metadata) <= ` + maxMessageMetadata + ` AND m.metadata NOT IN ('', 'null')
			AND (strpos(m.metadata, 'subagent_task') > 0 OR strpos(m.metadata, '\') > 0) %s) x
	WHERE meta #>> '{normalized,kind}' = 'subagent_task' AND jsonb_typeof(meta -> 'tool_call_id') = 'string'
		AND meta #>> '{tool_call_id}' <> ''
),
sub AS (%s),
missing AS (
	SELECT DISTINCT msg.turn_id, msg.task_session_id, msg.tcid FROM msg
	WHERE msg.created >= $1::timestamp AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND NOT EXISTS (SELECT 1 FROM %s)
)` + evidenceSelect

func (p *pgSnapshot) messageEvidence(ctx context.Context, since *time.Time, subagents bool, malformed *int64, add func(kind, key, session, tcid string, n int64)) error {
	rows := `SELECT NULL::text AS turn_id, NULL::text AS task_session_id, NULL::text AS tool_call_id WHERE false`
	found := `(SELECT 1) s WHERE false`
	if subagents {
		rows = `SELECT turn_id, task_session_id, tool_call_id FROM task_session_subagents WHERE COALESCE(tool_call_id, '') <> ''`
		found = `task_session_subagents s WHERE s.task_session_id = msg.task_session_id AND s.tool_call_id = msg.tcid
			AND s.observed_at >= $1::timestamp`
	}
	var bound any
	if since != nil {
		bound = ceilMicro(*since).Format("2006-01-02 15:04:05.999999")
	}
	run := func(exclude string, args ...any) error {
		q := fmt.Sprintf(pgEvidence, exclude, rows, found)
		r, err := p.tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			var kind string
			var key, session, tcid *string
			var n int64
			if err := r.Scan(&kind, &key, &session, &tcid, &n); err != nil {
				return err
			}
			add(kind, deref(key), deref(session), deref(tcid), n)
		}
		return r.Err()
	}
	if _, err := p.tx.Exec(ctx, `SAVEPOINT kx_evidence`); err != nil {
		return p.src.wrap("message evidence", "task_session_messages", err)
	}
	err := run("", bound)
	if err == nil {
		_, err = p.tx.Exec(ctx, `RELEASE SAVEPOINT kx_evidence`)
		return p.src.wrapIf("message evidence", "task_session_messages", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		return p.src.wrap("message evidence", "task_session_messages", err)
	}
	if _, err := p.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT kx_evidence`); err != nil {
		return p.src.wrap("message evidence", "task_session_messages", err)
	}
	bad, err := p.malformedMessages(ctx, "-infinity")
	if err != nil {
		return err
	}
	*malformed = int64(len(bad))
	if err := run("AND NOT (m.id = ANY($2))", bound, bad); err != nil {
		return p.src.wrap("message evidence", "task_session_messages", err)
	}
	return nil
}

// sourceOf is the snapshot's printable store location, for errors.
func sourceOf(snap models.Snapshot) string {
	switch s := snap.(type) {
	case *sqliteSnapshot:
		return s.src.Path
	case *pgSnapshot:
		return s.src.location
	}
	return ""
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

func num(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	return 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
