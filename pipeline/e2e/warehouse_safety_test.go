package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// The warehouse treats everything in it as hostile: manifests, Parquet
// files, the lock, the database's write-ahead log. Each test plants what a
// careless operator or a hostile neighbour could, then runs the real
// pipeline on a real Kandev store.

func safetyRun(t *testing.T, wh string, retention int, names ...string) pipeline.Result {
	t.Helper()
	var ins []pipeline.Installation
	for _, n := range names {
		ins = append(ins, pipeline.Installation{Name: n, Source: testkit.Fixture(t, "fresh-activated.db")})
	}
	res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: ins, Retention: retention})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Failed() {
		t.Fatalf("Run failed: %+v", res.Outcomes)
	}
	return res
}

// duckOne opens warehouse.duckdb afresh (it is replaced by every run) and
// returns one query's single row.
func duckOne(t *testing.T, wh, q string) string {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(wh, load.DatabaseFile)+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return testkit.One(t, db, q)
}

func duckRows(t *testing.T, wh, q string) []string {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(wh, load.DatabaseFile)+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return testkit.RowsOf(t, db, q)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v (it must survive)", p, err)
		}
	}
}

func latestManifest(t *testing.T, wh, inst string) models.Manifest {
	t.Helper()
	ms, err := load.ReadManifests(wh)
	if err != nil {
		t.Fatal(err)
	}
	var last *models.Manifest
	for i := range ms {
		if ms[i].InstallationID == inst {
			last = &ms[i]
		}
	}
	if last == nil {
		t.Fatalf("no manifest for %s", inst)
	}
	return *last
}

