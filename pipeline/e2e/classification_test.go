package e2e_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/models"
)

// The spec's discriminating cases, each on a real Kandev store (copied and,
// where the case needs it, changed with plain SQL).

func windowOf(t *testing.T, db *sql.DB, id string) string {
	return one(t, db, `SELECT capture_window || '|' || capture_boundary_ambiguous FROM subagent_contexts WHERE subagent_id = ?`, id)
}

func TestOneMicrosecondBoundary(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	ids := rowsOf(t, src, `SELECT id FROM task_session_subagents ORDER BY id LIMIT 3`)
	sqliteExec(t, path,
		`UPDATE kandev_meta SET value = '2026-08-04T10:00:00.123456Z' WHERE key = 'subagent_context_capture_since'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123455+00:00' WHERE id = '`+ids[0]+`'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123456+00:00' WHERE id = '`+ids[1]+`'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123457+00:00' WHERE id = '`+ids[2]+`'`,
	)
	wh, _ := extractTo(t, path, "us")
	db := duck(t, wh)
	for i, want := range []string{"before_capture|false", "after_capture|false", "after_capture|false"} {
		if got := windowOf(t, db, ids[i]); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
}

func TestSecondPrecisionKeyAndSameDayRows(t *testing.T) {
	t.Parallel()
	path := fixture(t, "legacy-second-precision.db")
	src := sourceDB(t, path)
	before := one(t, src, `SELECT id FROM task_session_subagents WHERE observed_at = '2026-08-05 09:59:59.999999+00:00'`)
	atKey := one(t, src, `SELECT id FROM task_session_subagents WHERE observed_at = '2026-08-05 10:00:00+00:00'`)
	sameDay := rowsOf(t, src, `SELECT id FROM task_session_subagents WHERE observed_at > '2026-08-05 10:00:01' AND observed_at < '2026-08-06'`)
	if len(sameDay) == 0 {
		t.Fatal("fixture has no same-day rows after the key")
	}
	wh, _ := extractTo(t, path, "legacy")
	db := duck(t, wh)
	if got := windowOf(t, db, before); got != "before_capture|false" {
		t.Errorf("1 µs before the key: %s", got)
	}
	if got := windowOf(t, db, atKey); got != "after_capture|true" {
		t.Errorf("exactly at a second-precision key: %s, want after_capture and flagged ambiguous", got)
	}
	for _, id := range sameDay {
		if got := windowOf(t, db, id); got != "after_capture|false" {
			t.Errorf("same-day row %s after the key: %s", id, got)
		}
	}
	if got := one(t, db, `SELECT count FROM disclosures WHERE rule = 'second_precision_boundary'`); got != "1" {
		t.Errorf("second_precision_boundary count = %s, want 1", got)
	}
}

func TestEmptyBackfillThroughMeansMatchedNothing(t *testing.T) {
	t.Parallel()
	wh, _ := extractTo(t, fixture(t, "fresh-activated.db"), "fresh")
	db := duck(t, wh)
	got := rowsOf(t, db, `SELECT rule FROM disclosures`)
	// rows_beyond_tool_calls: one turn's tool call has live rows of two
	// executions (TestCollisionIsALowerBound).
	want := []string{"backfill_matched_nothing", "capture_boundary", "execution_ids_trusted", "rows_beyond_tool_calls", "unmeasured_usage", "unrecorded_execution", "writer_health"}
	equalSets(t, "rules", got, want)
	if got := one(t, db, `SELECT activation_state || '|' || backfill_through_state || '|' || (backfill_through IS NULL) FROM installations`); got != "activated|none_matched|true" {
		t.Errorf("installation = %s", got)
	}
}

func TestUnparseableCaptureKey(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	sqliteExec(t, path, `UPDATE kandev_meta SET value = '2026-08-03 15:00:00' WHERE key = 'subagent_context_capture_since'`)
	wh, _ := extractTo(t, path, "bad-key")
	db := duck(t, wh)
	if got := one(t, db, `SELECT activation_state || '|' || capture_since_state || '|' || capture_since_raw || '|' || (capture_since IS NULL) FROM installations`); got != "not_activated|unparseable|2026-08-03 15:00:00|true" {
		t.Errorf("installation = %s", got)
	}
	if got := rowsOf(t, db, `SELECT DISTINCT capture_window FROM subagent_contexts`); strings.Join(got, ",") != "no_boundary" {
		t.Errorf("windows = %v, want only no_boundary", got)
	}
	if got := one(t, db, `SELECT count(*) FROM fanout_by_turn WHERE fanout_completeness = 'complete' OR fanout IS NOT NULL`); got != "0" {
		t.Errorf("%s turns complete without a boundary", got)
	}
	text := one(t, db, `SELECT text FROM disclosures WHERE rule = 'key_unparseable'`)
	if !strings.Contains(text, `"2026-08-03 15:00:00"`) || !strings.Contains(text, "not treated as absent") {
		t.Errorf("key_unparseable text = %s", text)
	}
	if got := one(t, db, `SELECT count(*) FROM disclosures WHERE rule = 'no_capture_boundary'`); got != "1" {
		t.Error("no_capture_boundary disclosure missing")
	}
}

func TestPartialKeyPair(t *testing.T) {
	t.Parallel()
	wh, _ := extractTo(t, fixture(t, "capture-only.db"), "partial")
	db := duck(t, wh)
	if got := one(t, db, `SELECT count(*) FROM disclosures WHERE rule = 'partial_key_pair'`); got != "1" {
		t.Error("partial_key_pair disclosure missing")
	}
	// capture_since still bounds completeness (169 of 170 turns: the other
	// has two live rows of one tool call, a collision, and is a lower bound).
	if got := one(t, db, `SELECT count(*) FROM fanout_by_turn WHERE fanout_completeness = 'complete'`); got != "169" {
		t.Errorf("complete turns = %s, want 169", got)
	}
}

func TestAsyncLaunchedMetricsStayNullEndToEnd(t *testing.T) {
	t.Parallel()
	path := fixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	want := one(t, src, `SELECT count(*) FROM task_session_subagents WHERE agent_status = 'async_launched'`)
	if want == "0" {
		t.Fatal("fixture has no async_launched rows")
	}
	wh, _ := extractTo(t, path, "async")
	// Parquet, read back by DuckDB.
	pq := memDuck(t)
	glob := filepath.Join(wh, "fact_subagent_context", "*", "*", "*.parquet")
	got := one(t, pq, `SELECT count(*) FILTER (WHERE total_tokens IS NULL AND tool_use_count IS NULL AND duration_ms IS NULL AND NOT is_measured) || '|' ||
		count(*) FILTER (WHERE total_tokens = 0 OR tool_use_count = 0 OR duration_ms = 0)
		FROM read_parquet('`+glob+`') WHERE agent_status = 'async_launched'`)
	if got != want+"|0" {
		t.Errorf("parquet async rows (all NULL | any zero) = %s, want %s|0", got, want)
	}
	// DuckDB views: averages over measured rows only.
	db := duck(t, wh)
	gotAvg := one(t, db, `SELECT round(sum(avg_total_tokens * rows_with_tokens) / sum(rows_with_tokens), 6) FROM subagent_usage`)
	wantAvg := one(t, src, `SELECT round(avg(total_tokens), 6) FROM task_session_subagents`)
	if gotAvg != wantAvg {
		t.Errorf("average tokens = %s, want %s (over reported rows only)", gotAvg, wantAvg)
	}
	if got := one(t, db, `SELECT sum(unmeasured_rows) FROM subagent_usage`); got != "196" {
		t.Errorf("unmeasured rows = %s, want 196", got)
	}
}

func TestReportedZeroToolUseCount(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	id := one(t, src, `SELECT id FROM task_session_subagents WHERE agent_status = 'completed' ORDER BY id LIMIT 1`)
	sqliteExec(t, path, `UPDATE task_session_subagents SET tool_use_count = 0 WHERE id = '`+id+`'`)
	wh, _ := extractTo(t, path, "zero")
	db := duck(t, wh)
	if got := one(t, db, `SELECT tool_use_count || '|' || is_measured FROM subagent_contexts WHERE subagent_id = ?`, id); got != "0|true" {
		t.Errorf("reported zero = %s, want 0|true", got)
	}
	gotAvg := one(t, db, `SELECT round(sum(avg_tool_use_count * rows_with_tool_use_count) / sum(rows_with_tool_use_count), 6) FROM subagent_usage`)
	wantAvg := one(t, src, `SELECT round(avg(tool_use_count), 6) FROM task_session_subagents`)
	if gotAvg != wantAvg {
		t.Errorf("average tool uses = %s, want %s (the zero counts)", gotAvg, wantAvg)
	}
}

func TestUnknownRowsAreNeverOneExecution(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	sess := one(t, src, `SELECT task_session_id FROM task_session_subagents GROUP BY 1 HAVING count(*) >= 2 ORDER BY 1 LIMIT 1`)
	n := one(t, src, `SELECT count(*) FROM task_session_subagents WHERE task_session_id = ?`, sess)
	sqliteExec(t, path, `UPDATE task_session_subagents SET agent_execution_id = 'unknown' WHERE task_session_id = '`+sess+`'`)
	wh, _ := extractTo(t, path, "unknown")
	db := duck(t, wh)
	got := one(t, db, `SELECT coalesce(recorded_executions::VARCHAR, 'NULL') || '|' || executions_completeness || '|' || rows_unrecorded_live || '|' || subagent_rows
		FROM execution_identity_by_session WHERE session_id = ?`, sess)
	if want := "NULL|unknown|" + n + "|" + n; got != want {
		t.Errorf("session with only sentinel rows = %s, want %s", got, want)
	}
	equalSets(t, "distinct executions",
		rowsOf(t, db, `SELECT count(DISTINCT execution_id) FROM subagent_contexts`),
		rowsOf(t, src, `SELECT count(DISTINCT agent_execution_id) FROM task_session_subagents WHERE agent_execution_id <> 'unknown'`))
	if got := one(t, db, `SELECT count(*) FROM subagent_contexts WHERE execution_id = 'unknown'`); got != "0" {
		t.Errorf("%s rows carry the sentinel as an execution id", got)
	}
}

func TestCrossExecutionCollisionIsTwoExecutions(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	row := strings.Split(one(t, src, `SELECT id || '|' || task_session_id || '|' || tool_call_id FROM task_session_subagents
		WHERE agent_execution_id <> 'unknown' ORDER BY id LIMIT 1`), "|")
	id, sess, tc := row[0], row[1], row[2]
	before := one(t, src, `SELECT count(DISTINCT agent_execution_id) FROM task_session_subagents WHERE task_session_id = ? AND agent_execution_id <> 'unknown'`, sess)
	sqliteExec(t, path, `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
			subagent_type, agent_status, tool_status, is_async, source, observed_at, settled_at, updated_at)
		SELECT 'collision-row', task_session_id, task_id, turn_id, tool_call_id, '11111111-2222-4333-8444-555555555555',
			subagent_type, agent_status, tool_status, is_async, 'live', observed_at, settled_at, updated_at
		FROM task_session_subagents WHERE id = '`+id+`'`)
	wh, _ := extractTo(t, path, "collision")
	db := duck(t, wh)
	if got := one(t, db, `SELECT count(*) || '|' || count(DISTINCT execution_id) FROM subagent_contexts WHERE task_session_id = ? AND tool_call_id = ?`, sess, tc); got != "2|2" {
		t.Errorf("collision rows|executions = %s, want 2|2", got)
	}
	var b int
	if _, err := fmtSscan(before, &b); err != nil {
		t.Fatal(err)
	}
	if got := one(t, db, `SELECT recorded_executions FROM execution_identity_by_session WHERE session_id = ?`, sess); got != itoa(b+1) {
		t.Errorf("recorded executions = %s, want %d", got, b+1)
	}
}

func TestBackfillRowMergedByLiveFrameStaysBackfill(t *testing.T) {
	t.Parallel()
	path := fixture(t, "upgraded-backfill.db")
	src := sourceDB(t, path)
	merged := rowsOf(t, src, `SELECT id FROM task_session_subagents WHERE source = 'backfill' AND `+normCol("updated_at")+` >= `+normKey(keyC))
	if len(merged) == 0 {
		t.Fatal("fixture has no backfill row touched after capture_since")
	}
	wh, _ := extractTo(t, path, "merged")
	db := duck(t, wh)
	for _, id := range merged {
		if got := one(t, db, `SELECT source || '|' || execution_identity || '|' || (execution_id IS NULL) FROM subagent_contexts WHERE subagent_id = ?`, id); got != "backfill|unrecorded_backfill|true" {
			t.Errorf("merged backfill row %s = %s", id, got)
		}
	}
	if got := one(t, db, `SELECT count FROM disclosures WHERE rule = 'backfill_provenance'`); got != "29" {
		t.Errorf("backfill_provenance count = %s, want 29", got)
	}
}

func TestPreFeatureStore(t *testing.T) {
	t.Parallel()
	wh, _ := extractTo(t, fixture(t, "pre-feature.db"), "old")
	db := duck(t, wh)
	// No session is ever exact; those with subagent-task messages are lower
	// bounds from the messages, the others unknown (never zero).
	withMessages := one(t, sourceDB(t, fixture(t, "pre-feature.db")), `SELECT count(DISTINCT task_session_id) FROM task_session_messages
		WHERE json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task' AND coalesce(json_extract(metadata, '$.tool_call_id'), '') <> ''`)
	if got := one(t, db, `SELECT count(*) FILTER (WHERE fanout IS NOT NULL OR fanout_completeness = 'complete') || '|' || count(*) FILTER (WHERE fanout_completeness = 'lower_bound' AND messages_expected > 0) || '|' || count(*) FROM fanout_by_session`); got != "0|"+withMessages+"|12" {
		t.Errorf("sessions exact | lower bound from messages | all = %s, want 0|%s|12", got, withMessages)
	}
	equalSets(t, "rules", rowsOf(t, db, `SELECT rule FROM disclosures`), []string{"feature_absent", "messages_lower_bound"})
	if got := one(t, db, `SELECT status || '|' || evaluated || '|' || (shortfall IS NULL) FROM writer_health`); got != "feature_absent|false|true" {
		t.Errorf("health = %s", got)
	}
}

func TestPreAmendmentShape(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	sqliteExec(t, path, preAmendment...) // reasons_test.go
	// The fixture holds a cross-execution collision, which the two-column key
	// cannot: one of its rows is dropped.
	n := one(t, sourceDB(t, path), `SELECT count(*) FROM task_session_subagents`)
	wh, _ := extractTo(t, path, "pre-amendment")
	db := duck(t, wh)
	if got := one(t, db, `SELECT subagent_table_shape FROM installations`); got != "pre_amendment" {
		t.Errorf("shape = %s", got)
	}
	if got := rowsOf(t, db, `SELECT execution_identity, count(*), count(execution_id) FROM subagent_contexts GROUP BY 1`); strings.Join(got, ",") != "not_recorded|"+n+"|0" {
		t.Errorf("identities = %v, want all %s not_recorded with no execution_id", got, n)
	}
	if got := one(t, db, `SELECT count(*) FROM execution_identity_by_session WHERE recorded_executions IS NOT NULL`); got != "0" {
		t.Errorf("%s sessions claim recorded executions", got)
	}
	if got := one(t, db, `SELECT count FROM disclosures WHERE rule = 'pre_amendment_shape'`); got != n {
		t.Errorf("pre_amendment_shape count = %s", got)
	}
}

func TestParquetTypesValuesAndProvenance(t *testing.T) {
	t.Parallel()
	path := fixture(t, "upgraded-backfill.db")
	src := sourceDB(t, path)
	wh, res := extractTo(t, path, "pq")
	pq := memDuck(t)
	file := filepath.Join(wh, "fact_subagent_context", "installation_id=pq", "run_id="+res.RunID, "part-0.parquet")
	// Timestamps are TIMESTAMP(MICROS, UTC); no unsigned types anywhere.
	got := rowsOf(t, pq, `SELECT name, logical_type FROM parquet_schema('`+file+`') WHERE name IN ('observed_at', 'settled_at', 'updated_at', 'capture_since')`)
	for _, g := range got {
		if !strings.Contains(g, "isAdjustedToUTC=1") || !strings.Contains(g, "MICROS=MicroSeconds()") {
			t.Errorf("timestamp column %s is not TIMESTAMP(MICROS, UTC)", g)
		}
	}
	if len(got) != 4 {
		t.Errorf("timestamp columns = %v", got)
	}
	if got := one(t, pq, `SELECT count(*) FROM parquet_schema('`+filepath.Join(wh, "*", "*", "*", "*.parquet")+`') WHERE converted_type LIKE 'UINT%' OR logical_type LIKE '%isSigned=0%'`); got != "0" {
		t.Errorf("%s unsigned columns", got)
	}
	// Values: observed_at is the source instant truncated to microseconds.
	equalSets(t, "observed_at values",
		rowsOf(t, pq, `SELECT subagent_id, strftime(observed_at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') FROM read_parquet('`+file+`')`),
		rowsOf(t, src, `SELECT id, substr(`+normCol("observed_at")+`, 1, 10) || ' ' || substr(`+normCol("observed_at")+`, 12, 15) FROM task_session_subagents`))
	// Provenance in the file's key-value metadata.
	doc := one(t, pq, `SELECT decode(value) FROM parquet_kv_metadata('`+file+`') WHERE decode(key) = 'kandev_extract.provenance'`)
	var p models.Provenance
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	if p.RunID != res.RunID || p.InstallationID != "pq" || p.KandevVersion == nil || *p.KandevVersion != "dev" ||
		p.Tables["fact_subagent_context"].RowsWritten != 51 || p.Tables["dim_session"].RowsRead != 20 ||
		p.RawKeys[models.KeyBackfillThrough] == nil || *p.RawKeys[models.KeyBackfillThrough] != "2026-08-12T19:40:58.661138398Z" ||
		p.RawKeys[models.KeyExecutionSince] != nil || p.Format != models.ProvenanceFormat || p.SchemaVersion != models.SchemaVersion {
		t.Errorf("provenance = %s", doc)
	}
	if hw := p.Tables["fact_subagent_context"].HighWater; hw == nil || hw.IsZero() {
		t.Error("no high water for the fact")
	}
	// Hive-style partitions, no data file starting with _ or .
	filepath.Walk(wh, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(wh, p)
			parts := strings.Split(rel, string(filepath.Separator))
			if parts[0] == "current" { // current/<table>/installation_id=<i>/part-0.parquet
				parts = append(parts[1:3], "run_id=current", parts[3])
			}
			if len(parts) != 4 || !strings.HasPrefix(parts[1], "installation_id=") || !strings.HasPrefix(parts[2], "run_id=") ||
				strings.HasPrefix(parts[3], "_") || strings.HasPrefix(parts[3], ".") {
				t.Errorf("unexpected data file layout %s", rel)
			}
		}
		return nil
	})
}

