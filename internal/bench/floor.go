package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	_ "modernc.org/sqlite" // read the store's columns and keys

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/models"
)

// Two floors.
//
// The floor (the one the targets use) is the job's reads done naively by a
// native tool: plain SELECTs of the columns a run needs from every table it
// reads, then the spec's two writer-health anti-joins (AC-28) written
// naively — json_extract / jsonb on every message, a lexical created_at
// comparison. floor-sqlite.sql runs in Debian's sqlite3 CLI,
// floor-postgres.sql in psql (\copy … TO '/dev/null'); both with the
// store's capture_since substituted and output discarded. It measures the
// job, not the implementation: whatever the extractor chooses to ask the
// database, the floor stays the same.
//
// The spec floor (a second line, timed once per store) is the previous
// definition: the sqlite3 CLI running the extractor's own scan SQL, rendered
// from the same table specs as a run renders them for the store (its scan
// plan: joins the schema proves empty left out, the per-turn and
// per-session fan-out taken from the message pass, whose Go work is not
// timed here), and the old shape of the writer-health comparison with
// lexical instants. It grows and shrinks with the extractor's SQL, so it is
// only a reference.

//go:embed floor-sqlite.sql
var floorSQLite string

//go:embed floor-postgres.sql
var floorPostgres string

// floorQuery is one statement (or one line of statements) of a floor.
type floorQuery struct {
	Name string
	SQL  string
}

// floorPart names the report line a floor statement counts towards.
func floorPart(sql string) string {
	s := strings.ToLower(sql)
	switch {
	case strings.HasPrefix(strings.TrimSpace(s), "with msg") || strings.Contains(s, "writer health"):
		return "writer health"
	case strings.Contains(s, "from task_session_subagents") || strings.Contains(s, "task_session_subagents:"):
		return "subagent scan"
	}
	return "dimension scans"
}

// floorParts are the report lines of a floor, in order.
var floorParts = []string{"subagent scan", "dimension scans", "writer health"}

// captureSince reads the store's subagent_context_capture_since and renders
// it as the floors compare it: Kandev's stored form in UTC, microseconds.
func captureSince(ctx context.Context, store string) (string, error) {
	db, err := openStore(store)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var since sql.NullString
	err = db.QueryRowContext(ctx, `SELECT value FROM kandev_meta WHERE key = ?`, models.KeyCaptureSince).Scan(&since)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	if !since.Valid || since.String == "" {
		return "", fmt.Errorf("%s: no %s: the floor's health anti-joins need it", store, models.KeyCaptureSince)
	}
	t, err := time.Parse(time.RFC3339Nano, since.String)
	if err != nil {
		return "", fmt.Errorf("%s: %s %q: %w", store, models.KeyCaptureSince, since.String, err)
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000"), nil
}

func openStore(store string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+(&url.URL{Path: store}).EscapedPath()+"?mode=ro&_pragma=query_only(1)")
}

// naiveFloor returns the floor's statements with since substituted: each
// psql backslash command, and each run of lines up to one that ends a
// statement (one line may hold several; they are timed together).
func naiveFloor(script, since string) []floorQuery {
	var out []floorQuery
	var cur []string
	for _, line := range strings.Split(script, "\n") {
		l := strings.TrimSpace(line)
		if l == "" || strings.HasPrefix(l, "--") {
			continue
		}
		cur = append(cur, strings.ReplaceAll(l, "{{capture_since}}", since))
		if strings.HasPrefix(l, "\\") || strings.HasSuffix(l, ";") {
			q := strings.Join(cur, " ")
			out = append(out, floorQuery{Name: floorPart(q), SQL: q})
			cur = nil
		}
	}
	return out
}