// A planted manifest whose files point outside the warehouse, or whose run
// id climbs out of it, is quarantined; a retention run deletes nothing
// outside the warehouse and nothing the planted manifest names.
func TestPlantedManifestsNeverDirectDeletes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	victim := filepath.Join(root, "victim", "important", "part-0.parquet")
	outside := filepath.Join(root, "outside", "config")
	for _, p := range []string{victim, filepath.Join(outside, "settings.toml")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("precious"), 0o644)
	}
	safetyRun(t, wh, 1, "lab")
	good := latestManifest(t, wh, "lab")

	// Old-looking committed manifests (finished long ago), so retention 1
	// would prune them if it trusted them.
	old := good
	old.RunID = "20200101T000000Z-aaaaaa"
	old.CommitSeq = 0
	old.Version = 1
	old.Checksums = nil
	old.FinishedAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	old.Files = map[string]string{"fact_subagent_context": "../victim/important/part-0.parquet"}
	old.Provenance.RunID = old.RunID
	writeJSON(t, filepath.Join(wh, "_runs", "lab", old.RunID+".json"), old)

	climb := old
	climb.RunID = "../../../outside/config"
	climb.Files = nil
	writeJSON(t, filepath.Join(wh, "_runs", "lab", "20200101T000001Z-bbbbbb.json"), climb)

	// A manifest file name that itself climbs is not possible on disk, but
	// an installation directory with a hostile name is.
	writeJSON(t, filepath.Join(wh, "_runs", "..evil", "x.json"), climb)

	res := safetyRun(t, wh, 1, "lab")
	safetyRun(t, wh, 1, "lab")

	mustExist(t, victim, filepath.Join(outside, "settings.toml"))
	var quarantined []string
	for _, p := range res.Problems {
		if p.Action == load.ProblemQuarantined {
			quarantined = append(quarantined, filepath.ToSlash(p.Path))
		}
	}
	if len(quarantined) != 3 || !strings.HasPrefix(quarantined[0], "_quarantine/invalid/") ||
		quarantined[1] != "_quarantine/lab/20200101T000000Z-aaaaaa.json" || quarantined[2] != "_quarantine/lab/20200101T000001Z-bbbbbb.json" {
		t.Errorf("quarantined %v", quarantined)
	}
	mustExist(t, filepath.Join(wh, strings.TrimPrefix(quarantined[0], "_quarantine/"), "..", "..", quarantined[0], "x.json"))
	mustExist(t, filepath.Join(wh, "_quarantine", "lab", "20200101T000000Z-aaaaaa.json"),
		filepath.Join(wh, "_quarantine", "lab", "20200101T000001Z-bbbbbb.json"))
	if _, err := os.Stat(filepath.Join(wh, "_runs", "lab", old.RunID+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("planted manifest still in _runs: %v", err)
	}
	// The quarantine is listed in runs with its reason; the good runs are
	// unaffected and retention kept exactly one served run.
	if got := duckOne(t, wh, `SELECT status || ' ' || served || ' ' || (problem LIKE '%not where this run''s partition is%') FROM runs WHERE run_id = '20200101T000000Z-aaaaaa'`); got != "quarantined false true" {
		t.Errorf("runs row of the planted manifest: %s", got)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM runs WHERE status = 'committed' AND served`); got != "1" {
		t.Errorf("%s served committed runs after retention 1, want 1", got)
	}
}

// A warehouse whose path holds glob metacharacters never touches the
// sibling warehouse the pattern would match.
func TestGlobMetacharactersInTheWarehousePath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	sibling := filepath.Join(root, "wh1")
	safetyRun(t, sibling, 0, "lab")
	before := faultHashes(t, sibling)
	// An uncommitted-looking partition in the sibling: the old recovery
	// globbed wh[1]/*/installation_id=*/run_id=* and deleted it.
	orphan := filepath.Join(sibling, "fact_subagent_context", "installation_id=lab", "run_id=20200101T000000Z-cccccc")
	os.MkdirAll(orphan, 0o755)
	os.WriteFile(filepath.Join(orphan, "part-0.parquet"), []byte("x"), 0o644)

	for _, name := range []string{"wh[1]", "wh*", "wh[!x]"} {
		safetyRun(t, filepath.Join(root, name), 0, "lab")
	}
	// DuckDB cuts a database path at "?": such a warehouse is refused.
	_, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: filepath.Join(root, "wh?"),
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	if !errors.Is(err, load.ErrBadWarehouse) {
		t.Errorf("warehouse wh?: %v, want ErrBadWarehouse", err)
	}
	mustExist(t, filepath.Join(orphan, "part-0.parquet"))
	after := faultHashes(t, sibling)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("sibling warehouse file %s changed", k)
		}
	}
}

// A lock file that is a symbolic link is refused; its target is untouched.
func TestLockSymlinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	target := filepath.Join(root, "precious.txt")
	os.WriteFile(target, []byte("precious"), 0o644)
	os.MkdirAll(wh, 0o755)
	if err := os.Symlink(target, filepath.Join(wh, ".lock")); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh,
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("run with a symlinked lock: %v, want a refusal naming the symbolic link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the lock's target was overwritten: %q", b)
	}
}

// Symbolic links planted for a table directory or a partition are never
// followed by recovery or retention.
func TestPlantedSymlinksInsideTheWarehouse(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	safetyRun(t, wh, 1, "lab")
	victimDir := filepath.Join(root, "victim")
	os.MkdirAll(filepath.Join(victimDir, "installation_id=lab", "run_id=20200101T000000Z-dddddd"), 0o755)
	os.WriteFile(filepath.Join(victimDir, "installation_id=lab", "run_id=20200101T000000Z-dddddd", "part-0.parquet"), []byte("v"), 0o644)
	// The rejects table directory replaced by a link to the victim.
	rejects := filepath.Join(wh, "rejects")
	os.RemoveAll(rejects)
	if err := os.Symlink(victimDir, rejects); err != nil {
		t.Fatal(err)
	}
	// A partition that is a link to the victim.
	link := filepath.Join(wh, "dim_task", "installation_id=lab", "run_id=20200101T000000Z-eeeeee")
	if err := os.Symlink(filepath.Join(victimDir, "installation_id=lab", "run_id=20200101T000000Z-dddddd"), link); err != nil {
		t.Fatal(err)
	}
	// The run refuses to publish through the linked directory; whatever it
	// says, nothing outside is touched.
	pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 1,
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	mustExist(t, filepath.Join(victimDir, "installation_id=lab", "run_id=20200101T000000Z-dddddd", "part-0.parquet"))
}

// A manifest whose clock ran ahead does not pin the current views: the
// commit sequence decides what is latest, and retention follows it.
func TestClockAheadDoesNotPinTheCurrentRun(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	ahead := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Now: func() time.Time { return ahead },
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	if err != nil {
		t.Fatal(err)
	}
	second := safetyRun(t, wh, 1, "lab")
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != second.RunID {
		t.Errorf("current run %s, want the later-committed %s", got, second.RunID)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM runs`); got != "1" {
		t.Errorf("retention 1 left %s runs, want 1 (the clock-ahead run pruned)", got)
	}
	if got := duckOne(t, wh, `SELECT commit_seq FROM runs`); got != "2" {
		t.Errorf("commit_seq %s, want 2", got)
	}
}

