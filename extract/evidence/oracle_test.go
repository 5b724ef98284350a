package evidence

// The SQL implementations of message evidence and writer health: the
// test oracle the message pass (msgpass.go, msgpass_pg.go) is compared
// with, and nothing else. Production has one implementation, the pass.

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/internal/instant"
	"github.com/kandev/kandev-extract/models"
)

// HealthCounts evaluates the writer-health comparison (spec AC-28: two
// directed anti-joins over distinct (task_session_id, tool_call_id) keys,
// never netted, plus collisions and the scoped MAX(observed_at), AC-29)
// inside the snapshot, for activity at or after since — compared as exact
// instants, never as strings (AC-24e).
func HealthCounts(ctx context.Context, snap models.Snapshot, since time.Time) (models.HealthCounts, error) {
	s, ok := snap.(Snapshot)
	if !ok {
		return models.HealthCounts{}, fmt.Errorf("health: unsupported snapshot %T", snap)
	}
	if err := checkHealthSchema(ctx, s, s.Location()); err != nil {
		return models.HealthCounts{}, err
	}
	if s.Dialect() == models.DialectPostgres {
		pg, ok := s.(PostgresSnapshot)
		if !ok {
			return models.HealthCounts{}, fmt.Errorf("health: unsupported snapshot %T", snap)
		}
		return pgHealthCounts(ctx, pg, since)
	}
	return sqliteHealthCounts(ctx, s, since)
}

func init() {
	// kx_instant(text) renders a stored Kandev timestamp in instantLayout,
	// or NULL when it does not parse, so SQLite compares instants exactly
	// (never julianday, never raw text against a key).
	sqlite.MustRegisterDeterministicScalarFunction("kx_instant", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		s, ok := args[0].(string)
		if !ok {
			return nil, nil
		}
		t, _, err := instant.ParseStamp(s)
		if err != nil {
			return nil, nil
		}
		return t.UTC().Format(instantLayout), nil
	})
}

// sqliteHealth reads messages once: the scan CTE keeps only the rows the
// result needs — metadata that is not JSON (the malformed count) and
// subagent-task messages — so ordinary messages are validated but never
// searched. The instr pre-filter is exact: a JSON string value that decodes
// to subagent_task is either spelled out in the text or written with an
// escape, which needs a backslash. NULL, empty, "null" and invalid metadata
// have no kind (as the '{}' substitution had). Both CTEs are read several
// times and are MATERIALIZED so kx_instant runs once per row.
const sqliteHealth = `
WITH scan AS MATERIALIZED (
	SELECT m.task_session_id, m.task_id,
		CASE WHEN octet_length(m.metadata) > ` + maxMessageMetadata + ` THEN 0 ELSE json_valid(m.metadata) END AS ok,
		CASE WHEN octet_length(m.metadata) <= ` + maxMessageMetadata + ` AND json_valid(m.metadata) THEN json_extract(m.metadata, '$.tool_call_id') END AS tool_call_id
	FROM task_session_messages m
	WHERE m.metadata IS NOT NULL
		AND kx_instant(CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END) >= ?1
		AND (octet_length(m.metadata) > ` + maxMessageMetadata + ` OR (m.metadata NOT IN ('', 'null')
			AND (NOT json_valid(m.metadata)
				OR ((instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\') > 0)
					AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task'))))
),
accounted AS (
	SELECT task_session_id, tool_call_id FROM scan WHERE ok
),
expected AS (
	SELECT task_session_id, tool_call_id
	FROM scan
	WHERE ok AND COALESCE(task_session_id, '') <> '' AND COALESCE(task_id, '') <> ''
		AND COALESCE(tool_call_id, '') <> ''
	GROUP BY 1, 2
),
since AS MATERIALIZED (
	SELECT s.task_session_id, s.tool_call_id, kx_instant(s.observed_at) AS observed
	-- Bounded reads: a huge id or instant is measured, never loaded (a
	-- value over the cap matches nothing), and the unflattened subquery
	-- keeps SQLite from copying whole values into its sorter.
	FROM (SELECT CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END AS task_session_id,
			CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END AS tool_call_id,
			CASE WHEN octet_length(observed_at) <= 64 THEN observed_at END AS observed_at
		FROM task_session_subagents LIMIT -1 OFFSET 0) s
	WHERE kx_instant(s.observed_at) >= ?1
)
SELECT` + HealthAggregates + `,
	(SELECT COUNT(*) FROM scan WHERE NOT ok)`

