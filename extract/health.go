package extract

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

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
func (p *maskedSnapshot) store() string { return p.mask.shown }
func (p *maskedSnapshot) health(ctx context.Context, since time.Time) (models.HealthCounts, error) {
	h, ok := p.Snapshot.(healthCounter)
	if !ok {
		return models.HealthCounts{}, fmt.Errorf("health: unsupported snapshot %T", p.Snapshot)
	}
	c, err := h.health(ctx, since)
	return c, p.mask.err(err)
}

// healthColumns are what the comparison reads, by table.
var healthColumns = []struct {
	table string
	cols  []string
}{
	{"task_session_messages", []string{"id", "task_session_id", "task_id", "metadata", "created_at"}},
	{"task_session_subagents", []string{"task_session_id", "tool_call_id", "observed_at"}},
}

// checkHealthSchema fails with an error naming the store, table and column
// when the comparison cannot run on this schema, instead of an SQL error.
func checkHealthSchema(ctx context.Context, snap models.Snapshot, source string) error {
	for _, h := range healthColumns {
		ok, err := snap.TableExists(ctx, h.table)
		if err != nil {
			return err
		}
		if !ok {
			return &models.MissingTableError{Source: source, Table: h.table}
		}
		cols, err := snap.Columns(ctx, h.table)
		if err != nil {
			return err
		}
		if err := requireColumns(source, h.table, cols, h.cols...); err != nil {
			return err
		}
	}
	return nil
}

// maxMessageMetadata bounds the message metadata SQLite reads: a longer
// value is measured (octet_length reads no content) and counted as
// malformed, never loaded. Kandev's subagent-task metadata is a few hundred
// bytes.
const maxMessageMetadata = "1048576"

// instantLayout is a fixed-width UTC form: lexical order is time order.
const instantLayout = "2006-01-02T15:04:05.000000000Z"

// driverFunction names the Go function registered with the driver below:
// a query calling it runs on the snapshot's database/sql connection, never
// on its liteConn (sqlitelite.go), which knows no Go functions.
const driverFunction = "kx_instant("

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

// HealthAggregates is the spec's comparison (AC-28, AC-29) over the CTEs
// expected, accounted and since, written once for both dialects: shortfall
// and excess as two directed set differences over distinct keys, never
// netted; the expected and observed key counts; the collision count; the
// scoped MAX(observed_at), NULL when nothing was observed since activation.
// (Exported for the benchmark's floor, which runs the same comparison.)
const HealthAggregates = `
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM expected
		EXCEPT SELECT task_session_id, tool_call_id FROM since) AS shortfall),
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM since GROUP BY 1, 2
		EXCEPT SELECT task_session_id, tool_call_id FROM accounted) AS excess),
	(SELECT COUNT(*) FROM expected),
	(SELECT COUNT(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM since) AS observed),
	(SELECT COUNT(*) - COUNT(DISTINCT task_session_id || ':' || tool_call_id) FROM since),
	(SELECT MAX(observed) FROM since)`

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

// malformedMessages lists messages since bound whose metadata is not JSON.
func (p *pgSnapshot) malformedMessages(ctx context.Context, bound string) ([]string, error) {
	// An oversized value is not read (it is counted apart, and never cast).
	rows, err := p.tx.Query(ctx, `SELECT id, metadata FROM task_session_messages
		WHERE created_at >= $1::timestamp AND metadata IS NOT NULL AND octet_length(metadata) <= `+maxMessageMetadata+`
			AND metadata NOT IN ('', 'null')`, bound)
	if err != nil {
		return nil, p.src.wrap("writer health", "task_session_messages", err)
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var id, meta string
		if err := rows.Scan(&id, &meta); err != nil {
			return nil, p.src.wrap("writer health", "task_session_messages", err)
		}
		if !json.Valid([]byte(meta)) {
			bad = append(bad, id)
		}
	}
	return bad, p.src.wrapIf("writer health", "task_session_messages", rows.Err())
}

func ceilMicro(t time.Time) time.Time {
	t = t.UTC()
	if tr := t.Truncate(time.Microsecond); !tr.Equal(t) {
		return tr.Add(time.Microsecond)
	}
	return t
}