// A truncated, replaced or type-changed Parquet file of one run stops only
// that run from being served: the installation's previous good run is
// current, other installations are unaffected, runs says why, and the
// files are kept for the operator.
func TestTamperedFilesAreNotServed(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "a", "b")
	second := safetyRun(t, wh, 0, "a", "b")
	n := duckOne(t, wh, `SELECT count(*) FROM subagent_contexts WHERE installation_id = 'b'`)
	fact := func(run string) string {
		return filepath.Join(wh, "fact_subagent_context", "installation_id=a", "run_id="+run, "part-0.parquet")
	}
	// The latest run of a: truncated.
	b, _ := os.ReadFile(fact(second.RunID))
	os.WriteFile(fact(second.RunID), b[:len(b)/2], 0o644)
	third := safetyRun(t, wh, 0, "b")
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs WHERE installation_id = 'a'`); got != first.RunID {
		t.Errorf("a's current run %s, want the previous good %s", got, first.RunID)
	}
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs WHERE installation_id = 'b'`); got != third.RunID {
		t.Errorf("b's current run %s, want %s", got, third.RunID)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM subagent_contexts WHERE installation_id = 'b'`); got != n {
		t.Errorf("b serves %s rows, want %s", got, n)
	}
	if got := duckOne(t, wh, `SELECT served || ' ' || problem FROM runs WHERE installation_id = 'a' AND run_id = '`+second.RunID+`'`); !strings.Contains(got, "false fact_subagent_context/installation_id=a/run_id="+second.RunID+"/part-0.parquet") || !strings.Contains(got, "bytes, the manifest recorded") {
		t.Errorf("runs row of the truncated run: %s", got)
	}
	mustExist(t, fact(second.RunID))
	// The previous build was updated: the run no longer served left the
	// history tables, as a full build would have left it out.
	if r := third.Rebuild; !r.Updated || r.Added != 1 || r.Removed != 1 {
		t.Errorf("third run's rebuild %+v, want the previous build updated (+1 −1)", r)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM fact_subagent_context_history WHERE run_id = '`+second.RunID+`' AND installation_id = 'a'`); got != "0" {
		t.Errorf("the truncated run still has %s rows in fact_subagent_context_history", got)
	}
	// Same size, other content (a replaced or type-changed file).
	b, _ = os.ReadFile(fact(first.RunID))
	b[len(b)/2] ^= 0xff
	os.WriteFile(fact(first.RunID), b, 0o644)
	fourth := safetyRun(t, wh, 0, "b")
	if r := fourth.Rebuild; !r.Updated || r.Added != 1 || r.Removed != 1 {
		t.Errorf("fourth run's rebuild %+v, want the previous build updated (+1 −1)", r)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM fact_subagent_context_history WHERE installation_id = 'a'`); got != "0" {
		t.Errorf("a has %s rows in fact_subagent_context_history with every run tampered", got)
	}
	if got := duckRows(t, wh, `SELECT run_id FROM current_runs WHERE installation_id = 'a'`); len(got) != 0 {
		t.Errorf("a still served from %v with every run tampered", got)
	}
	if got := duckOne(t, wh, `SELECT problem FROM runs WHERE run_id = '`+first.RunID+`' AND installation_id = 'a'`); !strings.Contains(got, "SHA-256 differs") {
		t.Errorf("problem %q", got)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM subagent_contexts WHERE installation_id = 'b'`); got != n {
		t.Errorf("b serves %s rows after a's files were tampered with, want %s", got, n)
	}
}

