package extract

// The SQL implementations of message evidence and writer health: the
// test oracle the message pass (msgpass.go, msgpass_pg.go) is compared
// with, and nothing else. Production has one implementation, the pass.

import (
	"context"
	"database/sql/driver"
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
	h, ok := snap.(healthCounter)
	if !ok {
		return models.HealthCounts{}, fmt.Errorf("health: unsupported snapshot %T", snap)
	}
	if err := checkHealthSchema(ctx, snap, h.store()); err != nil {
		return models.HealthCounts{}, err
	}
	return h.health(ctx, since)
}

// healthCounter is a snapshot that runs the writer-health comparison in
// its dialect: each of extract's snapshots is one.
type healthCounter interface {
	health(ctx context.Context, since time.Time) (models.HealthCounts, error)
	// store names the store in errors.
	store() string
}

func (s *sqliteSnapshot) store() string { return s.src.Path }
func (p *pgSnapshot) store() string     { return p.src.location }

// A masked snapshot (a path shown in its printable form) runs the
// comparison of the snapshot it wraps, its errors masked.
func (p *maskedSnapshot) store() string { return p.mask.Shown() }
func (p *maskedSnapshot) health(ctx context.Context, since time.Time) (models.HealthCounts, error) {
	h, ok := p.Snapshot.(healthCounter)
	if !ok {
		return models.HealthCounts{}, fmt.Errorf("health: unsupported snapshot %T", p.Snapshot)
	}
	c, err := h.health(ctx, since)
	return c, p.mask.Err(err)
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

func (s *sqliteSnapshot) health(ctx context.Context, since time.Time) (models.HealthCounts, error) {
	var (
		c    models.HealthCounts
		last *string
	)
	err := s.tx.QueryRowContext(ctx, sqliteHealth, since.UTC().Format(instantLayout)).Scan(
		&c.Shortfall, &c.Excess, &c.Expected, &c.Observed, &c.Collisions, &last, &c.MalformedMetadata)
	if err != nil {
		return c, s.src.wrap("writer health over task_session_messages and task_session_subagents", err)
	}
	if last != nil {
		t, err := time.Parse(time.RFC3339Nano, *last)
		if err != nil {
			return c, fmt.Errorf("store %s: writer health: %w", s.src.Path, err)
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

func (p *pgSnapshot) health(ctx context.Context, since time.Time) (models.HealthCounts, error) {
	var c models.HealthCounts
	bound := ceilMicro(since).Format("2006-01-02 15:04:05.999999")
	run := func(exclude string, args ...any) error {
		var last *time.Time
		err := p.tx.QueryRow(ctx, fmt.Sprintf(pgHealth, exclude), args...).Scan(
			&c.Shortfall, &c.Excess, &c.Expected, &c.Observed, &c.Collisions, &last, &c.MalformedMetadata)
		if last != nil {
			t := time.Date(last.Year(), last.Month(), last.Day(), last.Hour(), last.Minute(), last.Second(), last.Nanosecond(), time.UTC)
			c.LastObserved = &t
		}
		return err
	}
	// A message whose metadata is not JSON would abort ::jsonb for the whole
	// statement. Try the set-wise query under a savepoint; only when it
	// fails on invalid JSON, find those rows and exclude them by id.
	if _, err := p.tx.Exec(ctx, `SAVEPOINT kx_health`); err != nil {
		return c, p.src.wrap("writer health", "task_session_messages", err)
	}
	err := run("", bound)
	if err == nil {
		_, err = p.tx.Exec(ctx, `RELEASE SAVEPOINT kx_health`)
		return c, p.src.wrapIf("writer health", "task_session_messages", err)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
		return c, p.src.wrap("writer health", "task_session_messages", err)
	}
	if _, err := p.tx.Exec(ctx, `ROLLBACK TO SAVEPOINT kx_health`); err != nil {
		return c, p.src.wrap("writer health", "task_session_messages", err)
	}
	bad, err := p.malformedMessages(ctx, bound)
	if err != nil {
		return c, err
	}
	if err := run("AND NOT (m.id = ANY($2))", bound, bad); err != nil {
		return c, p.src.wrap("writer health", "task_session_messages", err)
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
	ok, err := snap.TableExists(ctx, "task_session_messages")
	if err != nil || !ok {
		return ev, err
	}
	cols, err := snap.Columns(ctx, "task_session_messages")
	if err != nil {
		return ev, err
	}
	if err := sqlkit.RequireColumns(sourceOf(snap), "task_session_messages", cols, "id", "task_session_id", "task_id", "turn_id", "metadata", "created_at"); err != nil {
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
