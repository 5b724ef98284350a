package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // read the store's columns and keys

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// The floor is what reading the same data costs the sqlite3 CLI, with no
// conversion, no Parquet and no DuckDB: each source read the extractor
// makes — the subagent scan, the dimension scans with their fan-out and
// duplicate aggregate joins, and the writer-health anti-joins — rendered
// from the same table specs the extractor uses, with output to /dev/null.
// Writer health compares instants lexically here (the stored text against
// the key rewritten in the stored form): the point is the read cost.

// floorQuery is one statement of the floor script.
type floorQuery struct {
	Name string
	SQL  string
}

// floorScript renders the floor's statements for a store.
func floorScript(ctx context.Context, store string) ([]floorQuery, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: store}).EscapedPath()+"?mode=ro&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	columns := func(table string) ([]string, error) {
		rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var have []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				return nil, err
			}
			have = append(have, c)
		}
		return have, rows.Err()
	}
	var out []floorQuery
	specs := []models.TableSpec{
		transform.SubagentSpec(), transform.SessionSpec(true), transform.TurnSpec(true),
		transform.TaskSpec(), transform.WorkflowSpec(), transform.WorkflowStepSpec(),
	}
	for _, spec := range specs {
		have, err := columns(spec.Name)
		if err != nil {
			return nil, err
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("floor: the store has no table %s", spec.Name)
		}
		q, err := extract.SQLiteScanSQL(spec, have)
		if err != nil {
			return nil, err
		}
		out = append(out, floorQuery{Name: spec.Name, SQL: q})
	}
	var since sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT value FROM kandev_meta WHERE key = ?`, models.KeyCaptureSince).Scan(&since); err != nil && err != sql.ErrNoRows {
		return nil, err
	}
	if since.Valid && since.String != "" {
		t, err := time.Parse(time.RFC3339Nano, since.String)
		if err != nil {
			return nil, fmt.Errorf("floor: capture_since %q: %w", since.String, err)
		}
		// Kandev's stored form: lexical order is time order within it.
		lit := "'" + t.UTC().Format("2006-01-02 15:04:05.999999999") + "+00:00'"
		out = append(out, floorQuery{Name: "writer health", SQL: strings.ReplaceAll(healthFloorSQL, "?1", lit)})
	}
	return out, nil
}

// healthFloorSQL is the writer-health comparison (extract.HealthAggregates)
// over CTEs with plain lexical instant comparisons instead of kx_instant.
const healthFloorSQL = `
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
SELECT` + extract.HealthAggregates + `,
	(SELECT COUNT(*) FROM task_session_messages m WHERE m.metadata IS NOT NULL AND m.metadata NOT IN ('', 'null')
		AND NOT json_valid(m.metadata) AND m.created_at >= ?1)`