// A manifest of an unknown version is refused: not served, not moved, its
// files kept.
func TestUnknownManifestVersionIsRefused(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 1, "lab")
	path := filepath.Join(wh, "_runs", "lab", first.RunID+".json")
	var raw map[string]any
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &raw)
	raw["version"] = 99
	writeJSON(t, path, raw)
	safetyRun(t, wh, 1, "lab")
	mustExist(t, path, filepath.Join(wh, "fact_subagent_context", "installation_id=lab", "run_id="+first.RunID, "part-0.parquet"))
	if got := duckOne(t, wh, `SELECT status || ' ' || served || ' ' || (problem LIKE '%version 99%') FROM runs WHERE run_id = '`+first.RunID+`'`); got != "refused false true" {
		t.Errorf("refused manifest row: %s", got)
	}
	// Provenance of an unknown version inside a known manifest: quarantined.
	second := latestManifest(t, wh, "lab")
	second.Provenance.Version = 99
	p2 := filepath.Join(wh, "_runs", "lab", second.RunID+".json")
	writeJSON(t, p2, second)
	res := safetyRun(t, wh, 1, "lab")
	found := false
	for _, p := range res.Problems {
		found = found || (p.Run == second.RunID && p.Action == load.ProblemQuarantined && strings.Contains(p.Reason, "provenance"))
	}
	if !found {
		t.Errorf("provenance version 99 not quarantined: %+v", res.Problems)
	}
}

// An analyst's write-ahead log beside warehouse.duckdb never survives a
// rebuild (DuckDB would replay it onto the new file).
func TestStaleWALDoesNotSurviveARebuild(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "lab")
	// An analyst's session that changed the database and never
	// checkpointed: build such a WAL in a copy, then put it beside the
	// served file.
	scratch := filepath.Join(t.TempDir(), "analyst.duckdb")
	b, _ := os.ReadFile(filepath.Join(wh, load.DatabaseFile))
	os.WriteFile(scratch, b, 0o644)
	db, err := sql.Open("duckdb", scratch)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`PRAGMA disable_checkpoint_on_shutdown`, `SET checkpoint_threshold = '1GB'`,
		`CREATE TABLE analyst_notes AS SELECT 1 AS x`, `DELETE FROM runs`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	wal, err := os.ReadFile(scratch + ".wal")
	if err != nil || len(wal) == 0 {
		t.Fatalf("no WAL made (%v): the test cannot plant one", err)
	}
	os.WriteFile(filepath.Join(wh, load.DatabaseFile+".wal"), wal, 0o644)

	second := safetyRun(t, wh, 0, "lab")
	if _, err := os.Stat(filepath.Join(wh, load.DatabaseFile+".wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale WAL survived: %v", err)
	}
	// Two runs in one second: a run id orders by its random suffix there,
	// so the second run is looked for, not taken as max(run_id).
	if got := duckOne(t, wh, `SELECT count(*) || ' ' || count(*) FILTER (WHERE run_id = '`+second.RunID+`') FROM runs`); got != "2 1" {
		t.Errorf("runs after the rebuild: %s, want 2 runs, one of them %s", got, second.RunID)
	}
	// The analyst's table, which lived only in that log, was carried over;
	// the log's DELETE FROM runs touched only the old file.
	if got := duckOne(t, wh, `SELECT x FROM analyst_notes`); got != "1" {
		t.Errorf("analyst_notes: %s", got)
	}
}

