package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leakMarker prefixes every piece of content the leak test seeds.
const leakMarker = "KXLEAK"

// seedContent writes marker strings into every content column of a store:
// message text and metadata (prompts, result text, descriptions), subagent
// descriptions, task titles, descriptions and metadata, session metadata,
// snapshots and errors, turn metadata, workflow descriptions and prompts,
// step prompts — including metadata that is not JSON or not UTF-8, so the
// paths that refuse a value are covered too.
func seedContent(t *testing.T, path string) {
	t.Helper()
	m := func(where string) string { return "'" + leakMarker + "-" + where + "'" }
	sqliteExec(t, path,
		`UPDATE task_session_messages SET content = `+m("message-content")+` || id`,
		`UPDATE task_session_messages SET metadata = replace(replace(replace(metadata,
			'"prompt":"', '"prompt":"`+leakMarker+`-prompt '),
			'"result_text":"', '"result_text":"`+leakMarker+`-result '),
			'"description":"', '"description":"`+leakMarker+`-description ')
		 WHERE metadata LIKE '%subagent_task%'`,
		`UPDATE task_session_messages SET metadata = '{not json `+leakMarker+`-bad-metadata' WHERE id IN (SELECT id FROM task_session_messages WHERE metadata = '{}' ORDER BY id LIMIT 3)`,
		`UPDATE task_session_subagents SET description = `+m("subagent-description"),
		`UPDATE tasks SET title = `+m("task-title")+`, description = `+m("task-description")+`, metadata = '{"note":"`+leakMarker+`-task-metadata"}'`,
		`UPDATE task_sessions SET metadata = '{"prompt":"`+leakMarker+`-session-metadata"}', error_message = `+m("session-error")+`,
			agent_profile_snapshot = '{"prompt":"`+leakMarker+`-profile"}'`,
		`UPDATE task_session_turns SET metadata = json_set(metadata, '$.prompt', '`+leakMarker+`-turn-prompt')`,
		`UPDATE task_session_turns SET metadata = '{broken `+leakMarker+`-turn-bad-metadata' WHERE id = (SELECT min(id) FROM task_session_turns)`,
		`UPDATE task_session_turns SET metadata = '{"prompt":"`+leakMarker+`-turn-bad-bytes' || CAST(X'FF' AS TEXT) || '"}' WHERE id = (SELECT max(id) FROM task_session_turns)`,
		`UPDATE workflows SET description = `+m("workflow-description")+`, prompt = `+m("workflow-prompt"),
		`UPDATE workflow_steps SET prompt = `+m("step-prompt"),
	)
	// The seeding took: the markers are in the store.
	src := sourceDB(t, path)
	for _, q := range []string{
		`SELECT count(*) > 0 FROM task_session_messages WHERE metadata LIKE '%` + leakMarker + `-prompt%' AND metadata LIKE '%` + leakMarker + `-result%'`,
		`SELECT count(*) > 0 FROM task_session_turns WHERE metadata LIKE '%` + leakMarker + `-turn-prompt%'`,
	} {
		if got := one(t, src, q); got != "1" {
			t.Fatalf("seeding failed: %s", q)
		}
	}
}

// everythingIn renders all the warehouse holds as text: the raw bytes of
// every file, and, decoded, every cell and key-value metadata of every
// Parquet file and every table, view and comment of warehouse.duckdb
// (both compress text, so raw bytes alone would not prove absence).
func everythingIn(t *testing.T, wh string) string {
	t.Helper()
	var all bytes.Buffer
	filepath.WalkDir(wh, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		return nil
	})
	pq := memDuck(t)
	files, _ := filepath.Glob(filepath.Join(wh, "*", "installation_id=*", "run_id=*", "*.parquet"))
	for _, f := range files {
		for _, r := range rowsOf(t, pq, `SELECT * FROM read_parquet('`+f+`')`) {
			all.WriteString(r + "\n")
		}
		for _, r := range rowsOf(t, pq, `SELECT decode(key), decode(value) FROM parquet_kv_metadata('`+f+`')`) {
			all.WriteString(r + "\n")
		}
	}
	db := duck(t, wh)
	defer db.Close()
	for _, name := range rowsOf(t, db, `SELECT table_name FROM information_schema.tables`) {
		for _, r := range rowsOf(t, db, `SELECT * FROM "`+name+`"`) {
			all.WriteString(r + "\n")
		}
	}
	for _, q := range []string{
		`SELECT coalesce(comment, '') FROM duckdb_views()`, `SELECT coalesce(comment, '') FROM duckdb_tables()`,
		`SELECT coalesce(comment, '') FROM duckdb_columns()`,
	} {
		for _, r := range rowsOf(t, db, q) {
			all.WriteString(r + "\n")
		}
	}
	return all.String()
}

func assertNoMarker(t *testing.T, what, text string) {
	t.Helper()
	if i := strings.Index(text, leakMarker); i >= 0 {
		end := min(len(text), i+60)
		t.Errorf("%s leaks content: …%q…", what, text[i:end])
	}
}

// TestContentNeverLeaks: with content markers in every content column, no
// output — Parquet, warehouse.duckdb, manifests, logs (text and JSON, at
// debug level), the run's result (what the CLI prints) and the standalone
// writer-health report — contains any of them.
func TestContentNeverLeaks(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	seedContent(t, path)
	wh := filepath.Join(t.TempDir(), "wh")
	var logs bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelDebug}
	for i, log := range []*slog.Logger{
		slog.New(slog.NewTextHandler(&logs, opts)),
		slog.New(slog.NewJSONHandler(&logs, opts)),
	} {
		res, o := runStore(t, wh, "leak", path, log)
		if o.Err != nil {
			t.Fatalf("run %d: %v", i, o.Err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		assertNoMarker(t, "the run result", string(b)+fmt.Sprintf("%+v", res))
	}
	if logs.Len() == 0 {
		t.Fatal("nothing was logged")
	}
	assertNoMarker(t, "the logs", logs.String())
	all := everythingIn(t, wh)
	if !strings.Contains(all, "metadata is not JSON") {
		t.Error("the broken turn metadata was not refused: the test does not exercise the rejects path")
	}
	assertNoMarker(t, "the warehouse", all)

	rep, err := CheckHealth(context.Background(), path, HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Health.Counts.MalformedMetadata == 0 {
		t.Error("the malformed message metadata was not counted: the test does not exercise that path")
	}
	b, _ := json.Marshal(rep)
	assertNoMarker(t, "the health report", string(b)+fmt.Sprintf("%+v", rep))
}
