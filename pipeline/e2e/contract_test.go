package e2e_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/models"
)

// The expected values below are derived independently of the extractor:
// installation states from the fixtures' README, and every per-row and
// per-turn class with direct SQL on the source, comparing instants in one
// fixed-width lexical UTC form (AC-24e's permitted mechanism; never
// julianday, never the raw key against the raw column).

// normCol renders a Kandev SQLite timestamp column value
// ('2026-08-03 21:58:58.498436629+00:00') as 'YYYY-MM-DDTHH:MM:SS.fffffffff'.
func normCol(c string) string {
	return fmt.Sprintf(`(substr(%[1]s,1,10) || 'T' || substr(%[1]s,12,8) || '.' || substr(CASE WHEN substr(%[1]s,20,1) = '.'
		THEN substr(%[1]s,21,instr(substr(%[1]s,21),'+')-1) ELSE '' END || '000000000',1,9))`, c)
}

// normKey renders an RFC 3339 'Z' key the same way.
func normKey(k string) string {
	return fmt.Sprintf(`(substr(%[1]s,1,19) || '.' || substr(CASE WHEN substr(%[1]s,20,1) = '.'
		THEN substr(%[1]s,21,instr(substr(%[1]s,21),'Z')-1) ELSE '' END || '000000000',1,9))`, k)
}

const (
	keyC = `(SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since')`
	keyE = `(SELECT value FROM kandev_meta WHERE key = 'subagent_context_execution_since')`
)

func expectedWindows(t *testing.T, src *sql.DB) []string {
	return rowsOf(t, src, `SELECT w, count(*) FROM (SELECT CASE WHEN `+keyC+` IS NULL THEN 'no_boundary'
		WHEN `+normCol("observed_at")+` >= `+normKey(keyC)+` THEN 'after_capture' ELSE 'before_capture' END AS w
		FROM task_session_subagents) GROUP BY w`)
}

func expectedIdentities(t *testing.T, src *sql.DB) []string {
	return rowsOf(t, src, `SELECT c, count(*) FROM (SELECT CASE
			WHEN agent_execution_id <> 'unknown' THEN 'recorded'
			WHEN source = 'backfill' THEN 'unrecorded_backfill'
			WHEN `+keyE+` IS NOT NULL AND `+normCol("observed_at")+` < `+normKey(keyE)+` THEN 'unrecorded_pre_amendment'
			ELSE 'unrecorded_live' END AS c FROM task_session_subagents) GROUP BY c`)
}