// A planted WAL that is a directory cannot be removed: the run says so
// (exit 1 from the CLI) rather than serve a database DuckDB cannot open.
func TestUnremovableWALFailsTheRun(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "lab")
	os.MkdirAll(filepath.Join(wh, load.DatabaseFile+".wal", "x"), 0o755)
	_, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh,
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	if err == nil || !strings.Contains(err.Error(), "warehouse.duckdb.wal") {
		t.Errorf("run with an unremovable WAL: %v", err)
	}
}

// Leftovers of crashed writes are cleaned: stale manifest temporaries,
// half-built databases.
func TestStaleTemporariesAreCleaned(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "lab")
	tmp := filepath.Join(wh, "_runs", "lab", first.RunID+".json.tmp")
	os.WriteFile(tmp, []byte("{"), 0o644)
	build := filepath.Join(wh, "_build", load.DatabaseFile)
	os.MkdirAll(filepath.Dir(build), 0o755)
	os.WriteFile(build, []byte("half"), 0o644)
	safetyRun(t, wh, 0, "lab")
	for _, p := range []string{tmp, filepath.Dir(build)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

// The database holds its data itself: a moved warehouse works, and files
// pruned after the rebuild are never needed by it.
func TestMovedWarehouseWorks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	safetyRun(t, wh, 1, "lab")
	safetyRun(t, wh, 1, "lab")
	n := duckOne(t, wh, `SELECT count(*) FROM subagent_contexts`)
	moved := filepath.Join(root, "moved")
	if err := os.Rename(wh, moved); err != nil {
		t.Fatal(err)
	}
	if got := duckOne(t, moved, `SELECT count(*) FROM subagent_contexts`); got != n || n == "0" {
		t.Errorf("moved warehouse serves %s rows, want %s", got, n)
	}
	if got := duckOne(t, moved, `SELECT count(*) FROM fact_subagent_context_history`); got != n {
		t.Errorf("history after retention 1: %s rows, want %s", got, n)
	}
}

// A version 1 manifest (written before commit sequences and checksums) is
// still served, marked as not checksum-verified, and the next run's
// sequence follows it.
func TestVersion1ManifestsAreServed(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	first := safetyRun(t, wh, 0, "lab")
	m := latestManifest(t, wh, "lab")
	m.Version, m.CommitSeq, m.Checksums = 1, 0, nil
	writeJSON(t, filepath.Join(wh, "_runs", "lab", first.RunID+".json"), m)
	second := safetyRun(t, wh, 0, "lab")
	got := duckRows(t, wh, `SELECT run_id, coalesce(commit_seq::VARCHAR, 'NULL'), run_order, served, checksums_verified FROM runs ORDER BY run_order`)
	want := []string{first.RunID + "|NULL|1|true|false", second.RunID + "|1|2|true|true"}
	sort.Strings(want)
	testkit.EqualSets(t, "runs", got, want)
	if got := duckOne(t, wh, `SELECT run_id FROM current_runs`); got != second.RunID {
		t.Errorf("current %s, want %s", got, second.RunID)
	}
}

