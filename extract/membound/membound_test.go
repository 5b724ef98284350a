package membound

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// peakLimit is the bound on a run's peak RSS, whatever the values.
const peakLimit = 256 << 20

// childReport is what the child (kxmem run) prints.
type childReport struct {
	VmHWMKiB int64  // peak resident set of the child, from /proc/self/status
	RunID    string // the installation's run
	Err      string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if helperDir != "" {
		os.RemoveAll(helperDir)
	}
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

var (
	helperOnce sync.Once
	helperDir  string
	helperPath string
	helperErr  error
)

// helper builds the child, ./kxmem, once per test binary, WITHOUT the race
// detector, should the tests run with -race: the peak RSS it reports is then
// the extractor's own, and the hostile values are generated at native
// speed.
func helper(t *testing.T) string {
	t.Helper()
	helperOnce.Do(func() {
		helperDir, helperErr = os.MkdirTemp("", "kxmem-")
		if helperErr != nil {
			return
		}
		goCmd, err := exec.LookPath("go")
		if err != nil {
			helperErr = fmt.Errorf("the go command builds the child: %w", err)
			return
		}
		helperPath = filepath.Join(helperDir, "kxmem")
		cmd := exec.Command(goCmd, "build", "-o", helperPath, "./extract/membound/kxmem")
		cmd.Dir = testkit.RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			helperErr = fmt.Errorf("go build kxmem: %v\n%s", err, out)
		}
	})
	if helperErr != nil {
		t.Fatal(helperErr)
	}
	return helperPath
}

// sqliteExec runs statements on a SQLite file in the child (the hostile
// values are hundreds of MB; the race detector would take minutes).
func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	cmd := exec.Command(helper(t), "sqlite", path)
	cmd.Stdin = strings.NewReader(strings.Join(stmts, "\n--;\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// extractInChild runs one extraction in the child, whose peak RSS is its
// own: the test process is large itself.
func extractInChild(t *testing.T, source, installation string) (string, childReport) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	job, _ := json.Marshal(struct{ Source, Warehouse, Installation string }{source, wh, installation})
	cmd := exec.Command(helper(t), "run", string(job))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var rep childReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("child output %q: %v\n%s", out, err, stderr.String())
	}
	if rep.VmHWMKiB <= 0 {
		t.Fatalf("child reported no VmHWM: %+v", rep)
	}
	t.Logf("peak RSS of the run: %.1f MiB", float64(rep.VmHWMKiB)/1024)
	if rep.Err != "" {
		t.Fatalf("run failed: %s", rep.Err)
	}
	return wh, rep
}

// Sizes of the hostile values. SQLite reads a prefix of a capped value
// only up to models.SQLitePrefixBytes (its substr loads the whole value):
// midBytes is under that bound, hugeBytes far over it.
const (
	hugeBytes    = 300_000_000
	midBytes     = 600_000
	versionBytes = 30_000_000
	junkRows     = 2_000_000
	metadataPad  = 5_000_000
)

// metadataHead opens a turn's hostile metadata: valid JSON, 5 MB long.
const metadataHead = `{"workflow_step_id_at_start":"s","pad":"`

// hostile names the rows a test made hostile.
type hostile struct {
	huge, mid, utf8 string // subagent ids: model of hugeBytes, of midBytes, 'a'x255 + 'é' + ...
	stamp, metric   string // subagent ids: settled_at of 100 kB, total_tokens of 2 MB
	turn            string // turn id: metadata of 5 MB
}

