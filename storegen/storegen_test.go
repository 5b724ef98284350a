package storegen

import (
	"bytes"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite testdata/demo/kandev-demo.db from DemoOptions()")

const checkedInDemo = "../testdata/demo/kandev-demo.db"

// The demo's activation keys, exact stored text.
const (
	wantCaptureSince    = "2026-08-07T12:00:00.123456789Z"
	wantBackfillThrough = "2026-08-07T09:37:45.168225545Z"
	captureSinceMattn   = "2026-08-07 12:00:00.123456789+00:00" // same instant as stored in TIMESTAMP columns
)

func generateTo(t *testing.T, o Options) (string, Stats) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kandev.db")
	st, err := Generate(context.Background(), path, o)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return path, st
}

func qInt(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	return n.Int64
}

func qStr(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	return s.String
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestTimestampText(t *testing.T) {
	for _, c := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 8, 5, 9, 59, 59, 999999000, time.UTC), "2026-08-05 09:59:59.999999+00:00"},
		{time.Date(2026, 8, 5, 10, 0, 0, 0, time.UTC), "2026-08-05 10:00:00+00:00"},
		{time.Date(2026, 11, 30, 6, 13, 38, 331223024, time.UTC), "2026-11-30 06:13:38.331223024+00:00"},
		{time.Date(2026, 8, 5, 12, 0, 0, 500000000, time.FixedZone("x", 2*3600)), "2026-08-05 10:00:00.5+00:00"},
	} {
		eq(t, "ts", ts(c.in), c.want)
	}
	eq(t, "keyText", keyText(time.Date(2026, 8, 3, 15, 0, 0, 123456789, time.UTC)), "2026-08-03T15:00:00.123456789Z")
}