// Objects an analyst created in warehouse.duckdb survive the next run:
// tables (with their rows), schemas, and views over the warehouse's own
// views are carried into the new file; what cannot be carried (a macro)
// stays in a copy of the old file under _preserved/, and the run says so.
func TestAnalystObjectsAreNeverDestroyedSilently(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "lab")
	db, err := sql.Open("duckdb", filepath.Join(wh, load.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE notes(id INTEGER PRIMARY KEY, note VARCHAR DEFAULT 'x;y')`,
		`INSERT INTO notes VALUES (1, 'keep me'), (2, 'and me')`,
		`CREATE SCHEMA scratch`, `CREATE TABLE scratch.big_turns AS SELECT turn_id FROM fanout_by_turn WHERE subagents_observed > 1`,
		`CREATE VIEW my_fanout AS SELECT fanout_completeness, count(*) AS n FROM fanout_by_turn GROUP BY ALL`,
		`CREATE VIEW my_fanout_total AS SELECT sum(n) AS total FROM my_fanout`,
		`CREATE MACRO twice(a) AS a * 2`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	turns := testkit.One(t, db, `SELECT count(*) FROM fanout_by_turn`)
	big := testkit.One(t, db, `SELECT count(*) FROM scratch.big_turns`)
	db.Close()

	res := safetyRun(t, wh, 0, "lab")
	if got := strings.Join(res.Analyst.Objects, ","); got != "table main.notes,table scratch.big_turns,view main.my_fanout,view main.my_fanout_total" {
		t.Errorf("carried %s", got)
	}
	if len(res.Analyst.Lost) != 1 || !strings.HasPrefix(res.Analyst.Lost[0], "macro, sequence or type main.twice") || res.Analyst.Preserved == "" {
		t.Errorf("lost %v, preserved %q", res.Analyst.Lost, res.Analyst.Preserved)
	}
	if got := duckRows(t, wh, `SELECT id || ':' || note FROM notes`); strings.Join(got, ",") != "1:keep me,2:and me" {
		t.Errorf("notes %v", got)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM scratch.big_turns`); got != big {
		t.Errorf("scratch.big_turns %s rows, want %s", got, big)
	}
	if got := duckOne(t, wh, `SELECT total FROM my_fanout_total`); got != turns {
		t.Errorf("my_fanout_total %s, want %s", got, turns)
	}
	// The copy still holds the macro.
	pdb, err := sql.Open("duckdb", filepath.Join(wh, res.Analyst.Preserved)+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	if got := testkit.One(t, pdb, `SELECT twice(21)`); got != "42" {
		t.Errorf("preserved copy: twice(21) = %s", got)
	}
	// A third run carries them again, and keeps no further copy for the
	// macro it already reported (the copy is made each time something is lost).
	res = safetyRun(t, wh, 0, "lab")
	if len(res.Analyst.Objects) != 4 {
		t.Errorf("third run carried %v", res.Analyst.Objects)
	}
}

// current/ holds exactly the served run of each installation: a reader
// that globs it gets each row once, whatever the retention, and an
// installation whose runs all fail verification leaves it.
func TestCurrentLayout(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "a", "b")
	second := safetyRun(t, wh, 0, "a", "b")
	glob := filepath.ToSlash(filepath.Join(wh, "current", "fact_subagent_context", "*", "*.parquet"))
	all := duckOne(t, wh, `SELECT count(*) FROM fact_subagent_context_history`)
	cur := duckOne(t, wh, `SELECT count(*) FROM fact_subagent_context`)
	if all == cur {
		t.Fatalf("history %s = current %s: two runs expected", all, cur)
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM read_parquet('`+glob+`')`); got != cur {
		t.Errorf("current/ holds %s rows, want %s (the current view)", got, cur)
	}
	if got := duckOne(t, wh, `SELECT string_agg(DISTINCT run_id, ',') FROM read_parquet('`+glob+`')`); got != second.RunID {
		t.Errorf("current/ rows come from %s, want %s", got, second.RunID)
	}
	doc, err := load.ReadCurrentManifest(wh)
	if err != nil || doc.Installations["a"].RunID != second.RunID || doc.Installations["b"].Files["dim_turn"].SHA256 == "" {
		t.Errorf("current manifest %+v, %v", doc, err)
	}
	// Every run of a tampered with: a leaves current/.
	for _, m := range mustManifests(t, wh, "a") {
		p := filepath.Join(wh, "fact_subagent_context", "installation_id=a", "run_id="+m.RunID, "part-0.parquet")
		os.WriteFile(p, []byte("not parquet"), 0o644)
	}
	safetyRun(t, wh, 0, "b")
	if _, err := os.Stat(filepath.Join(wh, "current", "dim_turn", "installation_id=a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a still in current/: %v", err)
	}
	if got := duckOne(t, wh, `SELECT string_agg(DISTINCT installation_id, ',') FROM read_parquet('`+glob+`')`); got != "b" {
		t.Errorf("current/ installations %s, want b", got)
	}
}

func mustManifests(t *testing.T, wh, inst string) []models.Manifest {
	t.Helper()
	ms, err := load.ReadManifests(wh)
	if err != nil {
		t.Fatal(err)
	}
	var out []models.Manifest
	for _, m := range ms {
		if m.InstallationID == inst && m.Status == models.RunCommitted {
			out = append(out, m)
		}
	}
	return out
}

// The period views cover every day, week and month from the first to the
// last turn, each turn once per grain; no column is HUGEINT (BI drivers
// cannot read it).
func TestPeriodViews(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "lab")
	src := testkit.SourceDB(t, testkit.Fixture(t, "fresh-activated.db"))
	turns := testkit.One(t, src, `SELECT count(*) FROM task_session_turns`)
	days := testkit.One(t, src, `SELECT CAST(julianday(date(max(started_at))) - julianday(date(min(started_at))) AS INTEGER) + 1 FROM task_session_turns`)
	for _, grain := range []string{"day", "week", "month"} {
		if got := duckOne(t, wh, `SELECT sum(turns) FROM fanout_by_period WHERE grain = '`+grain+`'`); got != turns {
			t.Errorf("%s: %s turns, want %s", grain, got, turns)
		}
	}
	if got := duckOne(t, wh, `SELECT count(*) FROM fanout_by_period WHERE grain = 'day'`); got != days {
		t.Errorf("%s day rows, want %s (every day from the first to the last turn)", got, days)
	}
	// A day without turns inside the range is listed, with 0 turns and
	// NULL exact figures.
	gap := testkit.CopyFixture(t, "fresh-activated.db")
	testkit.SQLiteExec(t, gap, `DELETE FROM task_session_turns WHERE date(started_at) = (SELECT date(min(started_at), '+1 day') FROM task_session_turns)`)
	gapWH := filepath.Join(t.TempDir(), "gap")
	if _, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: gapWH,
		Installations: []pipeline.Installation{{Name: "gap", Source: gap}}}); err != nil {
		t.Fatal(err)
	}
	if got := duckOne(t, gapWH, `SELECT count(*) || ' ' || min(turns) || ' ' || count(avg_fanout_complete) FROM fanout_by_period WHERE grain = 'day' AND period_start = (SELECT min(period_start) + 1 FROM fanout_by_period WHERE grain = 'day')`); got != "1 0 0" {
		t.Errorf("the day without turns: %s, want listed with 0 turns and no exact average", got)
	}
	if got := duckOne(t, wh, `SELECT sum(subagents) FROM subagent_usage_by_model_period WHERE grain = 'month'`); got != duckOne(t, wh, `SELECT count(*) FROM fact_subagent_context`) {
		t.Errorf("usage by month covers %s rows", got)
	}
	if got := duckRows(t, wh, `SELECT table_name || '.' || column_name FROM duckdb_columns() WHERE data_type = 'HUGEINT'`); len(got) > 0 {
		t.Errorf("HUGEINT columns: %v", got)
	}
}

// Installation names hold on every platform: no trailing dot, no Windows
// device name, and no new name that differs from a known one only in case.
func TestInstallationNamesHoldEverywhere(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"foo.", "CON", "nul.db", "Com1", "lpt9", "a/b", ".x", ""} {
		if load.ValidName(bad) == nil {
			t.Errorf("ValidName(%q) accepted", bad)
		}
	}
	for _, good := range []string{"laptop", "team.prod", "console", "com10", "a-b_c.d"} {
		if err := load.ValidName(good); err != nil {
			t.Errorf("ValidName(%q): %v", good, err)
		}
	}
	wh := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, wh, 0, "Lab")
	_, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh,
		Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
	if !errors.Is(err, load.ErrSourceChanged) || !strings.Contains(err.Error(), `"Lab"`) {
		t.Errorf("a name differing only in case: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wh, "_runs", "lab")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused name left %v", err)
	}
}

// A rebuild that runs out of DuckDB's memory limit is done again from
// scratch with a larger one, says so, and serves the same data. (Not
// parallel: it changes the process-wide first-attempt limit,
// internal/seams.)
func TestRebuildOutOfMemoryIsDoneAgain(t *testing.T) {
	control := filepath.Join(t.TempDir(), "wh")
	safetyRun(t, control, 0, "lab")
	restore := seams.SetRebuildMemoryLimit("1MB")
	wh := filepath.Join(t.TempDir(), "wh")
	res := safetyRun(t, wh, 0, "lab")
	restore()
	if !strings.Contains(res.MemoryRetry, "1MB memory limit") || !strings.Contains(res.MemoryRetry, "Out of Memory") ||
		!strings.Contains(res.MemoryRetry, load.RetryMemoryLimit) {
		t.Fatalf("MemoryRetry = %q, want the first limit, DuckDB's error and the second limit", res.MemoryRetry)
	}
	const q = `SELECT (SELECT count(*) FROM fact_subagent_context) || ' ' || (SELECT count(*) FROM dim_turn) || ' ' ||
		(SELECT count(*) FROM disclosures) || ' ' || (SELECT count(*) FROM runs)`
	if got, want := duckOne(t, wh, q), duckOne(t, control, q); got != want || want == "0 0 0 0" {
		t.Errorf("rows served after the retry: %s, without it: %s", got, want)
	}
	if fi, err := os.Stat(filepath.Join(wh, "_build")); err == nil {
		t.Errorf("the build directory remained: %v", fi.Name())
	}
}

// A first build starts from the built-in empty warehouse and serves what a
// build from nothing serves. A record whose schema key differs from this
// binary's makes it create the views anew; one whose layout key differs
// (another DuckDB library or storage option) makes it build from nothing,
// and say why. (Not parallel: it changes the process-wide
// template record, internal/seams.)
func TestFirstBuildStartsFromTheTemplate(t *testing.T) {
	control := filepath.Join(t.TempDir(), "wh")
	want := safetyRun(t, control, 0, "lab")
	if r := want.Rebuild; !r.FromTemplate || !r.ViewsKept || r.FullReason != "no warehouse.duckdb yet" {
		t.Fatalf("first build: %+v, want from the template with its views kept", r)
	}
	const q = `SELECT (SELECT count(*) FROM fact_subagent_context) || ' ' || (SELECT count(*) FROM dim_turn) || ' ' ||
		(SELECT count(*) FROM disclosures) || ' ' || (SELECT count(*) FROM runs) || ' ' ||
		(SELECT count(*) FROM duckdb_views() WHERE NOT internal) || ' ' ||
		(SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL AND comment <> '') || ' ' ||
		(SELECT comment FROM duckdb_views() WHERE view_name = 'fanout_by_turn')`
	base := duckOne(t, control, q)
	for _, tc := range []struct {
		name, layout, schema string
		template, viewsKept  bool
		reason               string
	}{
		{name: "another schema key", schema: strings.Repeat("0", 64), template: true, reason: "no warehouse.duckdb yet"},
		{name: "another layout key", layout: strings.Repeat("1", 64),
			reason: "no warehouse.duckdb yet (built from nothing: the built-in empty warehouse could not start it, because the last build stored its tables another way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restore := seams.SetTemplateKeys(tc.layout, tc.schema)
			defer restore()
			wh := filepath.Join(t.TempDir(), "wh")
			r := safetyRun(t, wh, 0, "lab").Rebuild
			if r.FromTemplate != tc.template || r.ViewsKept != tc.viewsKept || !strings.HasPrefix(r.FullReason, tc.reason) {
				t.Errorf("rebuild %+v, want template=%v views kept=%v, reason %q", r, tc.template, tc.viewsKept, tc.reason)
			}
			if got := duckOne(t, wh, q); got != base {
				t.Errorf("served: %s\nfrom the template: %s", got, base)
			}
			if fi, err := os.Stat(filepath.Join(wh, "_build")); err == nil {
				t.Errorf("the build directory remained: %v", fi.Name())
			}
		})
	}
}