// expectedFanout derives (id, n, live, backfill, fanout, completeness) for
// every turn or session, by the rules of docs/design.md §3 written
// independently in the source's own SQL: complete only when started at or
// after capture_since and no subagent-task message at or after it (with a
// session and a task) names a tool call without a row observed at or after
// it; otherwise a lower bound where rows or messages exist, else unknown.
// (The fixtures have no unplaced rows, no live/backfill overlap and no
// activity in an ambiguous second; those rules have their own tests.)
func expectedFanout(t *testing.T, src *sql.DB, table, key string, feature bool) []string {
	counts := `0 AS n, 0 AS l, 0 AS b`
	if feature {
		counts = `(SELECT count(*) FROM task_session_subagents s WHERE s.` + key + ` = t.id) AS n,
			(SELECT count(*) FROM task_session_subagents s WHERE s.` + key + ` = t.id AND s.source = 'live') AS l,
			(SELECT count(*) FROM task_session_subagents s WHERE s.` + key + ` = t.id AND s.source = 'backfill') AS b`
	}
	// A collision: one tool call with live rows of two executions (AC-32);
	// the group's count is then a lower bound, not exact.
	coll := `0 AS coll`
	if feature {
		coll = `(SELECT count(*) FROM (SELECT 1 FROM task_session_subagents s WHERE s.` + key + ` = t.id AND s.source = 'live'
			GROUP BY s.tool_call_id HAVING count(*) > 1)) AS coll`
	}
	msgKey := key
	tc := `json_extract(m.metadata, '$.tool_call_id')`
	isTask := `json_valid(m.metadata) AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task' AND coalesce(` + tc + `, '') <> ''`
	msgs := `(SELECT count(DISTINCT ` + tc + `) FROM task_session_messages m WHERE m.` + msgKey + ` = t.id AND ` + isTask + `) AS msgs`
	hasRow := `1 FROM task_session_messages x WHERE 0`
	if feature {
		hasRow = `1 FROM task_session_subagents s WHERE s.task_session_id = m.task_session_id AND s.tool_call_id = ` + tc +
			` AND ` + normCol("s.observed_at") + ` >= ` + normKey(keyC)
	}
	short := `(SELECT count(DISTINCT ` + tc + `) FROM task_session_messages m WHERE m.` + msgKey + ` = t.id AND ` + isTask + `
		AND ` + keyC + ` IS NOT NULL AND ` + normCol("m.created_at") + ` >= ` + normKey(keyC) + `
		AND coalesce(m.task_session_id, '') <> '' AND coalesce(m.task_id, '') <> '' AND NOT EXISTS (SELECT ` + hasRow + `)) AS short`
	return rowsOf(t, src, `SELECT id, n, l, b,
			CASE WHEN complete THEN n END,
			CASE WHEN complete THEN 'complete' WHEN n > 0 OR msgs > 0 THEN 'lower_bound' ELSE 'unknown' END
		FROM (SELECT id, n, l, b, msgs, (`+fmt.Sprint(feature)+` AND `+keyC+` IS NOT NULL AND `+normCol("started_at")+` >= `+normKey(keyC)+` AND short = 0 AND coll = 0) AS complete
			FROM (SELECT t.id AS id, t.started_at AS started_at, `+counts+`, `+msgs+`, `+short+`, `+coll+` FROM `+table+` t))`)
}

type fixtureWant struct {
	file       string
	activation models.ActivationState
	shape      models.TableShape
	capture    string // capture_since_state
	backfill   string // backfill_through_state
	execution  string
	precision  string // capture_since_precision, "NULL" when none
	subagents  int
	backfilled int
}

var fixtures = []fixtureWant{
	{"fresh-activated.db", models.Activated, models.ShapeExecutionAware, "present", "none_matched", "absent", "nanosecond", 253, 0},
	{"not-activated.db", models.NotActivated, models.ShapeExecutionAware, "absent", "absent", "absent", "NULL", 253, 0},
	{"capture-only.db", models.CaptureOnlyPartialPair, models.ShapeExecutionAware, "present", "absent", "absent", "nanosecond", 253, 0},
	{"upgraded-backfill.db", models.Activated, models.ShapeExecutionAware, "present", "present", "absent", "nanosecond", 51, 29},
	{"legacy-second-precision.db", models.Activated, models.ShapeExecutionAware, "present", "present", "absent", "second", 16, 0},
	{"pre-feature.db", models.FeatureAbsent, models.ShapeAbsent, "absent", "absent", "absent", "NULL", 0, 0},
	{"execution-since.db", models.Activated, models.ShapeExecutionAware, "present", "none_matched", "present", "nanosecond", 15, 0},
}

