package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
)

// Windows refuses to rename over or delete a file another process holds
// open (a DuckDB session, Excel, Power BI). These tests make chosen paths
// behave that way on Linux (load.HeldOpenEnv: every rename and delete of
// the warehouse goes through the seam) and run the real pipeline on a real
// store with a real DuckDB: nothing held open may fail a run, mix current/
// between runs, or put an older database in place of a newer one.

// hold makes paths behave as held open for the rest of the test (nil: none).
func hold(t *testing.T, paths ...string) {
	t.Helper()
	t.Setenv(load.HeldOpenEnv, strings.Join(paths, string(os.PathListSeparator)))
}

// dbOne returns one query's single row from the database file at path,
// opened read-only.
func dbOne(t *testing.T, path, q string) string {
	t.Helper()
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return testkit.One(t, db, q)
}

func pendingFiles(t *testing.T, wh string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(wh, "_pending"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".duckdb") {
			out = append(out, e.Name())
		}
	}
	return out
}

func copyTo(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// warehouse.duckdb held open: the run commits and does not fail; the old
// database still answers with the previous run; the rebuilt one waits in
// _pending/ with the new run; a command while the file is still held reads
// the waiting one and swaps nothing; once released, the next command swaps
// it in, carrying an analyst's table created meanwhile.
func TestHeldDatabaseWaitsAndIsSwappedInLater(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "lab")
	final := filepath.Join(wh, load.DatabaseFile)

	hold(t, final)
	second := safetyRun(t, wh, 0, "lab") // fails the test if the run failed
	p := second.Pending
	if p.Database == "" || !strings.HasPrefix(p.Database, "_pending/") || !strings.Contains(p.Reason, "warehouse.duckdb is held open") {
		t.Fatalf("pending = %+v, want the database waiting in _pending/", p)
	}
	if msgs := p.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "the rebuilt database waits at "+p.Database) {
		t.Errorf("warning %q", msgs)
	}
	// The database in place is the previous one, whole: runs, current_runs
	// and the views answer.
	if got := duckOne(t, wh, `SELECT string_agg(run_id, ',' ORDER BY run_id) FROM runs`); got != first.RunID {
		t.Errorf("old database's runs = %s, want only %s", got, first.RunID)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs WHERE installation_id = 'lab'`); got != first.RunID {
		t.Errorf("old database serves %s, want %s", got, first.RunID)
	}
	if got := duckOne(t, wh, `SELECT count(*) > 0 FROM fanout_by_turn`); got != "true" {
		t.Errorf("old database's fanout_by_turn: %s", got)
	}
	// The waiting one has the new run.
	waiting := filepath.Join(wh, filepath.FromSlash(p.Database))
	if got := dbOne(t, waiting, `SELECT run_id FROM current_runs WHERE installation_id = 'lab'`); got != second.RunID {
		t.Errorf("waiting database serves %s, want %s", got, second.RunID)
	}
	if got := dbOne(t, waiting, `SELECT count(*) FROM runs`); got != "2" {
		t.Errorf("waiting database has %s runs, want 2", got)
	}
	if got := dbOne(t, waiting, `SELECT count(*) > 0 FROM subagent_contexts`); got != "true" {
		t.Errorf("waiting database's views: %s", got)
	}
	if got := dbOne(t, waiting, `SELECT count(*) FROM warehouse_build`); got != "1" {
		t.Errorf("warehouse_build rows: %s", got)
	}

	// An analyst writes to the old file meanwhile (after the rebuild).
	func() {
		db, err := sql.Open("duckdb", final)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TABLE my_notes AS SELECT 42 AS answer`); err != nil {
			t.Fatal(err)
		}
	}()

	// Still held: nothing is swapped, the reader gets the waiting database.
	s, newest, err := load.SettlePending(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	if s.Swapped != "" || s.Pending.Database != p.Database || newest != waiting {
		t.Errorf("while held: swapped %q, pending %q, reads %s (want %s)", s.Swapped, s.Pending.Database, newest, waiting)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != first.RunID {
		t.Errorf("while held, warehouse.duckdb serves %s", got)
	}

	// Released: the next command swaps it in.
	hold(t)
	s, newest, err = load.SettlePending(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	if s.Swapped != p.Database || !s.Pending.Empty() || newest != final {
		t.Fatalf("after release: %+v, reads %s", s, newest)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs WHERE installation_id = 'lab'`); got != second.RunID {
		t.Errorf("after the swap warehouse.duckdb serves %s, want %s", got, second.RunID)
	}
	if got := duckOne(t, wh, `SELECT count(*) > 0 FROM fanout_by_turn`); got != "true" {
		t.Errorf("after the swap fanout_by_turn: %s", got)
	}
	if got := duckOne(t, wh, `SELECT answer FROM my_notes`); got != "42" {
		t.Errorf("the analyst's table created while the database waited: %s", got)
	}
	if left := pendingFiles(t, wh); len(left) != 0 {
		t.Errorf("_pending/ still holds %v", left)
	}
	// Nothing waits any more: a reader takes no lock and changes nothing.
	if s, newest, err := load.SettlePending(ctx, wh); err != nil || s.Swapped != "" || !s.Pending.Empty() || newest != final {
		t.Errorf("nothing waiting: %+v %s %v", s, newest, err)
	}
}

// A waiting database that is older than what is committed or served is
// never swapped in: when a newer database is in place (its removal was
// refused), or when a run committed after it was built.
func TestStalePendingIsNeverSwappedIn(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "lab")
	final := filepath.Join(wh, load.DatabaseFile)
	aside := filepath.Join(t.TempDir(), "p2.duckdb")

	hold(t, final)
	second := safetyRun(t, wh, 0, "lab")
	p2 := second.Pending.Database
	copyTo(t, filepath.Join(wh, filepath.FromSlash(p2)), aside)

	// A third run, still held: its database supersedes the second's.
	third := safetyRun(t, wh, 0, "lab")
	p3 := third.Pending.Database
	if p3 == "" || p3 == p2 {
		t.Fatalf("third run's pending %q (second's %q)", p3, p2)
	}
	if left := pendingFiles(t, wh); len(left) != 1 || "_pending/"+left[0] != p3 {
		t.Errorf("_pending/ holds %v, want only %s", left, p3)
	}
	// Put the second's back in place of the third's: it is newer than the
	// database in place, but run 3 committed after it was built.
	os.Remove(filepath.Join(wh, filepath.FromSlash(p3)))
	copyTo(t, aside, filepath.Join(wh, filepath.FromSlash(p2)))
	hold(t)
	s, newest, err := load.SettlePending(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	if s.Swapped != "" || len(s.Discarded) != 1 || !strings.Contains(s.Discarded[0], "runs were recorded after it was built") {
		t.Errorf("stale by manifests: %+v", s)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != first.RunID {
		t.Errorf("warehouse.duckdb serves %s, want still %s", got, first.RunID)
	}
	if newest != final || len(pendingFiles(t, wh)) != 0 {
		t.Errorf("reads %s; _pending/ %v", newest, pendingFiles(t, wh))
	}

	// A fourth run puts its database in place; the second's, put back as
	// if its removal had been refused, is older than that one.
	fourth := safetyRun(t, wh, 0, "lab")
	if !fourth.Pending.Empty() {
		t.Fatalf("fourth run pending %+v", fourth.Pending)
	}
	os.MkdirAll(filepath.Join(wh, "_pending"), 0o755)
	copyTo(t, aside, filepath.Join(wh, filepath.FromSlash(p2)))
	s, newest, err = load.SettlePending(ctx, wh)
	if err != nil {
		t.Fatal(err)
	}
	if s.Swapped != "" || len(s.Discarded) != 1 || !strings.Contains(s.Discarded[0], "is newer") {
		t.Errorf("stale by build: %+v", s)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != fourth.RunID {
		t.Errorf("warehouse.duckdb serves %s, want %s", got, fourth.RunID)
	}
	if newest != final {
		t.Errorf("reads %s", newest)
	}
}

// A current/ file held open: none of the installation's current/ files
// moves (never some tables at one run and some at another), the other
// installation moves, current/_manifest.json says so, and the next command
// once it is released moves them all.
func TestHeldCurrentFileKeepsTheInstallationAtOneRun(t *testing.T) {
	ctx := context.Background()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "a", "b")
	// dim_turn is fifth: four tables are swapped before it is refused.
	hold(t, filepath.Join(wh, "current", "dim_turn", "installation_id=a", "part-0.parquet"))
	second := safetyRun(t, wh, 0, "a", "b")
	cur := second.Pending.Current
	if second.Pending.Database != "" || len(cur) != 1 || cur[0] != (load.PendingCurrent{Installation: "a", AtRun: first.RunID, WantRun: second.RunID}) {
		t.Fatalf("pending %+v", second.Pending)
	}
	atRun := func(inst, run string) {
		t.Helper()
		for _, table := range load.BaseTables() {
			dir := filepath.Join(wh, "current", table, "installation_id="+inst)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || entries[0].Name() != "part-0.parquet" {
				t.Errorf("%s holds %v, want part-0.parquet alone", dir, entries)
				continue
			}
			a, err1 := os.Stat(filepath.Join(dir, "part-0.parquet"))
			b, err2 := os.Stat(filepath.Join(wh, load.FileRel(table, inst, run)))
			if err1 != nil || err2 != nil || !os.SameFile(a, b) {
				t.Errorf("current/%s of %s is not run %s's file (%v %v)", table, inst, run, err1, err2)
			}
		}
		doc, err := load.ReadCurrentManifest(wh)
		if err != nil || doc.Installations[inst].RunID != run {
			t.Errorf("current/_manifest.json has %s at %+v (%v), want %s", inst, doc.Installations[inst].RunID, err, run)
		}
	}
	atRun("a", first.RunID)
	atRun("b", second.RunID)
	// The database moved on: only current/ of a waits.
	if got := duckOne(t, wh, `SELECT string_agg(DISTINCT run_id, ',') FROM current_runs`); got != second.RunID {
		t.Errorf("database serves %s", got)
	}
	if st := load.PendingState(ctx, wh); len(st.Current) != 1 || st.Current[0].Installation != "a" {
		t.Errorf("PendingState %+v", st)
	}

	hold(t)
	s, _, err := load.SettlePending(ctx, wh)
	if err != nil || !s.Pending.Empty() {
		t.Fatalf("settle: %+v %v", s, err)
	}
	atRun("a", second.RunID)
	if _, err := os.Lstat(filepath.Join(wh, "_pending", "current.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("_pending/current.json left: %v", err)
	}
}

// Leftovers held open never block a run: files of a run retention removes,
// _staging/ and _build/ left by a crash. The run succeeds, says what it
// could not remove, and a later run removes them.
func TestHeldLeftoversNeverBlockARun(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 1, "lab")
	oldFile := filepath.Join(wh, load.FileRel("fact_subagent_context", "lab", first.RunID))
	staged := filepath.Join(wh, "_staging", "20260101T000000Z-abcdef", "lab", "x.parquet")
	built := filepath.Join(wh, "_build", load.DatabaseFile)
	for _, p := range []string{staged, built} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("left by a crash"), 0o644)
	}
	hold(t, oldFile, staged, built)
	second := safetyRun(t, wh, 1, "lab")
	left := strings.Join(second.Pending.Leftovers, " ")
	for _, want := range []string{"_staging", "_build", "fact_subagent_context/installation_id=lab/run_id=" + first.RunID} {
		if !strings.Contains(left, want) {
			t.Errorf("leftovers %q lack %s", left, want)
		}
	}
	mustExist(t, oldFile, staged, built)
	// Retention did its part: the run is out of the database and its
	// manifest is gone; only the held file waits.
	if got := duckOne(t, wh, `SELECT string_agg(run_id, ',') FROM runs`); got != second.RunID {
		t.Errorf("runs = %s, want %s", got, second.RunID)
	}
	if _, err := os.Lstat(filepath.Join(wh, "_runs", "lab", first.RunID+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("expired manifest: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(wh, load.FileRel("dim_turn", "lab", first.RunID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("expired run's unheld file: %v", err)
	}

	hold(t)
	third := safetyRun(t, wh, 1, "lab")
	if !third.Pending.Empty() {
		t.Errorf("third run pending %+v", third.Pending)
	}
	for _, p := range []string{filepath.Dir(oldFile), filepath.Join(wh, "_staging"), filepath.Join(wh, "_build")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after a later run: %v", p, err)
		}
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != third.RunID {
		t.Errorf("serves %s", got)
	}
}
