package lake_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/lake/hub"
	"github.com/kandev/kandev-extract/lake/laketest"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// spoke is one installation with its own local warehouse (its cache).
type spoke struct {
	name, fixture, dir string
	runs               []models.Manifest
}

func (s *spoke) extract(t *testing.T) models.Manifest {
	m := laketest.Run(t, s.dir, s.fixture, s.name)
	s.runs = append(s.runs, m)
	return m
}

// catalogDSN is a fresh catalog database on the tests' own PostgreSQL.
func catalogDSN(t *testing.T) (string, *pgtest.Cluster, string) {
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, "")
	return c.DSN(db), c, db
}

// TestLakeEndToEnd: four spokes (real fixtures under their own
// installation names) publish concurrently to an in-process S3, one killed
// mid-upload; a duplicated run id is refused; the hub ingests into Iceberg
// on the tests' PostgreSQL, twice (nothing doubles); the killed spoke
// publishes the next night; two hubs ingest concurrently; maintenance
// compacts, expires and leaves no orphan; the hub's DuckDB equals Iceberg
// scans row for row; the catalog has the JDBC-catalog layout.
func TestLakeEndToEnd(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	dsn, pg, dbName := catalogDSN(t)
	u := laketest.S3(t, "lake")
	spokes := []*spoke{
		{name: "laptop-a", fixture: "fresh-activated.db"},
		{name: "laptop-b", fixture: "upgraded-backfill.db"},
		{name: "server-c", fixture: "execution-since.db"},
		{name: "laptop-d", fixture: "capture-only.db"},
	}
	for _, s := range spokes {
		s.dir = filepath.Join(t.TempDir(), "cache")
		s.extract(t)
	}
	t.Logf("night 1 extracted in %s", time.Since(start).Round(time.Millisecond))

	// Night 1: every spoke publishes at once; laptop-d dies after its
	// fourth object.
	killed := errors.New("killed")
	var dObjects atomic.Int32
	restore := lake.SetAfterObjectHook(func(key string) error {
		if strings.Contains(key, "/installation_id=laptop-d/") && dObjects.Add(1) == 4 {
			return killed
		}
		return nil
	})
	errs := make([]error, len(spokes))
	var wg sync.WaitGroup
	for i, s := range spokes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = lake.Publish(ctx, u, s.dir, s.name, s.runs[0].RunID)
		}()
	}
	wg.Wait()
	restore()
	for i, err := range errs[:3] {
		if err != nil {
			t.Fatalf("%s: publish: %v", spokes[i].name, err)
		}
	}
	if !errors.Is(errs[3], killed) {
		t.Fatalf("laptop-d: publish: %v, want killed", errs[3])
	}
	b := openBucket(t, u)
	if ok, _ := b.Blob().Exists(ctx, lake.ManifestKey("laptop-d", spokes[3].runs[0].RunID)); ok {
		t.Fatal("the killed upload produced a manifest")
	}
	if err := lake.Publish(ctx, u, spokes[0].dir, "laptop-a", spokes[0].runs[0].RunID); !errors.Is(err, lake.ErrDuplicateRun) {
		t.Fatalf("duplicated run id: %v, want ErrDuplicateRun", err)
	}

	h, err := hub.Open(ctx, hub.Config{Bucket: u, Catalog: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rep, err := h.Ingest(ctx, hub.IngestOptions{})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(rep.Ingested) != 3 || len(rep.Problems) != 0 {
		t.Fatalf("ingest 1: %+v", rep)
	}
	ingested := []models.Manifest{spokes[0].runs[0], spokes[1].runs[0], spokes[2].runs[0]}
	checkCounts(t, h, ingested, false)
	rep, err = h.Ingest(ctx, hub.IngestOptions{})
	if err != nil {
		t.Fatalf("ingest again: %v", err)
	}
	if len(rep.Ingested) != 0 || rep.AlreadyIngested != 3 || rep.Commits != 0 || rep.Rows != 0 {
		t.Fatalf("ingest again: %+v, want nothing done", rep)
	}
	checkCounts(t, h, ingested, false)
	t.Logf("night 1 published and ingested twice at %s", time.Since(start).Round(time.Millisecond))

	// Night 2: laptop-d uploads what it missed; laptop-a has a new run.
	spokes[0].extract(t)
	for _, s := range []*spoke{spokes[3], spokes[0]} {
		done, err := lake.PublishPending(ctx, u, s.dir, s.name)
		if err != nil || len(done) != 1 || done[0] != s.runs[len(s.runs)-1].RunID {
			t.Fatalf("%s: PublishPending: %v %v", s.name, done, err)
		}
	}
	ingested = append(ingested, spokes[3].runs[0], spokes[0].runs[1])

	// Two hubs ingest night 2 at the same time: their commits conflict and
	// are retried; nothing is doubled.
	h2, err := hub.Open(ctx, hub.Config{Bucket: u, Catalog: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	reps := make([]hub.IngestReport, 2)
	for i, hh := range []*hub.Hub{h, h2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = hh.Ingest(ctx, hub.IngestOptions{})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("concurrent ingests: %v / %v", errs[0], errs[1])
	}
	t.Logf("concurrent ingests: commits %d+%d, conflict retries %d+%d", reps[0].Commits, reps[1].Commits, reps[0].Retries, reps[1].Retries)
	checkCounts(t, h, ingested, false)
	if n := len(reps[0].Ingested) + len(reps[1].Ingested); n < 2 {
		t.Fatalf("night 2: %d runs ingested, want 2", n)
	}
	t.Logf("two nights at %s", time.Since(start).Round(time.Millisecond))

	// Maintenance: compaction (small target so these files count as small),
	// expiry of every snapshot but the last, orphan cleanup.
	tms, err := h.Maintain(ctx, hub.MaintainOptions{CompactTargetBytes: 8 << 20, CompactMinInputFiles: 2, ExpireNow: true, OrphansNow: true})
	if err != nil {
		t.Fatalf("maintain: %v", err)
	}
	compacted := 0
	for _, tm := range tms {
		base, history := strings.CutSuffix(tm.Table, "_history")
		if history && lake.IsTable(strings.TrimPrefix(base, "kandev.")) && tm.FilesBefore >= 2 && tm.FilesAfter >= tm.FilesBefore {
			t.Errorf("%s: %d files before compaction, %d after", tm.Table, tm.FilesBefore, tm.FilesAfter)
		}
		compacted += tm.Compacted
	}
	if compacted == 0 {
		t.Fatal("maintenance compacted nothing")
	}
	checkCounts(t, h, ingested, true)
	checkNoOrphans(t, h)
	if rep, err = h.Ingest(ctx, hub.IngestOptions{}); err != nil || len(rep.Ingested) != 0 || rep.Commits != 0 {
		t.Fatalf("ingest after maintenance: %+v %v", rep, err)
	}
	t.Logf("maintained at %s", time.Since(start).Round(time.Millisecond))

	// The hub's DuckDB, from the snapshots' file lists, equals Iceberg
	// scans row for row.
	build, err := h.BuildDuckDB(ctx, filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatalf("build duckdb: %v", err)
	}
	bases := tablesOf(ingested)
	if len(build.Tables) != 2*len(bases) || build.Runs != len(ingested) {
		t.Fatalf("hub duckdb: %d tables, %d runs", len(build.Tables), build.Runs)
	}
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	if _, err := duck.ExecContext(ctx, `ATTACH '`+build.Path+`' AS w (READ_ONLY)`); err != nil {
		t.Fatal(err)
	}
	duck.SetMaxOpenConns(1)
	for _, bt := range build.Tables {
		sameRows(t, h, bt, duck)
	}
	results, err := h.ResultsTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	avs, err := load.AnalyticViews()
	if err != nil {
		t.Fatal(err)
	}
	var views []string
	for _, v := range avs {
		views = append(views, v.Name)
	}
	if !slices.Equal(results, slices.Sorted(slices.Values(views))) {
		t.Fatalf("results tables %v, want one per analytic view %v", results, views)
	}
	checkCatalogRows(t, pg, dbName, 2*len(bases)+len(results))

	// An independent reader (icebird) reads every Iceberg table from its
	// catalog row's metadata_location: the rows, the comments and docs are
	// the hub DuckDB's.
	readWithIcebird(t, pg, dbName, u, duck, len(results))

	// Every view a local warehouse has, the same in the hub's DuckDB:
	// each spoke's own local warehouse against the hub's rows of its
	// installation, every view, every column, and their comments.
	for _, s := range spokes {
		sameViews(t, duck, s)
	}
	t.Logf("done in %s", time.Since(start).Round(time.Millisecond))
}

// sameViews compares every view of a spoke's local warehouse with the
// hub's DuckDB (attached as w) for that installation: the same views with
// the same columns (names and types, in order), the same rows (as
// multisets), the same view and column comments (a disclosing view's own
// comment: the disclosures appended differ, the hub's naming every
// installation).
func sameViews(t *testing.T, db *sql.DB, s *spoke) {
	t.Helper()
	ctx := context.Background()
	local := filepath.Join(s.dir, "warehouse.duckdb")
	if _, err := db.ExecContext(ctx, `ATTACH '`+local+`' AS l (READ_ONLY)`); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(ctx, `DETACH l`)
	views := func(cat string) []string {
		rows, err := db.QueryContext(ctx, `SELECT view_name FROM duckdb_views() WHERE database_name = ? AND NOT internal ORDER BY view_name`, cat)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			rows.Scan(&v)
			out = append(out, v)
		}
		return out
	}
	lv, hv := views("l"), views("w")
	if len(lv) < 40 || !slices.Equal(lv, hv) {
		t.Fatalf("%s: views %v, the hub has %v", s.name, lv, hv)
	}
	type col struct{ name, typ, comment string }
	columns := func(cat, view string) []col {
		rows, err := db.QueryContext(ctx, `SELECT column_name, data_type, coalesce(comment, '') FROM duckdb_columns() WHERE database_name = ? AND table_name = ? ORDER BY column_index`, cat, view)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []col
		for rows.Next() {
			var c col
			rows.Scan(&c.name, &c.typ, &c.comment)
			out = append(out, c)
		}
		return out
	}
	comment := func(cat, view string) string {
		var c string
		if err := db.QueryRowContext(ctx, `SELECT coalesce(comment, '') FROM duckdb_views() WHERE database_name = ? AND view_name = ?`, cat, view).Scan(&c); err != nil {
			t.Fatal(err)
		}
		own, _, _ := strings.Cut(c, load.DisclosuresLead)
		return own
	}
	compared := 0
	for _, v := range lv {
		lc, hc := columns("l", v), columns("w", v)
		if !slices.Equal(lc, hc) {
			t.Errorf("%s: view %s: columns %v, the hub's %v", s.name, v, lc, hc)
			continue
		}
		if lo, ho := comment("l", v), comment("w", v); lo != ho || lo == "" {
			t.Errorf("%s: view %s: comment %q, the hub's %q", s.name, v, lo, ho)
		}
		var sel []string
		for _, c := range lc {
			if v == "current_runs" && c.name == "data_age_hours" { // now() - snapshot_at: compared below
				continue
			}
			sel = append(sel, `"`+c.name+`"`)
		}
		if !slices.ContainsFunc(lc, func(c col) bool { return c.name == "installation_id" }) {
			t.Errorf("%s: view %s has no installation_id", s.name, v)
			continue
		}
		cols := strings.Join(sel, ", ")
		q := fmt.Sprintf(`SELECT
			(SELECT count(*) FROM (SELECT %[1]s FROM l.%[2]s WHERE installation_id = $1 EXCEPT ALL SELECT %[1]s FROM w.%[2]s WHERE installation_id = $1)),
			(SELECT count(*) FROM (SELECT %[1]s FROM w.%[2]s WHERE installation_id = $1 EXCEPT ALL SELECT %[1]s FROM l.%[2]s WHERE installation_id = $1)),
			(SELECT count(*) FROM l.%[2]s WHERE installation_id = $1), (SELECT count(*) FROM w.%[2]s WHERE installation_id = $1)`, cols, v)
		var onlyLocal, onlyHub, nl, nh int64
		if err := db.QueryRowContext(ctx, q, s.name).Scan(&onlyLocal, &onlyHub, &nl, &nh); err != nil {
			t.Fatalf("%s: view %s: %v", s.name, v, err)
		}
		if onlyLocal != 0 || onlyHub != 0 || nl != nh {
			t.Errorf("%s: view %s: %d rows only in the local warehouse, %d only in the hub's (%d vs %d rows)", s.name, v, onlyLocal, onlyHub, nl, nh)
		}
		if nl > 0 {
			compared++
		}
	}
	var ageDiff float64
	if err := db.QueryRowContext(ctx, `SELECT abs(l.data_age_hours - w.data_age_hours) FROM l.current_runs l JOIN w.current_runs w USING (installation_id) WHERE installation_id = ?`, s.name).Scan(&ageDiff); err != nil || ageDiff > 0.02 {
		t.Errorf("%s: current_runs.data_age_hours differ by %v (%v)", s.name, ageDiff, err)
	}
	if compared < 25 {
		t.Errorf("%s: only %d views have rows for the installation", s.name, compared)
	}
	t.Logf("%s: %d views equal (%d with rows)", s.name, len(lv), compared)
}

// checkCounts: every Iceberg table holds exactly the rows the provenance
// of the ingested runs says were written: the history tables every run's,
// the current tables the newest run's of each installation. Counted both
// from the snapshot's file metadata and by a real scan.
func checkCounts(t *testing.T, h *hub.Hub, runs []models.Manifest, scan bool) {
	t.Helper()
	ctx := h.IO(context.Background())
	latest := map[string]models.Manifest{}
	for _, m := range runs {
		if l, ok := latest[m.InstallationID]; !ok || m.CommitSeq > l.CommitSeq {
			latest[m.InstallationID] = m
		}
	}
	for _, base := range tablesOf(runs) {
		var wantHist, wantCur int64
		for _, m := range runs {
			tp, ok := m.Provenance.Tables[base]
			if !ok {
				t.Fatalf("run %s: provenance has no row count for %s", m.RunID, base)
			}
			wantHist += tp.RowsWritten
			if latest[m.InstallationID].RunID == m.RunID {
				wantCur += tp.RowsWritten
			}
		}
		for id, want := range map[string]int64{base + "_history": wantHist, base: wantCur} {
			tbl, err := h.Catalog().LoadTable(ctx, table.Identifier{"kandev", id})
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var meta int64
			for _, task := range tasks {
				meta += task.File.Count()
			}
			scanned := meta
			if scan {
				at, err := tbl.Scan().ToArrowTable(ctx)
				if err != nil {
					t.Fatalf("%s: scan: %v", id, err)
				}
				scanned = at.NumRows()
				at.Release()
			}
			if meta != want || scanned != want {
				t.Errorf("%s: %d rows in the snapshot's files, %d scanned, the provenance says %d", id, meta, scanned, want)
			}
		}
	}
}

// tablesOf is every table the runs have a file for.
func tablesOf(runs []models.Manifest) []string {
	var out []string
	for _, m := range runs {
		for t := range m.Files {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkNoOrphans: no file under any table's location is unreferenced.
func checkNoOrphans(t *testing.T, h *hub.Hub) {
	t.Helper()
	ctx := h.IO(context.Background())
	bases, err := h.BaseTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range bases {
		for _, id := range []table.Identifier{h.HistoryTable(base), h.CurrentTable(base)} {
			tbl, err := h.Catalog().LoadTable(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(0))
			if err != nil {
				t.Fatal(err)
			}
			if files := plan.Files(); len(files) > 0 {
				t.Errorf("%s: orphan files: %v", strings.Join(id, "."), files)
			}
		}
	}
}

// sameRows compares an Iceberg scan of a table with the hub DuckDB's table
// as multisets of rows.
func sameRows(t *testing.T, h *hub.Hub, bt hub.BuiltTable, db *sql.DB) {
	t.Helper()
	ctx := h.IO(context.Background())
	tbl, err := h.Catalog().LoadTable(ctx, table.Identifier(strings.Split(bt.Iceberg, ".")))
	if err != nil {
		t.Fatal(err)
	}
	if bt.SnapshotID < 0 { // no snapshot: the DuckDB table is empty
		if bt.Rows != 0 || len(bt.Files) != 0 {
			t.Errorf("%s: no snapshot but %d files", bt.DuckDB, len(bt.Files))
		}
		return
	}
	at, err := tbl.Scan(table.WithSnapshotID(bt.SnapshotID)).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	scan := filepath.Join(t.TempDir(), bt.DuckDB+".parquet")
	f, err := os.Create(scan)
	if err != nil {
		t.Fatal(err)
	}
	if err := pqarrow.WriteTable(at, f, 1<<20, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		cols = append(cols, `"`+f.Name+`"`)
	}
	sel := strings.Join(cols, ", ")
	var onlyScan, onlyDuck, n int64
	q := fmt.Sprintf(`SELECT
		(SELECT count(*) FROM (SELECT %[1]s FROM read_parquet('%[2]s') EXCEPT ALL SELECT %[1]s FROM w.%[3]s)),
		(SELECT count(*) FROM (SELECT %[1]s FROM w.%[3]s EXCEPT ALL SELECT %[1]s FROM read_parquet('%[2]s'))),
		(SELECT count(*) FROM w.%[3]s)`, sel, scan, bt.DuckDB)
	if err := db.QueryRowContext(ctx, q).Scan(&onlyScan, &onlyDuck, &n); err != nil {
		t.Fatalf("%s: %v", bt.DuckDB, err)
	}
	if onlyScan != 0 || onlyDuck != 0 || n != at.NumRows() {
		t.Errorf("%s: %d rows only in the Iceberg scan, %d only in DuckDB (%d vs %d rows)", bt.DuckDB, onlyScan, onlyDuck, at.NumRows(), n)
	}
}

// checkCatalogRows: the catalog tables have the JDBC catalog's columns
// (what Trino's and Spark's JDBC catalogs read), one row per table.
func checkCatalogRows(t *testing.T, c *pgtest.Cluster, db string, tables int) {
	t.Helper()
	ctx := context.Background()
	conn, err := c.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	want := map[string][]string{
		"iceberg_tables":               {"catalog_name", "iceberg_type", "metadata_location", "previous_metadata_location", "table_name", "table_namespace"},
		"iceberg_namespace_properties": {"catalog_name", "namespace", "property_key", "property_value"},
	}
	for tbl, cols := range want {
		rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_name = $1 ORDER BY column_name`, tbl)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			got = append(got, s)
		}
		rows.Close()
		if !slices.Equal(got, cols) {
			t.Errorf("%s columns: %v, want %v", tbl, got, cols)
		}
	}
	var n int
	var bad int
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE catalog_name <> 'kandev' OR table_namespace <> 'kandev'
		OR iceberg_type <> 'TABLE' OR metadata_location NOT LIKE 's3://lake/iceberg/kandev.db/%/metadata/%.metadata.json'
		OR previous_metadata_location NOT LIKE 's3://lake/iceberg/kandev.db/%/metadata/%.metadata.json') FROM iceberg_tables`).Scan(&n, &bad)
	if err != nil {
		t.Fatal(err)
	}
	if n != tables || bad != 0 {
		t.Errorf("iceberg_tables: %d rows (%d not as expected), want %d", n, bad, tables)
	}
}
