package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/load"
)

// On Windows a run cannot replace warehouse.duckdb while another process
// holds it open. Made so on Linux through load.HeldOpenEnv, with real
// processes, a real store and a real DuckDB: the run exits 0 with a
// warning, status and query read the waiting database and say so, nothing
// is swapped while a run holds the warehouse, and the first command after
// the file is released swaps it in.
func TestHeldDatabaseIsNotAFailedRun(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	final := filepath.Join(wh, load.DatabaseFile)
	if _, errOut, code := runProc(t, nil, "", nil, "run", "-s", src, "-w", wh, "-i", "prod"); code != 0 {
		t.Fatalf("first run: %s", errOut)
	}
	heldEnv := []string{load.HeldOpenEnv + "=" + final}
	out, errOut, code := runProc(t, heldEnv, "", nil, "run", "-s", src, "-w", wh, "-i", "prod", "--log-format", "text")
	if code != 0 {
		t.Fatalf("run with warehouse.duckdb held open: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "WARN") || !strings.Contains(errOut, "the rebuilt database waits at _pending/") ||
		!strings.Contains(out, "pending (files open in another process; not a failure):") {
		t.Errorf("the run does not say what waits:\nstdout %s\nstderr %s", out, errOut)
	}
	ms, err := load.ReadManifests(wh)
	if err != nil || len(ms) != 2 {
		t.Fatalf("manifests %v %v", ms, err)
	}
	first, second := ms[0].RunID, ms[1].RunID
	if one(t, final, `SELECT run_id FROM current_runs`) != first {
		t.Errorf("warehouse.duckdb moved while held")
	}

	// Still held: status reads the waiting database and says so; exit 0.
	out, errOut, code = runProc(t, heldEnv, "", nil, "status", "-w", wh, "--json")
	st := jsonLines(t, "status --json", out)
	if code != 0 || len(st) != 1 {
		t.Fatalf("status --json while held: exit %d\n%s\n%s", code, out, errOut)
	}
	pending, _ := st[0]["pending"].(map[string]any)
	cur, _ := st[0]["current_run"].(map[string]any)
	db, _ := pending["database"].(string)
	if !strings.HasPrefix(db, "_pending/") || cur["run_id"] != second || st[0]["exit_status"] != float64(0) {
		t.Errorf("status --json while held:\n%s", out)
	}
	out, _, code = runProc(t, heldEnv, "", nil, "status", "-w", wh)
	if code != 0 || !strings.Contains(out, "pending:    warehouse.duckdb is held open by another process") || !strings.Contains(out, "data:       run "+second) {
		t.Errorf("status while held: exit %d\n%s", code, out)
	}
	out, errOut, code = runProc(t, heldEnv, "", nil, "query", "-w", wh, "--format", "csv", "SELECT run_id FROM current_runs")
	if code != 0 || out != "run_id\n"+second+"\n" || !strings.Contains(errOut, "reading the newer database waiting at "+db) {
		t.Errorf("query while held: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = runProc(t, heldEnv, "", nil, "report", "-w", wh, "--out", "-")
	if code != 0 || !strings.Contains(out, second) || !strings.Contains(errOut, "reading the newer database waiting at "+db) {
		t.Errorf("report while held: exit %d, names run %s: %v\n%s", code, second, strings.Contains(out, second), errOut)
	}

	// Released, but a run holds the warehouse (opened here while the file
	// is still held, so opening it swaps nothing): status only reports.
	t.Setenv(load.HeldOpenEnv, final)
	running, err := load.OpenWarehouse(wh)
	if err != nil {
		t.Fatal(err)
	}
	if running.Settled.Swapped != "" || running.Settled.Pending.Database != db {
		t.Errorf("opening for a run while held: %+v", running.Settled)
	}
	os.Unsetenv(load.HeldOpenEnv)
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh)
	if code != 0 || !strings.HasPrefix(out, "run in progress") || !strings.Contains(out, "pending:    warehouse.duckdb was held open") || strings.Contains(out, "done now") {
		t.Errorf("status while a run holds the warehouse: exit %d\n%s", code, out)
	}
	if one(t, final, `SELECT run_id FROM current_runs`) != first {
		t.Errorf("swapped while a run held the warehouse")
	}
	running.Close()

	// Released and no run: the first command swaps it in and says so.
	out, errOut, code = runProc(t, nil, "", nil, "status", "-w", wh)
	if code != 0 || !strings.HasPrefix(out, "done now: the database that waited at "+db+" is now warehouse.duckdb\n") || strings.Contains(out, "pending:") {
		t.Errorf("status once released: exit %d\n%s\n%s", code, out, errOut)
	}
	if one(t, final, `SELECT run_id FROM current_runs`) != second {
		t.Errorf("after the swap warehouse.duckdb does not serve %s", second)
	}
	out, errOut, code = runProc(t, nil, "", nil, "status", "-w", wh, "--json")
	if st := jsonLines(t, "status --json", out); code != 0 || st[0]["pending"] != nil || errOut != "" {
		t.Errorf("status after the swap: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runProc(t, nil, "", nil, "query", "-w", wh, "--format", "csv", "SELECT count(*) FROM runs")
	if code != 0 || out != "count_star()\n2\n" || errOut != "" {
		t.Errorf("query after the swap: exit %d\n%s\n%s", code, out, errOut)
	}
}

// one returns one query's single value from a database file, read-only.
func one(t *testing.T, path, q string) string {
	t.Helper()
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}