func TestHugeValuesSQLite(t *testing.T) {
	src := testkit.CopyFixture(t, "fresh-activated.db")
	db := testkit.SourceDB(t, src)
	ids := firstIDs(t, db, "SELECT id FROM task_session_subagents ORDER BY id LIMIT 5")
	turns := firstIDs(t, db, "SELECT id FROM task_session_turns ORDER BY id LIMIT 1")
	db.Close()
	h := hostile{huge: ids[0], mid: ids[1], utf8: ids[2], stamp: ids[3], metric: ids[4], turn: turns[0]}
	sqliteExec(t, src,
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', %d, 'm') WHERE id = '%s'`, hugeBytes, h.huge),
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', %d, 'x') WHERE id = '%s'`, midBytes, h.mid),
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', 255, 'a') || 'é' || printf('%%.*c', 1000, 'b') WHERE id = '%s'`, h.utf8),
		fmt.Sprintf(`UPDATE task_session_subagents SET settled_at = '2026-08-20 12:00:00+00:00' || printf('%%.*c', 100000, ' ') WHERE id = '%s'`, h.stamp),
		fmt.Sprintf(`UPDATE task_session_subagents SET total_tokens = printf('%%.*c', 2000000, 'n') WHERE id = '%s'`, h.metric),
		fmt.Sprintf(`UPDATE task_session_turns SET metadata = '%s' || printf('%%.*c', %d, 'p') || '"}' WHERE id = '%s'`, metadataHead, metadataPad, h.turn),
		fmt.Sprintf(`UPDATE kandev_meta SET value = printf('%%.*c', %d, 'v') WHERE key = 'kandev_version'`, versionBytes),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO kandev_meta (key, value) SELECT 'junk-' || i, printf('%%.*c', 64, 'j') FROM n`, junkRows),
		// A message whose metadata is 300 MB (after capture_since): the
		// health check and the message evidence measure it, never load it.
		fmt.Sprintf(`UPDATE task_session_messages SET metadata = '{"normalized":{"kind":"subagent_task"},"pad":"' || printf('%%.*c', %d, 'p') || '"}'
			WHERE id = (SELECT id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)`, hugeBytes))

	wh, rep := extractInChild(t, src, "sqlite")
	checkRun(t, wh, "sqlite", rep, h, false)
}

func TestHugeValuesPostgres(t *testing.T) {
	c := pgtest.Shared(t)
	name := pgtest.NewDatabase(t, c, filepath.Join(testkit.RepoRoot(t), "testdata", "kandev", "fresh-activated.pg.sql"))
	dsn := c.DSN(name)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	first := func(q string, n int) []string {
		rows, _ := conn.Query(ctx, q)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) < n {
			t.Fatalf("%s: %v (%d rows)", q, err, len(ids))
		}
		return ids
	}
	ids := first("SELECT id FROM task_session_subagents ORDER BY id LIMIT 5", 5)
	turns := first("SELECT id FROM task_session_turns ORDER BY id LIMIT 1", 1)
	h := hostile{huge: ids[0], mid: ids[1], utf8: ids[2], stamp: ids[3], metric: ids[4], turn: turns[0]}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// PostgreSQL's timestamp and integer columns cannot hold such text;
	// the hostile text goes where the schema allows it.
	exec(`UPDATE task_session_subagents SET model = repeat('m', $1) WHERE id = $2`, hugeBytes, h.huge)
	exec(`UPDATE task_session_subagents SET model = repeat('x', $1) WHERE id = $2`, midBytes, h.mid)
	exec(`UPDATE task_session_subagents SET model = repeat('a', 255) || 'é' || repeat('b', 1000) WHERE id = $1`, h.utf8)
	exec(`UPDATE task_session_turns SET metadata = $1 || repeat('p', $2) || '"}' WHERE id = $3`, metadataHead, metadataPad, h.turn)
	exec(`UPDATE kandev_meta SET value = repeat('v', $1) WHERE key = 'kandev_version'`, versionBytes)
	exec(`INSERT INTO kandev_meta (key, value) SELECT 'junk-' || i, repeat('j', 64) FROM generate_series(1, $1) i`, junkRows)
	h.stamp, h.metric = "", ""

	wh, rep := extractInChild(t, dsn, "pg")
	checkRun(t, wh, "pg", rep, h, true)
}

// checkRun asserts what the run kept: peak RSS under the bound, every
// over-long value cut (or, on SQLite over models.SQLitePrefixBytes, not
// read) and listed in rejects with its length, and kandev_version capped
// in the provenance, the manifest and DuckDB.
func checkRun(t *testing.T, wh, inst string, rep childReport, h hostile, prefixAlways bool) {
	t.Helper()
	if peak := rep.VmHWMKiB << 10; peak >= peakLimit {
		t.Errorf("peak RSS %.1f MiB, want under %d MiB", float64(peak)/(1<<20), peakLimit>>20)
	}
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	part := func(table string) string {
		return filepath.Join(wh, table, "installation_id="+inst, "run_id="+rep.RunID, "part-0.parquet")
	}

	// The fact: the values as stored.
	hugeLen := "NULL"
	if prefixAlways {
		hugeLen = "256"
	}
	got := testkit.RowsOf(t, duck, `SELECT subagent_id, strlen(model) FROM read_parquet(?) WHERE subagent_id IN (?, ?, ?)`,
		part("fact_subagent_context"), h.huge, h.mid, h.utf8)
	testkit.EqualSets(t, "fact models", got, sorted([]string{h.huge + "|" + hugeLen, h.mid + "|256", h.utf8 + "|255"}))
	for id, want := range map[string]string{h.mid: strings.Repeat("x", 256), h.utf8: strings.Repeat("a", 255)} {
		if m := testkit.One(t, duck, `SELECT model FROM read_parquet(?) WHERE subagent_id = ?`, part("fact_subagent_context"), id); m != want {
			t.Errorf("model of %s stored as %.20q… (%d bytes), want its first %d bytes", id, m, len(m), len(want))
		}
	}
	if prefixAlways {
		if m := testkit.One(t, duck, `SELECT model FROM read_parquet(?) WHERE subagent_id = ?`, part("fact_subagent_context"), h.huge); m != strings.Repeat("m", models.MaxLabelBytes) {
			t.Errorf("huge model stored as %d bytes %.20q…, want its first %d bytes", len(m), m, models.MaxLabelBytes)
		}
	}

	// Every cut is in rejects, with the original length and the prefix.
	kept := func(n, k int) string {
		return fmt.Sprintf("value is %d bytes, over the 256-byte cap: the warehouse keeps its first %d bytes (cut by the source query at a character boundary)", n, k)
	}
	hugeRaw, hugeReason := strings.Repeat("m", 256), kept(hugeBytes, 256)
	if !prefixAlways {
		hugeRaw, hugeReason = "NULL", fmt.Sprintf("value is %d bytes, over the 256-byte cap; SQLite cannot read part of a value without loading all of it, "+
			"so a value over 1048576 bytes is measured but not read: the warehouse holds NULL", hugeBytes)
	}
	want := []string{
		"task_session_subagents|" + h.huge + "|model|" + hugeRaw + "|truncated_value|" + hugeReason,
		"task_session_subagents|" + h.mid + "|model|" + strings.Repeat("x", 256) + "|truncated_value|" + kept(midBytes, 256),
		"task_session_subagents|" + h.utf8 + "|model|" + strings.Repeat("a", 255) + "|truncated_value|" + kept(255+2+1000, 255),
		"kandev_meta|kandev_version|value|" + strings.Repeat("v", 256) + "|truncated_value|" + kept(versionBytes, 256),
		fmt.Sprintf("task_session_turns|%s|metadata|NULL|nulled_value|metadata is %d bytes, over the 16384 bytes read for workflow_step_id_at_start: not read",
			h.turn, len(metadataHead)+metadataPad+2),
	}
	if h.stamp != "" {
		want = append(want,
			"task_session_subagents|"+h.stamp+"|settled_at|2026-08-20 12:00:00+00:00"+strings.Repeat(" ", 64-25)+
				"|nulled_value|not a timestamp: 100025 bytes, over the 64 bytes read of a timestamp column",
			"task_session_subagents|"+h.metric+"|total_tokens|NULL|nulled_value|not an integer: 2000000 bytes of text, over the 64 bytes read of an integer column")
	}
	got = testkit.RowsOf(t, duck, `SELECT table_name, row_id, column_name, raw_value, action, reason
		FROM read_parquet(?) WHERE action = 'truncated_value' OR reason LIKE '% bytes%'`, part("rejects"))
	testkit.EqualSets(t, "rejects", got, sorted(want))

	// kandev_version: capped in the manifest and every file's provenance.
	version := strings.Repeat("v", models.MaxLabelBytes)
	manifestPath := filepath.Join(wh, "_runs", inst, rep.RunID+".json")
	doc, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	var m models.Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if m.Provenance == nil || m.Provenance.KandevVersion == nil || *m.Provenance.KandevVersion != version {
		t.Errorf("manifest kandev_version is not the %d-byte prefix", models.MaxLabelBytes)
	}
	if len(doc) > 64<<10 {
		t.Errorf("manifest is %d bytes", len(doc))
	}
	if m.Provenance != nil && m.Provenance.RejectedValues < int64(len(want)) {
		t.Errorf("provenance rejected_values = %d, want at least %d", m.Provenance.RejectedValues, len(want))
	}
	files := 0
	err = filepath.Walk(wh, func(path string, info os.FileInfo, err error) error {
		if err != nil || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		files++
		if info.Size() > 1<<20 {
			t.Errorf("%s is %d bytes", path, info.Size())
		}
		var prov string
		if err := duck.QueryRow(`SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = 'kandev_extract.provenance'`, path).Scan(&prov); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var p models.Provenance
		if err := json.Unmarshal([]byte(prov), &p); err != nil {
			return err
		}
		if p.KandevVersion == nil || *p.KandevVersion != version {
			t.Errorf("%s: provenance kandev_version is not the %d-byte prefix", path, models.MaxLabelBytes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Errorf("%d Parquet files, want 10", files)
	}
	w := testkit.Duck(t, wh)
	if got := testkit.One(t, w, `SELECT strlen(kandev_version) || '|' || (kandev_version = ?) FROM runs WHERE run_id = ?`, version, rep.RunID); got != "256|true" {
		t.Errorf("runs.kandev_version: %s", got)
	}
	if got := testkit.One(t, w, `SELECT strlen(kandev_version) FROM installations`); got != "256" {
		t.Errorf("installations.kandev_version is %s bytes", got)
	}
}

func firstIDs(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// sweepBytes is over models.SQLitePrefixBytes: SQLite reads no prefix.
const sweepBytes = 2_000_000

// sweepSpecs are the scans of a run; every stored column they read is
// capped.
func sweepSpecs() []models.TableSpec {
	var out []models.TableSpec
	for _, t := range models.Scanned() {
		out = append(out, extract.Spec(t, true))
	}
	return out
}

// sweepExpect is the rejects entry an over-long value of column c gets.
func sweepExpect(table string, c models.ColumnSpec) string {
	action := transform.ActionTruncatedValue
	switch {
	case table == "task_session_subagents" && c.Name == "observed_at":
		action = transform.ActionQuarantinedRow
	case c.Name == "is_async": // not nullable: written as false
		action = transform.ActionReplacedValue
	case c.Name == "metadata", c.Kind != models.KindText:
		action = transform.ActionNulledValue
	}
	return table + "|" + c.Name + "|" + action
}

// TestEveryCappedColumnSQLite puts a value over 1 MiB in every column a run reads
// from every table (on the table's first row; subagents' observed_at on
// the second, since it quarantines its row): the run stays under the bound
// and lists each value once, with the action its column calls for.
func TestEveryCappedColumnSQLite(t *testing.T) {
	src := testkit.CopyFixture(t, "fresh-activated.db")
	stmts := []string{`PRAGMA ignore_check_constraints = 1`} // tasks.priority
	var want []string
	for _, spec := range sweepSpecs() {
		for _, c := range spec.Columns {
			if c.Expr != "" {
				continue
			}
			row := "(SELECT min(rowid) FROM " + spec.Name + ")"
			if spec.Name == "task_session_subagents" && c.Name == "observed_at" {
				row = "(SELECT rowid FROM " + spec.Name + " ORDER BY rowid LIMIT 1 OFFSET 1)"
			}
			stmts = append(stmts, fmt.Sprintf(`UPDATE %s SET %q = printf('%%.*c', %d, 'z') WHERE rowid = %s`, spec.Name, c.Name, sweepBytes, row))
			want = append(want, sweepExpect(spec.Name, c))
		}
	}
	sqliteExec(t, src, stmts...)
	wh, rep := extractInChild(t, src, "sweep")
	checkSweep(t, wh, "sweep", rep, want)
}

func TestEveryCappedColumnPostgres(t *testing.T) {
	c := pgtest.Shared(t)
	name := pgtest.NewDatabase(t, c, filepath.Join(testkit.RepoRoot(t), "testdata", "kandev", "fresh-activated.pg.sql"))
	dsn := c.DSN(name)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Foreign keys and CHECK constraints off for this session: a hostile
	// store need not have kept them.
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_priority_check`); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, spec := range sweepSpecs() {
		for _, col := range spec.Columns {
			var typ string
			var indexed bool
			err := conn.QueryRow(ctx, `SELECT format_type(a.atttypid, a.atttypmod), EXISTS (SELECT 1 FROM pg_index i
					WHERE i.indrelid = a.attrelid AND a.attnum = ANY (i.indkey))
				FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attname = $2`, spec.Name, col.Name).Scan(&typ, &indexed)
			if col.Expr != "" || err != nil || typ != "text" { // timestamp, integer: fixed width, never huge
				continue
			}
			n := sweepBytes
			if indexed { // a B-tree entry holds at most about 2.7 kB
				n = 2000
			}
			q := fmt.Sprintf(`UPDATE %s SET %q = repeat('z', %d) WHERE ctid = (SELECT min(ctid) FROM %s)`, spec.Name, col.Name, n, spec.Name)
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			want = append(want, sweepExpect(spec.Name, col))
		}
	}
	wh, rep := extractInChild(t, dsn, "sweep")
	checkSweep(t, wh, "sweep", rep, want)
}

func checkSweep(t *testing.T, wh, inst string, rep childReport, want []string) {
	t.Helper()
	if peak := rep.VmHWMKiB << 10; peak >= peakLimit {
		t.Errorf("peak RSS %.1f MiB, want under %d MiB", float64(peak)/(1<<20), peakLimit>>20)
	}
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	part := filepath.Join(wh, "rejects", "installation_id="+inst, "run_id="+rep.RunID, "part-0.parquet")
	got := testkit.RowsOf(t, duck, `SELECT table_name, column_name, action FROM read_parquet(?)
		WHERE regexp_matches(reason, '^(value is|not a timestamp:|not an integer:|metadata is) (2000|2000000) bytes')`, part)
	testkit.EqualSets(t, "rejects of the over-long values", got, sorted(want))
	// No string anywhere in the warehouse's Parquet is longer than a cap.
	got = testkit.RowsOf(t, duck, `SELECT count(*) FROM read_parquet(?) WHERE strlen(coalesce(raw_value, '')) > 260 OR strlen(coalesce(row_id, '')) > 256`, part)
	if got[0] != "0" {
		t.Errorf("%s rejects rows hold more than a cap", got[0])
	}
}