// specFloor renders the previous floor for a SQLite store: the extractor's
// scan SQL per table spec, and the old health comparison.
func specFloor(ctx context.Context, store string) ([]floorQuery, error) {
	db, err := openStore(store)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var out []floorQuery
	specs, err := plannedSpecs(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, spec := range specs {
		have, err := tableColumns(ctx, db, spec.Name)
		if err != nil {
			return nil, err
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("spec floor: the store has no table %s", spec.Name)
		}
		q, err := extract.SQLiteScanSQL(spec, have)
		if err != nil {
			return nil, err
		}
		name := "dimension scans"
		if spec.Name == "task_session_subagents" {
			name = "subagent scan"
		}
		out = append(out, floorQuery{Name: name, SQL: withoutOctetLength(strings.Join(strings.Fields(q), " "))})
	}
	var since sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT value FROM kandev_meta WHERE key = ?`, models.KeyCaptureSince).Scan(&since); err != nil && err != sql.ErrNoRows {
		return nil, err
	}
	if since.Valid && since.String != "" {
		t, err := time.Parse(time.RFC3339Nano, since.String)
		if err != nil {
			return nil, fmt.Errorf("spec floor: capture_since %q: %w", since.String, err)
		}
		lit := "'" + t.UTC().Format("2006-01-02 15:04:05.999999999") + "+00:00'"
		out = append(out, floorQuery{Name: "writer health", SQL: strings.Join(strings.Fields(strings.ReplaceAll(specHealthSQL, "?1", lit)), " ")})
	}
	return out, nil
}

// plannedSpecs are the scans a run renders for a SQLite store: its scan
// plan, with the fan-out from the message pass where the plan allows it.
func plannedSpecs(ctx context.Context, store string) ([]models.TableSpec, error) {
	src, err := extract.OpenSQLite(ctx, store)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	plan, err := extract.PlanScans(ctx, snap, true)
	if err != nil {
		return nil, err
	}
	var specs []models.TableSpec
	for _, t := range models.Scanned() {
		spec, _ := plan.ScanSpec(t, &evidence.Fanout{})
		specs = append(specs, spec)
	}
	return specs, nil
}

// octetLength matches octet_length(x) with a simple argument.
var octetLength = regexp.MustCompile(`octet_length\(([^()]+)\)`)

// withoutOctetLength rewrites octet_length(x), which the sqlite3 CLI of
// Debian 12 (3.40) lacks, as length(CAST(x AS BLOB)): the same number of
// bytes (it loads the value, which the bench stores' short values make
// cheap).
func withoutOctetLength(q string) string {
	return octetLength.ReplaceAllString(q, "length(CAST($1 AS BLOB))")
}

// specHealthSQL is the old floor's writer-health comparison
// (evidence.HealthAggregates over CTEs, lexical instants).
const specHealthSQL = `
WITH msg AS (
	SELECT m.task_session_id, m.task_id,
		CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' OR NOT json_valid(m.metadata)
			THEN '{}' ELSE m.metadata END AS meta
	FROM task_session_messages m
	WHERE m.created_at >= ?1
),
expected AS (
	SELECT msg.task_session_id, json_extract(msg.meta, '$.tool_call_id') AS tool_call_id
	FROM msg
	WHERE json_extract(msg.meta, '$.normalized.kind') = 'subagent_task'
		AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND COALESCE(json_extract(msg.meta, '$.tool_call_id'), '') <> ''
	GROUP BY 1, 2
),
accounted AS (
	SELECT msg.task_session_id, json_extract(msg.meta, '$.tool_call_id') AS tool_call_id
	FROM msg WHERE json_extract(msg.meta, '$.normalized.kind') = 'subagent_task'
),
since AS (
	SELECT s.task_session_id, s.tool_call_id, s.observed_at AS observed
	FROM task_session_subagents s WHERE s.observed_at >= ?1
)
SELECT` + evidence.HealthAggregates + `,
	(SELECT COUNT(*) FROM task_session_messages m WHERE m.metadata IS NOT NULL AND m.metadata NOT IN ('', 'null')
		AND NOT json_valid(m.metadata) AND m.created_at >= ?1)`