func TestStoreHeldOpenByAWALWriter(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	w, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
		SELECT 'wal-row', task_session_id, task_id, turn_id, 'toolu_wal', agent_execution_id, 'live', '2026-08-20 00:00:00+00:00', '2026-08-20 00:00:00+00:00'
		FROM task_session_subagents LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("writer is not in WAL mode: %v", err)
	}
	// A transaction still open in the writer is not visible, the commit is.
	tx, err := w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM task_session_subagents WHERE id = 'wal-row'`); err != nil {
		t.Fatal(err)
	}
	wh, _ := extractTo(t, path, "wal")
	tx.Rollback()
	db := duck(t, wh)
	if got := one(t, db, `SELECT count(*) FROM subagent_contexts`); got != "254" {
		t.Errorf("rows = %s, want 254 (253 + the committed WAL row)", got)
	}
}

// TestCollisionIsALowerBound: a turn whose tool call has live rows of two
// executions (AC-32; the real fixture has one) is a lower bound, never an
// exact count of its rows, and so is its session; the disclosure counts
// both, as the source's rows say.
func TestCollisionIsALowerBound(t *testing.T) {
	t.Parallel()
	path := fixture(t, "fresh-activated.db")
	wh, _ := extractTo(t, path, "collision")
	db := duck(t, wh)
	src := sourceDB(t, path)
	collided := func(key string) string {
		return one(t, src, `SELECT count(DISTINCT `+key+`) FROM (SELECT `+key+` FROM task_session_subagents WHERE source = 'live' AND `+key+` IS NOT NULL
			GROUP BY `+key+`, tool_call_id HAVING count(*) > 1)`)
	}
	turns, sessions := collided("turn_id"), collided("task_session_id")
	if turns != "1" || sessions != "1" {
		t.Fatalf("the fixture has %s turns and %s sessions with a collision, want 1 and 1", turns, sessions)
	}
	if got := one(t, db, `SELECT subagents_observed || '|' || distinct_tool_calls || '|' || coalesce(fanout::VARCHAR, 'NULL') || '|' || fanout_completeness || '|' || fanout_lower_bound
		FROM fanout_by_turn WHERE subagents_observed - live_backfill_overlap > distinct_tool_calls`); got != "2|1|NULL|lower_bound|1" {
		t.Errorf("the collided turn = %s, want 2|1|NULL|lower_bound|1", got)
	}
	if got := one(t, db, `SELECT count(*) FROM fanout_by_session WHERE subagents_observed - live_backfill_overlap > distinct_tool_calls AND fanout IS NULL AND fanout_completeness = 'lower_bound'`); got != "1" {
		t.Errorf("%s collided sessions are lower bounds, want 1", got)
	}
	if got := one(t, db, `SELECT count || '|' || (text LIKE '1 turn (1 session) holds more subagent rows than distinct tool calls%') FROM disclosures WHERE rule = 'rows_beyond_tool_calls'`); got != "1|true" {
		t.Errorf("rows_beyond_tool_calls disclosure = %s", got)
	}
}

// TestRowWithoutToolCallIsALowerBound: a row whose tool_call_id is empty
// (AC-2 writes none) cannot be told from the turn's other invocation, so
// the complete turn it joins becomes a lower bound at its distinct tool
// calls — and the disclosure names such rows, not only collisions.
func TestRowWithoutToolCallIsALowerBound(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	turnOf := `(SELECT turn_id FROM task_session_subagents WHERE source = 'live' AND turn_id IS NOT NULL GROUP BY turn_id HAVING count(*) = 1 ORDER BY turn_id LIMIT 1)`
	turn := one(t, sourceDB(t, path), `SELECT `+turnOf)
	sqliteExec(t, path, `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
		SELECT 'no-tool-call', task_session_id, task_id, turn_id, '', 'exec-no-tool-call', 'live', observed_at, updated_at
		FROM task_session_subagents WHERE turn_id = '`+turn+`'`)
	wh, _ := extractTo(t, path, "no-tool-call")
	db := duck(t, wh)
	if got := one(t, db, `SELECT subagents_observed || '|' || distinct_tool_calls || '|' || coalesce(fanout::VARCHAR, 'NULL') || '|' || fanout_completeness || '|' || fanout_lower_bound
		FROM fanout_by_turn WHERE turn_id = '`+turn+`'`); got != "2|1|NULL|lower_bound|1" {
		t.Errorf("the turn with a row without a tool call = %s, want 2|1|NULL|lower_bound|1", got)
	}
	// The fixture's collided turn, and this one.
	if got := one(t, db, `SELECT count || '|' || (text LIKE '%a row whose tool_call_id is empty or unreadable%') FROM disclosures WHERE rule = 'rows_beyond_tool_calls'`); got != "2|true" {
		t.Errorf("rows_beyond_tool_calls disclosure = %s", got)
	}
}

// TestUnreportedDescriptorsAreNull pins what the catalog says of the
// reported descriptors: agent_id, child_session_id, agent_status (and
// subagent_type, model) are NULL when not reported, NULL or empty in the
// source; tool_status is NULL when the source has none and an empty status
// is kept verbatim, never terminal.
func TestUnreportedDescriptorsAreNull(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	ids := strings.Split(one(t, src, `SELECT group_concat(id, '|') FROM (SELECT id FROM task_session_subagents
		WHERE agent_status IS NOT NULL ORDER BY id LIMIT 2)`), "|")
	if len(ids) != 2 {
		t.Fatalf("fixture rows: %v", ids)
	}
	sqliteExec(t, path,
		`UPDATE task_session_subagents SET agent_id = '', child_session_id = '', agent_status = '', subagent_type = '', model = '', tool_status = NULL WHERE id = '`+ids[0]+`'`,
		`UPDATE task_session_subagents SET agent_id = NULL, child_session_id = NULL, agent_status = NULL, subagent_type = NULL, model = NULL, tool_status = '' WHERE id = '`+ids[1]+`'`)
	wh, _ := extractTo(t, path, "unreported")
	db := duck(t, wh)
	const q = `SELECT concat_ws('|', coalesce(agent_id, 'NULL'), coalesce(child_session_id, 'NULL'), coalesce(agent_status, 'NULL'),
			coalesce(subagent_type, 'NULL'), coalesce(model, 'NULL'), coalesce('[' || tool_status || ']', 'NULL'), is_terminal)
		FROM subagent_contexts WHERE subagent_id = ?`
	for i, want := range []string{"NULL|NULL|NULL|NULL|NULL|NULL|false", "NULL|NULL|NULL|NULL|NULL|[]|false"} {
		if got := one(t, db, q, ids[i]); got != want {
			t.Errorf("row %d (%s): %s, want %s", i, ids[i], got, want)
		}
	}
}