func sqliteHealthCounts(ctx context.Context, s Snapshot, since time.Time) (models.HealthCounts, error) {
	var (
		c    models.HealthCounts
		last any
	)
	err := s.Stream(ctx, sqliteHealth, []any{since.UTC().Format(instantLayout)}, false, func(row []any) error {
		c.Shortfall, c.Excess, c.Expected, c.Observed, c.Collisions = num(row[0]), num(row[1]), num(row[2]), num(row[3]), num(row[4])
		last, c.MalformedMetadata = row[5], num(row[6])
		return nil
	})
	if err != nil {
		return c, s.Wrap("writer health over task_session_messages and task_session_subagents", "", err)
	}
	if last != nil {
		t, err := time.Parse(time.RFC3339Nano, str(last))
		if err != nil {
			return c, fmt.Errorf("store %s: writer health: %w", s.Location(), err)
		}
		c.LastObserved = &t
	}
	return c, nil
}

// pgHealth is the same comparison on PostgreSQL. The key is bound as a
// timestamp literal rounded UP to the column's microsecond (a row is at or
// after a nanosecond key exactly when it is at or after that microsecond);
// %s is an optional exclusion of messages whose metadata is not JSON.
// Metadata over maxMessageMetadata bytes is measured (octet_length reads the
// TOAST header, not the value), never cast: it is counted as malformed, as
// on SQLite (a value over 256 MiB cannot even be a jsonb).
const pgHealth = `
WITH msg AS (
	SELECT m.task_session_id, m.task_id, octet_length(m.metadata) > ` + maxMessageMetadata + ` AS oversize,
		(CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' OR octet_length(m.metadata) > ` + maxMessageMetadata + `
			THEN '{}' ELSE m.metadata END)::jsonb AS meta
	FROM task_session_messages m
	WHERE m.created_at >= $1::timestamp %s
),
expected AS (
	SELECT msg.task_session_id, msg.meta #>> '{tool_call_id}' AS tool_call_id
	FROM msg
	WHERE msg.meta #>> '{normalized,kind}' = 'subagent_task'
		AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND COALESCE(msg.meta #>> '{tool_call_id}', '') <> ''
	GROUP BY 1, 2
),
accounted AS (
	SELECT msg.task_session_id, msg.meta #>> '{tool_call_id}' AS tool_call_id
	FROM msg WHERE msg.meta #>> '{normalized,kind}' = 'subagent_task'
),
since AS (
	SELECT s.task_session_id, s.tool_call_id, s.observed_at AS observed
	FROM task_session_subagents s WHERE s.observed_at >= $1::timestamp
)
SELECT` + HealthAggregates + `,
	(SELECT COUNT(*) FROM msg WHERE oversize)`