func TestRealKandevFixtures(t *testing.T) {
	t.Parallel()
	for _, fx := range fixtures {
		t.Run(strings.TrimSuffix(fx.file, ".db"), func(t *testing.T) {
			t.Parallel()
			path := fixture(t, fx.file)
			wh, _ := extractTo(t, path, "fx")
			db := duck(t, wh)
			src := sourceDB(t, path)

			got := one(t, db, `SELECT activation_state, subagent_table_shape, capture_since_state, backfill_through_state,
				execution_since_state, capture_since_precision, subagent_rows, subagent_rows_backfill FROM installations`)
			counts := fmt.Sprintf("%d|%d", fx.subagents, fx.backfilled)
			if fx.shape == models.ShapeAbsent {
				counts = "NULL|NULL" // no table: unknown, never zero
			}
			want := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s", fx.activation, fx.shape, fx.capture, fx.backfill, fx.execution,
				fx.precision, counts)
			if got != want {
				t.Errorf("installation state = %s, want %s", got, want)
			}
			// Raw keys verbatim.
			for _, k := range []struct{ col, key string }{
				{"capture_since_raw", models.KeyCaptureSince}, {"backfill_through_raw", models.KeyBackfillThrough},
				{"execution_since_raw", models.KeyExecutionSince}} {
				wantRaw := rowsOf(t, src, `SELECT value FROM kandev_meta WHERE key = ?`, k.key)
				gotRaw := rowsOf(t, db, `SELECT `+k.col+` FROM installations WHERE `+k.col+` IS NOT NULL`)
				equalSets(t, k.col, gotRaw, wantRaw)
			}

			feature := fx.shape != models.ShapeAbsent
			if feature {
				equalSets(t, "capture windows", rowsOf(t, db, `SELECT capture_window, count(*) FROM subagent_contexts GROUP BY 1`), expectedWindows(t, src))
				equalSets(t, "execution identities", rowsOf(t, db, `SELECT execution_identity, count(*) FROM subagent_contexts GROUP BY 1`), expectedIdentities(t, src))
				// The sentinel is never an execution.
				equalSets(t, "distinct executions",
					rowsOf(t, db, `SELECT count(DISTINCT execution_id) FROM subagent_contexts`),
					rowsOf(t, src, `SELECT count(DISTINCT agent_execution_id) FROM task_session_subagents WHERE agent_execution_id <> 'unknown'`))
				// Terminality from tool_status only (AC-11).
				equalSets(t, "terminal rows",
					rowsOf(t, db, `SELECT count(*) FROM subagent_contexts WHERE is_terminal`),
					rowsOf(t, src, `SELECT count(*) FROM task_session_subagents WHERE tool_status IN ('complete','completed','success','error','failed','cancelled')`))
				// Metrics never 0-filled (AC-7).
				equalSets(t, "NULL metrics",
					rowsOf(t, db, `SELECT count(*) FILTER (WHERE total_tokens IS NULL), count(*) FILTER (WHERE tool_use_count IS NULL), count(*) FILTER (WHERE duration_ms IS NULL) FROM subagent_contexts`),
					rowsOf(t, src, `SELECT count(*) FILTER (WHERE total_tokens IS NULL), count(*) FILTER (WHERE tool_use_count IS NULL), count(*) FILTER (WHERE duration_ms IS NULL) FROM task_session_subagents`))
			} else {
				if n := one(t, db, `SELECT count(*) FROM subagent_contexts`); n != "0" {
					t.Errorf("feature absent but %s fact rows", n)
				}
			}
			equalSets(t, "fan-out by turn",
				rowsOf(t, db, `SELECT turn_id, subagents_observed, subagents_observed_live, subagents_observed_backfill, fanout, fanout_completeness FROM fanout_by_turn`),
				expectedFanout(t, src, "task_session_turns", "turn_id", feature))
			equalSets(t, "fan-out by session",
				rowsOf(t, db, `SELECT session_id, subagents_observed, subagents_observed_live, subagents_observed_backfill, fanout, fanout_completeness FROM fanout_by_session`),
				expectedFanout(t, src, "task_sessions", "task_session_id", feature))
			// dim_session is exactly task_sessions.
			equalSets(t, "dim_session ids", rowsOf(t, db, `SELECT session_id FROM dim_session`), rowsOf(t, src, `SELECT id FROM task_sessions`))
			if n := one(t, db, `SELECT count(*) FROM rejects`); n != "0" {
				t.Errorf("%s rejects on a store Kandev wrote", n)
			}
		})
	}
}