func TestDemoPopulation(t *testing.T) {
	path, st := generateTo(t, DemoOptions())
	db := testkit.SourceDB(t, path)

	// Sizes.
	d := DemoOptions()
	for table, want := range map[string]int{
		"tasks": d.Sessions, "task_sessions": d.Sessions, "task_session_turns": d.Turns,
		"task_session_messages": d.Messages, "task_session_subagents": refSubagents, "task_session_prompt_seq": d.Sessions,
		"task_step_transitions": d.Sessions, "workspaces": 1, "workflows": 1, "workflow_steps": 4, "kandev_meta": 5,
	} {
		eq(t, "rows in "+table, qInt(t, db, "SELECT COUNT(*) FROM "+table), int64(want))
		eq(t, "Stats.Rows["+table+"]", st.Rows[table], int64(want))
	}
	if st.Bytes >= 2_000_000 {
		t.Errorf("demo store is %d bytes, want < 2,000,000", st.Bytes)
	}

	// The reference population.
	eq(t, "subagent sessions", qInt(t, db, "SELECT COUNT(DISTINCT task_session_id) FROM task_session_subagents"), 38)
	eq(t, "subagent turns", qInt(t, db, "SELECT COUNT(DISTINCT turn_id) FROM task_session_subagents"), 127)
	eq(t, "rows without turn", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE turn_id IS NULL OR turn_id = ''"), 0)
	rows, err := db.Query("SELECT n, COUNT(*) FROM (SELECT COUNT(*) AS n FROM task_session_subagents GROUP BY turn_id) GROUP BY n")
	if err != nil {
		t.Fatal(err)
	}
	fan := map[int]int{}
	for rows.Next() {
		var n, c int
		if err := rows.Scan(&n, &c); err != nil {
			t.Fatal(err)
		}
		fan[n] = c
	}
	rows.Close()
	eq(t, "fan-out distribution", fmt.Sprint(fan), fmt.Sprint(refFanout))

	type statusRow struct {
		n, isAsync, agentID, child, model, tokens, uses, dur, settled, stype int64
		toolStatus                                                           string
	}
	status := func(where string) statusRow {
		var r statusRow
		q := `SELECT COUNT(*), COALESCE(SUM(is_async),0), COUNT(agent_id), COUNT(child_session_id), COUNT(model),
			COUNT(total_tokens), COUNT(tool_use_count), COUNT(duration_ms), COUNT(settled_at), COUNT(subagent_type),
			COALESCE(GROUP_CONCAT(DISTINCT tool_status), '')
			FROM task_session_subagents WHERE ` + where
		if err := db.QueryRow(q).Scan(&r.n, &r.isAsync, &r.agentID, &r.child, &r.model, &r.tokens, &r.uses, &r.dur, &r.settled, &r.stype, &r.toolStatus); err != nil {
			t.Fatal(err)
		}
		return r
	}
	eq(t, "async_launched", status("agent_status = 'async_launched'"),
		statusRow{n: 190, isAsync: 190, agentID: 190, model: 190, settled: 190, stype: 190, toolStatus: "complete"})
	eq(t, "completed", status("agent_status = 'completed'"),
		statusRow{n: 57, agentID: 57, model: 49, tokens: 57, uses: 57, dur: 57, settled: 57, stype: 57, toolStatus: "completed"})
	eq(t, "started", status("agent_status = 'started'"),
		statusRow{n: 5, child: 5, stype: 3, toolStatus: "in_progress"})
	eq(t, "no agent_status", status("agent_status IS NULL"),
		statusRow{n: 1, settled: 1, toolStatus: "failed"})
	eq(t, "async rows with any metric (AC-7: NULL, never 0)",
		qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE agent_status='async_launched' AND (total_tokens IS NOT NULL OR tool_use_count IS NOT NULL OR duration_ms IS NOT NULL)"), 0)
	eq(t, "metric zeros other than tool_use_count",
		qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE total_tokens = 0 OR duration_ms = 0"), 0)
	eq(t, "real tool_use_count = 0", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE tool_use_count = 0"), 2)
	eq(t, "subagent_type NULL", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE subagent_type IS NULL"), 3)
	eq(t, "max total_tokens within reference", qInt(t, db, "SELECT MAX(total_tokens) <= 275717 FROM task_session_subagents"), 1)
	for _, c := range []string{"turn_id", "parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model", "agent_status", "tool_status"} {
		eq(t, "empty-string "+c, qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE "+c+" = ''"), 0)
	}
	eq(t, "nested rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE parent_tool_call_id IS NOT NULL"), 1)
	eq(t, "nested rows with a parent row in the same session", qInt(t, db, `SELECT COUNT(*) FROM task_session_subagents c
		JOIN task_session_subagents p ON p.task_session_id = c.task_session_id AND p.tool_call_id = c.parent_tool_call_id AND p.id <> c.id`), 1)
	eq(t, "observed_at min", qStr(t, db, "SELECT MIN(observed_at) FROM task_session_subagents")[:19], "2026-08-03 15:32:20")
	eq(t, "observed_at max", qStr(t, db, "SELECT MAX(observed_at) FROM task_session_subagents")[:19], "2026-08-12 13:24:58")

	// Upgraded installation: keys, provenance, execution identity.
	meta := map[string]string{}
	mrows, err := db.Query("SELECT key, value FROM kandev_meta")
	if err != nil {
		t.Fatal(err)
	}
	for mrows.Next() {
		var k, v string
		if err := mrows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		meta[k] = v
	}
	mrows.Close()
	eq(t, "kandev_meta", fmt.Sprint(meta), fmt.Sprint(map[string]string{
		KeyCaptureSince:    wantCaptureSince,
		KeyBackfillThrough: wantBackfillThrough,
		KeyKandevVersion:   "dev",
		KeySchemaInit:      "2026-07-21T08:14:09Z",
		KeyCommitCapture:   "2026-07-21T08:14:09.277150467Z",
	}))
	eq(t, "Stats.Meta", fmt.Sprint(st.Meta), fmt.Sprint(meta))
	// backfill_through is the created_at of the newest qualifying message before capture_since.
	newest := qStr(t, db, `SELECT MAX(created_at) FROM task_session_messages
		WHERE type = 'tool_call' AND json_extract(metadata, '$.normalized.kind') = 'subagent_task' AND created_at < ?`, captureSinceMattn)
	bt, err := time.Parse(mattnLayout, newest)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "backfill_through instant", keyText(bt), wantBackfillThrough)

	eq(t, "backfill rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE source = 'backfill'"), 93)
	eq(t, "live rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE source = 'live'"), 160)
	eq(t, "Stats backfill/live/unknown/collision", fmt.Sprint(st.BackfillRows, st.LiveRows, st.UnknownLiveRows, st.CollisionRows), "93 160 3 1")
	eq(t, "backfill rows not 'unknown' or not before capture", qInt(t, db,
		"SELECT COUNT(*) FROM task_session_subagents WHERE source = 'backfill' AND (agent_execution_id <> 'unknown' OR observed_at >= ?)", captureSinceMattn), 0)
	eq(t, "live rows observed before capture", qInt(t, db,
		"SELECT COUNT(*) FROM task_session_subagents WHERE source = 'live' AND observed_at < ?", captureSinceMattn), 0)
	eq(t, "live 'unknown' rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE source = 'live' AND agent_execution_id = 'unknown'"), 3)
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	forEachString(t, db, "SELECT agent_execution_id FROM task_session_subagents WHERE agent_execution_id <> 'unknown'", func(s string) {
		if !uuidRE.MatchString(s) {
			t.Errorf("agent_execution_id %q is neither 'unknown' nor a UUID", s)
		}
	})
	eq(t, "cross-execution collisions", qInt(t, db, `SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id
		FROM task_session_subagents GROUP BY 1, 2
		HAVING COUNT(*) = 2 AND COUNT(DISTINCT agent_execution_id) = 2 AND SUM(agent_execution_id = 'unknown') = 0)`), 1)
	eq(t, "rows minus distinct keys", qInt(t, db, `SELECT COUNT(*) - (SELECT COUNT(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM task_session_subagents)) FROM task_session_subagents`), 1)

	// Sessions and turns without subagents, on both sides of capture_since.
	eq(t, "sessions without subagents before capture", qInt(t, db, `SELECT COUNT(*) FROM task_sessions s WHERE started_at < ?
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents a WHERE a.task_session_id = s.id)`, captureSinceMattn), 3)
	eq(t, "sessions without subagents after capture", qInt(t, db, `SELECT COUNT(*) FROM task_sessions s WHERE started_at >= ?
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents a WHERE a.task_session_id = s.id)`, captureSinceMattn), 5)
	if n := qInt(t, db, `SELECT COUNT(*) FROM task_session_turns t WHERE started_at < ?
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents a WHERE a.turn_id = t.id)`, captureSinceMattn); n == 0 {
		t.Error("no zero-subagent turn before capture_since")
	}
	if n := qInt(t, db, `SELECT COUNT(*) FROM task_session_turns t WHERE started_at >= ?
		AND NOT EXISTS (SELECT 1 FROM task_session_subagents a WHERE a.turn_id = t.id)`, captureSinceMattn); n == 0 {
		t.Error("no zero-subagent turn after capture_since")
	}
	eq(t, "sessions started before capture with live rows (straddling)", qInt(t, db, `SELECT COUNT(DISTINCT s.id) FROM task_sessions s
		JOIN task_session_subagents a ON a.task_session_id = s.id AND a.source = 'live' WHERE s.started_at < ?`, captureSinceMattn), 1)
	eq(t, "turns straddling capture_since", qInt(t, db, `SELECT COUNT(*) FROM task_session_turns WHERE started_at < ?
		AND EXISTS (SELECT 1 FROM task_session_messages m WHERE m.turn_id = task_session_turns.id AND m.created_at >= ?)`, captureSinceMattn, captureSinceMattn), 0)

	// Messages.
	eq(t, "metadata 'null'", qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE metadata = 'null'"), 1)
	eq(t, "metadata ''", qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE metadata = '' OR metadata IS NULL"), 0)
	eq(t, "message metadata indexes", qInt(t, db, `SELECT COUNT(*) FROM sqlite_master
		WHERE name IN ('idx_messages_metadata_tool_call_id', 'idx_messages_metadata_pending_id')`), 2)
	eq(t, "subagent-task messages", qInt(t, db, `SELECT COUNT(*) FROM task_session_messages
		WHERE json_extract(CASE WHEN metadata IN ('', 'null') THEN '{}' ELSE metadata END, '$.normalized.kind') = 'subagent_task'`), 252)
	for _, c := range []struct{ what, where string }{
		{"user prompts", "author_type = 'user' AND type = 'message' AND metadata = '{}' AND prompt_seq > 0"},
		{"agent text", "author_type = 'agent' AND type = 'message' AND metadata LIKE '{\"model\":%'"},
		{"ordinary tool calls", "type IN ('tool_read', 'tool_execute', 'tool_search', 'tool_edit')"},
	} {
		if qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE "+c.where) == 0 {
			t.Errorf("no %s", c.what)
		}
	}
	eq(t, "prompt_seq.last_seq = user prompts", qInt(t, db, `SELECT COUNT(*) FROM task_session_prompt_seq p
		WHERE last_seq <> (SELECT COUNT(*) FROM task_session_messages m WHERE m.task_session_id = p.task_session_id AND m.author_type = 'user')`), 0)
	eq(t, "messages updated before created", qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE updated_at < created_at"), 0)
	eq(t, "turn metadata = task step", qInt(t, db, `SELECT COUNT(*) FROM task_session_turns tu JOIN tasks t ON t.id = tu.task_id
		WHERE tu.metadata <> '{"workflow_step_id_at_start":"' || t.workflow_step_id || '"}'`), 0)
	eq(t, "incomplete turns", qInt(t, db, "SELECT COUNT(*) FROM task_session_turns WHERE completed_at IS NULL"), 1)
	eq(t, "workflow steps without tasks", qInt(t, db, `SELECT COUNT(*) FROM workflow_steps s
		WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.workflow_step_id = s.id)`), 0)
	eq(t, "workflow", qStr(t, db, `SELECT w.name || ':' || GROUP_CONCAT(s.name, ',') FROM workflows w
		JOIN (SELECT * FROM workflow_steps ORDER BY position) s ON s.workflow_id = w.id GROUP BY w.id`), "Development:Backlog,In Progress,Review,Done")

	checkHealthy(t, db, captureSinceMattn)
	checkBackfillDerivation(t, db, captureSinceMattn)
	checkLiveRowsMatchMessages(t, db)
	checkFormat(t, db, path, 1024)
}

// checkHealthy runs the spec's AC-28 shortfall and excess anti-joins.
func checkHealthy(t *testing.T, db *sql.DB, since string) {
	t.Helper()
	const msgCTE = `WITH msg AS (SELECT m.task_session_id, m.task_id, m.created_at,
		(CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' THEN '{}' ELSE m.metadata END) AS meta
		FROM task_session_messages m) `
	eq(t, "AC-28 shortfall", qInt(t, db, msgCTE+`SELECT COUNT(*) FROM (
		SELECT msg.task_session_id, json_extract(msg.meta,'$.tool_call_id') AS tool_call_id FROM msg
		WHERE json_extract(msg.meta,'$.normalized.kind') = 'subagent_task' AND msg.created_at >= ?1
		  AND COALESCE(msg.task_session_id,'') <> '' AND COALESCE(msg.task_id,'') <> ''
		  AND COALESCE(json_extract(msg.meta,'$.tool_call_id'),'') <> '' GROUP BY 1, 2
		EXCEPT SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= ?1) AS shortfall`, since), 0)
	eq(t, "AC-28 excess", qInt(t, db, msgCTE+`SELECT COUNT(*) FROM (
		SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= ?1 GROUP BY 1, 2
		EXCEPT SELECT msg.task_session_id, json_extract(msg.meta,'$.tool_call_id') FROM msg
		WHERE json_extract(msg.meta,'$.normalized.kind') = 'subagent_task' AND msg.created_at >= ?1) AS excess`, since), 0)
	// Every row, live or backfilled, has its message.
	eq(t, "rows without a message", qInt(t, db, msgCTE+`SELECT COUNT(*) FROM (
		SELECT task_session_id, tool_call_id FROM task_session_subagents
		EXCEPT SELECT task_session_id, json_extract(meta,'$.tool_call_id') FROM msg
		WHERE json_extract(meta,'$.normalized.kind') = 'subagent_task')`), 0)
}

// derived selects, per subagent-task message, the columns AC-21 derives.
const derived = `
	SELECT m.task_session_id, m.task_id, NULLIF(m.turn_id, '') AS turn_id,
		json_extract(m.meta, '$.tool_call_id') AS tool_call_id,
		json_extract(m.meta, '$.parent_tool_call_id') AS parent_tool_call_id,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.subagent_type'), '') AS subagent_type,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.description'), '') AS description,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.agent_id'), '') AS agent_id,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.child_session_id'), '') AS child_session_id,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.model'), '') AS model,
		NULLIF(json_extract(m.meta, '$.normalized.subagent_task.status'), '') AS agent_status,
		NULLIF(json_extract(m.meta, '$.status'), '') AS tool_status,
		COALESCE(json_extract(m.meta, '$.normalized.subagent_task.is_async'), 0) AS is_async,
		json_extract(m.meta, '$.normalized.subagent_task.total_tokens') AS total_tokens,
		json_extract(m.meta, '$.normalized.subagent_task.tool_use_count') AS tool_use_count,
		json_extract(m.meta, '$.normalized.subagent_task.duration_ms') AS duration_ms,
		m.created_at, m.updated_at
	FROM (SELECT *, CASE WHEN metadata IS NULL OR metadata IN ('', 'null') THEN '{}' ELSE metadata END AS meta
	      FROM task_session_messages) m
	WHERE json_extract(m.meta, '$.normalized.kind') = 'subagent_task'`

const subCols = `task_session_id, task_id, turn_id, tool_call_id, parent_tool_call_id, subagent_type, description,
	agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms`

// checkBackfillDerivation replays Kandev's AC-21 backfill over the messages
// before capture_since and requires the stored backfill rows to equal it.
func checkBackfillDerivation(t *testing.T, db *sql.DB, since string) {
	t.Helper()
	bf := `SELECT ` + subCols + `, 'unknown', 'backfill', created_at,
		CASE WHEN tool_status IN ('complete','completed','success','error','failed','cancelled') THEN updated_at END, updated_at
		FROM (` + derived + `) WHERE created_at < ?1`
	stored := `SELECT ` + subCols + `, agent_execution_id, source, observed_at, settled_at, updated_at
		FROM task_session_subagents WHERE source = 'backfill'`
	eq(t, "backfill replay minus stored", qInt(t, db, `SELECT COUNT(*) FROM (`+bf+` EXCEPT `+stored+`)`, since), 0)
	eq(t, "stored minus backfill replay", qInt(t, db, `SELECT COUNT(*) FROM (`+stored+` EXCEPT `+bf+`)`, since), 0)
}

// checkLiveRowsMatchMessages: a live row carries what its (final) message says.
func checkLiveRowsMatchMessages(t *testing.T, db *sql.DB) {
	t.Helper()
	eq(t, "live rows not matching their message", qInt(t, db, `SELECT COUNT(*) FROM (
		SELECT `+subCols+` FROM task_session_subagents WHERE source = 'live'
		EXCEPT SELECT `+subCols+` FROM (`+derived+`))`), 0)
	eq(t, "live rows observed before their message", qInt(t, db, `SELECT COUNT(*) FROM task_session_subagents s
		JOIN task_session_messages m ON m.task_session_id = s.task_session_id
		 AND json_extract(CASE WHEN m.metadata IN ('', 'null') THEN '{}' ELSE m.metadata END, '$.tool_call_id') = s.tool_call_id
		WHERE s.source = 'live' AND (s.observed_at <= m.created_at OR s.updated_at < s.observed_at OR s.settled_at < s.observed_at)`), 0)
}

var mattnRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d*[1-9])?\+00:00$`)

// checkFormat checks file-level properties and that every TIMESTAMP value in
// every non-empty table is mattn text.
func checkFormat(t *testing.T, db *sql.DB, path string, pageSize int64) {
	t.Helper()
	eq(t, "integrity_check", qStr(t, db, "PRAGMA integrity_check"), "ok")
	eq(t, "journal_mode", qStr(t, db, "PRAGMA journal_mode"), "delete")
	eq(t, "page_size", qInt(t, db, "PRAGMA page_size"), pageSize)
	eq(t, "Kandev tables", qInt(t, db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"), 102)
	eq(t, "sqlite_stat1 present", qInt(t, db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"), 1)
	for _, side := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Stat(path + side); err == nil {
			t.Errorf("side file %s left behind", side)
		}
	}
	var tables []string
	forEachString(t, db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", func(s string) {
		tables = append(tables, s)
	})
	checked := 0
	for _, table := range tables {
		if qInt(t, db, `SELECT COUNT(*) FROM "`+table+`"`) == 0 {
			continue
		}
		var cols []string
		forEachString(t, db, `SELECT name FROM pragma_table_info('`+table+`') WHERE type = 'TIMESTAMP'`, func(s string) { cols = append(cols, s) })
		for _, c := range cols {
			// "|| ''" strips the TIMESTAMP decltype: modernc would otherwise
			// parse the text into a time.Time and hand back its own rendering.
			forEachString(t, db, `SELECT "`+c+`" || '' FROM "`+table+`" WHERE "`+c+`" IS NOT NULL`, func(s string) {
				checked++
				if !mattnRE.MatchString(s) {
					t.Errorf("%s.%s = %q is not mattn timestamp text", table, c, s)
				}
			})
			eq(t, table+"."+c+" non-text values", qInt(t, db, `SELECT COUNT(*) FROM "`+table+`" WHERE "`+c+`" IS NOT NULL AND typeof("`+c+`") <> 'text'`), 0)
		}
	}
	if checked == 0 {
		t.Error("no timestamp values checked")
	}
}

func forEachString(t *testing.T, db *sql.DB, q string, f func(string)) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		f(s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestDemoStoreUpToDate: the checked-in demo store is byte-identical to a
// fresh generation. Regenerate with:
//
//	go test ./storegen/ -run TestDemoStoreUpToDate -update
func TestDemoStoreUpToDate(t *testing.T) {
	if *update {
		o := DemoOptions()
		o.Overwrite = true
		st, err := Generate(context.Background(), checkedInDemo, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s (%d bytes)", checkedInDemo, st.Bytes)
	}
	path, _ := generateTo(t, DemoOptions())
	fresh, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(checkedInDemo)
	if err != nil {
		t.Fatalf("%v (run: go test ./storegen/ -run TestDemoStoreUpToDate -update)", err)
	}
	if !bytes.Equal(fresh, want) {
		t.Fatalf("%s differs from a fresh generation (%d vs %d bytes); run: go test ./storegen/ -run TestDemoStoreUpToDate -update",
			checkedInDemo, len(want), len(fresh))
	}
}

func TestScaled(t *testing.T) {
	o := LargeOptions(0.001)
	path, st := generateTo(t, o)
	db := testkit.SourceDB(t, path)
	for table, want := range map[string]int{
		"tasks": o.Sessions, "task_sessions": o.Sessions, "task_session_turns": o.Turns,
		"task_session_subagents": o.Subagents, "task_session_messages": o.Messages,
	} {
		eq(t, "rows in "+table, qInt(t, db, "SELECT COUNT(*) FROM "+table), int64(want))
		eq(t, "Stats.Rows["+table+"]", st.Rows[table], int64(want))
	}
	eq(t, "sizes", fmt.Sprint(o.Sessions, o.Turns, o.Subagents, o.Messages, o.Collisions), "100 400 1000 2000 1")
	eq(t, "collisions", qInt(t, db, `SELECT COUNT(*) FROM (SELECT 1 FROM task_session_subagents GROUP BY task_session_id, tool_call_id
		HAVING COUNT(DISTINCT agent_execution_id) = 2 AND SUM(agent_execution_id = 'unknown') = 0)`), 1)
	eq(t, "Stats.CollisionRows", st.CollisionRows, 1)
	since := ts(o.CaptureSince)
	eq(t, "backfill rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE source = 'backfill'"), st.BackfillRows)
	if st.BackfillRows == 0 || st.LiveRows == 0 || st.BackfillRows+st.LiveRows != int64(o.Subagents) {
		t.Errorf("backfill/live split %d/%d", st.BackfillRows, st.LiveRows)
	}
	eq(t, "capture_since key", qStr(t, db, "SELECT value FROM kandev_meta WHERE key = ?", KeyCaptureSince), keyText(o.CaptureSince))
	newest := qStr(t, db, `SELECT MAX(created_at) FROM task_session_messages WHERE type = 'tool_call' AND created_at < ?`, since)
	bt, err := time.Parse(mattnLayout, newest)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "backfill_through key", qStr(t, db, "SELECT value FROM kandev_meta WHERE key = ?", KeyBackfillThrough), keyText(bt))
	eq(t, "async rows with metrics", qInt(t, db, `SELECT COUNT(*) FROM task_session_subagents WHERE agent_status = 'async_launched'
		AND (total_tokens IS NOT NULL OR tool_use_count IS NOT NULL OR duration_ms IS NOT NULL)`), 0)
	if n := qInt(t, db, "SELECT COUNT(*) FROM task_session_turns t WHERE NOT EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.turn_id = t.id)"); n == 0 {
		t.Error("no turns without subagents")
	}
	checkHealthy(t, db, since)
	checkBackfillDerivation(t, db, since)
	checkLiveRowsMatchMessages(t, db)
	checkFormat(t, db, path, 4096)

	// Deterministic: a second generation is byte-identical.
	path2, _ := generateTo(t, o)
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(path2)
	if !bytes.Equal(a, b) {
		t.Error("two generations with the same options differ")
	}
}

func TestOverwrite(t *testing.T) {
	o := LargeOptions(0.0001)
	path, _ := generateTo(t, o)
	if _, err := Generate(context.Background(), path, o); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Generate without Overwrite: err = %v", err)
	}
	o.Overwrite = true
	if _, err := Generate(context.Background(), path, o); err != nil {
		t.Fatalf("Generate with Overwrite: %v", err)
	}
	if _, err := os.Stat(path + ".storegen-tmp"); err == nil {
		t.Error("temporary file left behind")
	}
}

func TestVariants(t *testing.T) {
	// A store holding a blank ('') metadata message: the two message-metadata
	// indexes are absent (they would raise on it), and keys can be rewritten
	// into the legacy second-precision form or removed.
	o := LargeOptions(0.0005)
	o.BlankMetadataMessage = true
	o.MetaOverrides = map[string]string{KeyCaptureSince: "2026-02-24T07:12:00Z", KeyExecutionSince: "2026-03-01T00:00:00.555555555Z"}
	o.MetaDelete = []string{KeyBackfillThrough}
	path, st := generateTo(t, o)
	db := testkit.SourceDB(t, path)
	eq(t, "'' metadata", qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE metadata = ''"), 1)
	eq(t, "'null' metadata", qInt(t, db, "SELECT COUNT(*) FROM task_session_messages WHERE metadata = 'null'"), 1)
	eq(t, "message metadata indexes", qInt(t, db, `SELECT COUNT(*) FROM sqlite_master
		WHERE name IN ('idx_messages_metadata_tool_call_id', 'idx_messages_metadata_pending_id')`), 0)
	eq(t, "other message indexes", qInt(t, db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_messages_%'"), 9)
	eq(t, "capture_since", qStr(t, db, "SELECT value FROM kandev_meta WHERE key = ?", KeyCaptureSince), "2026-02-24T07:12:00Z")
	eq(t, "execution_since", qStr(t, db, "SELECT value FROM kandev_meta WHERE key = ?", KeyExecutionSince), "2026-03-01T00:00:00.555555555Z")
	eq(t, "backfill_through rows", qInt(t, db, "SELECT COUNT(*) FROM kandev_meta WHERE key = ?", KeyBackfillThrough), 0)
	eq(t, "Stats kandev_meta rows", st.Rows["kandev_meta"], qInt(t, db, "SELECT COUNT(*) FROM kandev_meta"))
	eq(t, "integrity_check", qStr(t, db, "PRAGMA integrity_check"), "ok")

	// Not activated: no capture boundary, every row live, no subagent keys.
	o = LargeOptions(0.0005)
	o.CaptureSince = time.Time{}
	path, st = generateTo(t, o)
	db = testkit.SourceDB(t, path)
	eq(t, "backfill rows", st.BackfillRows, 0)
	eq(t, "subagent keys", qInt(t, db, "SELECT COUNT(*) FROM kandev_meta WHERE key LIKE 'subagent_context_%'"), 0)
	eq(t, "rows", qInt(t, db, "SELECT COUNT(*) FROM task_session_subagents WHERE source = 'live'"), int64(o.Subagents))

	// The reference population is fixed.
	d := DemoOptions()
	d.Subagents = 300
	if _, err := Generate(context.Background(), filepath.Join(t.TempDir(), "x.db"), d); err == nil {
		t.Error("Reference with changed sizes: want error")
	}
	// Too few messages.
	o = LargeOptions(0.001)
	o.Messages = 100
	if _, err := Generate(context.Background(), filepath.Join(t.TempDir(), "y.db"), o); err == nil || !strings.Contains(err.Error(), "below the minimum") {
		t.Errorf("Messages below minimum: err = %v", err)
	}
}

func TestExactMix(t *testing.T) {
	r := newRNG(7)
	for _, c := range []struct {
		n, total int64
		minV     int
	}{{35, 119, 1}, {1000, 2500, 1}, {10, 0, 0}, {400, 1000, 0}, {3, 40, 1}} {
		m, err := newExactMix(c.n, c.total, c.minV, shapeFanout)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for i := int64(0); i < c.n; i++ {
			v := m.draw(r)
			if v < c.minV {
				t.Fatalf("value %d below min %d", v, c.minV)
			}
			sum += int64(v)
		}
		eq(t, fmt.Sprintf("sum of %d draws", c.n), sum, c.total)
	}
}

// TestLargeScale generates LargeOptions(scale) and checks its row counts.
// Opt-in (a full-size store is about 4.1 GB and takes about 3.5 minutes):
//
//	STOREGEN_SCALE=1.0 go test ./storegen/ -run TestLargeScale -v -timeout 60m
func TestLargeScale(t *testing.T) {
	env := os.Getenv("STOREGEN_SCALE")
	if env == "" {
		t.Skip("set STOREGEN_SCALE (e.g. 1.0) to run")
	}
	var scale float64
	if _, err := fmt.Sscan(env, &scale); err != nil {
		t.Fatal(err)
	}
	o := LargeOptions(scale)
	start := time.Now()
	path, st := generateTo(t, o)
	t.Logf("scale %g: %v, %d bytes, rows %v, backfill %d, live %d (unknown %d), collisions %d",
		scale, time.Since(start).Round(time.Millisecond), st.Bytes, st.Rows, st.BackfillRows, st.LiveRows, st.UnknownLiveRows, st.CollisionRows)
	db := testkit.SourceDB(t, path)
	for table, want := range map[string]int{
		"task_sessions": o.Sessions, "task_session_turns": o.Turns,
		"task_session_subagents": o.Subagents, "task_session_messages": o.Messages,
	} {
		eq(t, "rows in "+table, qInt(t, db, "SELECT COUNT(*) FROM "+table), int64(want))
	}
	eq(t, "collision rows", st.CollisionRows, int64(o.Collisions))
}