func pgHealthCounts(ctx context.Context, p PostgresSnapshot, since time.Time) (models.HealthCounts, error) {
	var c models.HealthCounts
	bound := ceilMicro(since).Format("2006-01-02 15:04:05.999999")
	run := func(exclude string, args ...any) error {
		return p.Stream(ctx, fmt.Sprintf(pgHealth, exclude), args, false, func(row []any) error {
			c.Shortfall, c.Excess, c.Expected, c.Observed, c.Collisions = num(row[0]), num(row[1]), num(row[2]), num(row[3]), num(row[4])
			c.MalformedMetadata = num(row[6])
			if last, ok := row[5].(time.Time); ok {
				t := time.Date(last.Year(), last.Month(), last.Day(), last.Hour(), last.Minute(), last.Second(), last.Nanosecond(), time.UTC)
				c.LastObserved = &t
			}
			return nil
		})
	}
	// A message whose metadata is not JSON would abort ::jsonb for the whole
	// statement. Try the set-wise query under a savepoint; only when it
	// fails on invalid JSON, find those rows and exclude them by id.
	if err := p.Exec(ctx, `SAVEPOINT kx_health`); err != nil {
		return c, p.Wrap("writer health", "task_session_messages", err)
	}
	err := run("", bound)
	if err == nil {
		err = p.Exec(ctx, `RELEASE SAVEPOINT kx_health`)
		return c, wrapIf(p, "writer health", "task_session_messages", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		return c, p.Wrap("writer health", "task_session_messages", err)
	}
	if err := p.Exec(ctx, `ROLLBACK TO SAVEPOINT kx_health`); err != nil {
		return c, p.Wrap("writer health", "task_session_messages", err)
	}
	bad, err := malformedMessages(ctx, p, bound)
	if err != nil {
		return c, err
	}
	if err := run("AND NOT (m.id = ANY($2))", bound, bad); err != nil {
		return c, p.Wrap("writer health", "task_session_messages", err)
	}
	c.MalformedMetadata += int64(len(bad))
	return c, nil
}

// ReadMessageEvidence reads the message evidence; since is capture_since
// (nil: no shortfall is measured, as health does not run). subagents says
// whether task_session_subagents exists (without it, messages are the only
// evidence).
func ReadMessageEvidence(ctx context.Context, snap models.Snapshot, since *time.Time, subagents bool) (MessageEvidence, error) {
	ev := MessageEvidence{Turns: map[string]models.MessageCounts{}, Sessions: map[string]models.MessageCounts{}}
	s, isSnap := snap.(Snapshot)
	if !isSnap {
		return ev, fmt.Errorf("message evidence: unsupported snapshot %T", snap)
	}
	ok, err := snap.TableExists(ctx, "task_session_messages")
	if err != nil || !ok {
		return ev, err
	}
	cols, err := snap.Columns(ctx, "task_session_messages")
	if err != nil {
		return ev, err
	}
	if err := sqlkit.RequireColumns(s.Location(), "task_session_messages", cols, "id", "task_session_id", "task_id", "turn_id", "metadata", "created_at"); err != nil {
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
	if pg, ok := s.(PostgresSnapshot); ok && s.Dialect() == models.DialectPostgres {
		err = pgMessageEvidence(ctx, pg, since, subagents, &ev.Malformed, add)
	} else {
		err = sqliteMessageEvidence(ctx, s, since, subagents, add)
	}
	if err != nil {
		return ev, err
	}
	shortfallCounts(&ev) // the shortfall per turn and per session: distinct tool calls
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

func sqliteMessageEvidence(ctx context.Context, s Snapshot, since *time.Time, subagents bool, add func(kind, key, session, tcid string, n int64)) error {
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
	err := s.Stream(ctx, q, []any{bound}, false, func(row []any) error {
		add(str(row[0]), str(row[1]), str(row[2]), str(row[3]), num(row[4]))
		return nil
	})
	if err != nil {
		return s.Wrap("read message evidence over task_session_messages", "", err)
	}
	return nil
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

func pgMessageEvidence(ctx context.Context, p PostgresSnapshot, since *time.Time, subagents bool, malformed *int64, add func(kind, key, session, tcid string, n int64)) error {
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
		return p.Stream(ctx, q, args, false, func(row []any) error {
			add(str(row[0]), str(row[1]), str(row[2]), str(row[3]), num(row[4]))
			return nil
		})
	}
	if err := p.Exec(ctx, `SAVEPOINT kx_evidence`); err != nil {
		return p.Wrap("message evidence", "task_session_messages", err)
	}
	err := run("", bound)
	if err == nil {
		err = p.Exec(ctx, `RELEASE SAVEPOINT kx_evidence`)
		return wrapIf(p, "message evidence", "task_session_messages", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		return p.Wrap("message evidence", "task_session_messages", err)
	}
	if err := p.Exec(ctx, `ROLLBACK TO SAVEPOINT kx_evidence`); err != nil {
		return p.Wrap("message evidence", "task_session_messages", err)
	}
	bad, err := malformedMessages(ctx, p, "-infinity")
	if err != nil {
		return err
	}
	*malformed = int64(len(bad))
	if err := run("AND NOT (m.id = ANY($2))", bound, bad); err != nil {
		return p.Wrap("message evidence", "task_session_messages", err)
	}
	return nil
}

// malformedMessages lists messages since bound whose metadata is not JSON.
func malformedMessages(ctx context.Context, p Snapshot, bound string) ([]string, error) {
	// An oversized value is not read (it is counted apart, and never cast).
	var bad []string
	err := p.Stream(ctx, `SELECT id, metadata FROM task_session_messages
		WHERE created_at >= $1::timestamp AND metadata IS NOT NULL AND octet_length(metadata) <= `+maxMessageMetadata+`
			AND metadata NOT IN ('', 'null')`, []any{bound}, false, func(row []any) error {
		if !json.Valid([]byte(str(row[1]))) {
			bad = append(bad, str(row[0]))
		}
		return nil
	})
	return bad, wrapIf(p, "writer health", "task_session_messages", err)
}

// wrapIf is s.Wrap of an error, nil for none.
func wrapIf(s Snapshot, op, table string, err error) error {
	if err == nil {
		return nil
	}
	return s.Wrap(op, table, err)
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
