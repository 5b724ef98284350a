package e2e_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// An updated warehouse.duckdb (the previous build, with the runs no longer
// served deleted and the new ones inserted) holds exactly what a full
// build from every retained run's files holds: every table and view, row
// for row, with the same columns, types, definitions and comments. Checked
// after each run of a schedule with two installations, retention 2, a
// source that changes between runs and an installation that stops being
// run.
func TestUpdateMatchesFullBuild(t *testing.T) {
	t.Parallel()
	storeA := testkit.CopyFixture(t, "fresh-activated.db")
	storeB := testkit.CopyFixture(t, "upgraded-backfill.db")
	wh := filepath.Join(t.TempDir(), "wh")
	run := func(ins ...pipeline.Installation) pipeline.Result {
		t.Helper()
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 2, Installations: ins})
		if err != nil || res.Failed() {
			t.Fatalf("Run: %v %v", err, res.Outcomes)
		}
		return res
	}
	a, b := pipeline.Installation{Name: "a", Source: storeA}, pipeline.Installation{Name: "b", Source: storeB}
	steps := []struct {
		ins              []pipeline.Installation
		before           func()
		added, removed   int
		updated          bool
		template         bool // a first build, from the built-in empty warehouse
		wantReasonSubstr string
	}{
		{ins: []pipeline.Installation{a, b}, template: true, wantReasonSubstr: "no warehouse.duckdb yet"},
		{ins: []pipeline.Installation{a, b}, updated: true, added: 2, before: func() {
			testkit.SQLiteExec(t, storeA, `DELETE FROM task_session_subagents WHERE rowid IN (SELECT rowid FROM task_session_subagents ORDER BY rowid LIMIT 3)`)
		}},
		{ins: []pipeline.Installation{a, b}, updated: true, added: 2, removed: 2, before: func() {
			testkit.SQLiteExec(t, storeA, `DELETE FROM task_sessions WHERE id = (SELECT min(id) FROM task_sessions)`)
		}},
		{ins: []pipeline.Installation{a}, updated: true, added: 1, removed: 1},
	}
	for i, s := range steps {
		if s.before != nil {
			s.before()
		}
		res := run(s.ins...)
		got := res.Rebuild
		// Every update here follows a build by this binary, and the
		// first build starts from the built-in template: the views and
		// comments are kept (and must still match a full build's).
		kept := s.updated || s.template
		if got.Updated != s.updated || got.FromTemplate != s.template || got.Added != s.added || got.Removed != s.removed || got.ViewsKept != kept {
			t.Fatalf("run %d: rebuild %+v, want updated=%v template=%v added=%d removed=%d views kept=%v", i+1, got, s.updated, s.template, s.added, s.removed, kept)
		}
		if !s.updated && got.FullReason != s.wantReasonSubstr {
			t.Fatalf("run %d: full because %q, want %q", i+1, got.FullReason, s.wantReasonSubstr)
		}
		sameAsFullBuild(t, wh)
	}
	// The schedule's data is what it should be: run 4 serves a's latest
	// run and b's run 3.
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count(*) FROM runs WHERE served`); got != "4" {
		t.Errorf("served runs %s, want 4 (two per installation)", got)
	}
	if got := testkit.One(t, db, `SELECT count(DISTINCT (installation_id, run_id)) FROM fact_subagent_context_history`); got != "4" {
		t.Errorf("runs in fact_subagent_context_history: %s, want 4", got)
	}
}

// sameAsFullBuild fails unless wh's warehouse.duckdb holds what a full
// build of a copy of wh (retention 2, nothing expiring) holds.
func sameAsFullBuild(t *testing.T, wh string) {
	t.Helper()
	full := filepath.Join(t.TempDir(), "full")
	if err := os.CopyFS(full, os.DirFS(wh)); err != nil {
		t.Fatal(err)
	}
	w, err := load.OpenWarehouse(full)
	if err != nil {
		t.Fatal(err)
	}
	built, err := w.Rebuild(context.Background(), load.RebuildOptions{Keep: 2, Full: true})
	w.Close()
	if err != nil || built.Updated || len(built.Expired) != 0 {
		t.Fatalf("full rebuild of the copy: %v (updated %v, expired %d)", err, built.Updated, len(built.Expired))
	}
	sameDatabase(t, filepath.Join(wh, load.DatabaseFile), filepath.Join(full, load.DatabaseFile))
}

// sameDatabase fails unless the two warehouse.duckdb files hold the same
// objects (columns, types, definitions, comments) and the same rows in
// every table, the build's own id and instant aside. A view is its
// definition over the tables, so equal definitions over equal tables are
// equal views: their rows are not compared one by one.
func sameDatabase(t *testing.T, x, y string) {
	t.Helper()
	conn := memoryConn(t)
	for _, q := range []string{`ATTACH '` + x + `' AS x (READ_ONLY)`, `ATTACH '` + y + `' AS y (READ_ONLY)`} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	rows := func(q string) []string {
		t.Helper()
		r, err := conn.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var s sql.NullString
			if err := r.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s.String)
		}
		return out
	}
	catalog := func(d string) []string {
		return rows(`SELECT kind || ' ' || name || ' ' || coalesce(def, '') || ' ' || coalesce(comment, '') FROM (
			SELECT 'table' AS kind, table_name AS name, NULL AS def, comment FROM duckdb_tables() WHERE database_name = '` + d + `'
			UNION ALL SELECT 'view', view_name, sql, comment FROM duckdb_views() WHERE database_name = '` + d + `' AND NOT internal
			UNION ALL SELECT 'column', table_name || '.' || column_name, data_type || ' #' || column_index, comment FROM duckdb_columns() WHERE database_name = '` + d + `'
		) ORDER BY ALL`)
	}
	cx, cy := catalog("x"), catalog("y")
	testkit.EqualSets(t, "catalog", cx, cy)
	if len(cx) < 100 {
		t.Fatalf("catalog of %d entries: not a warehouse", len(cx))
	}
	objects := rows(`SELECT table_name FROM duckdb_tables() WHERE database_name = 'x' AND table_name <> 'warehouse_build' ORDER BY 1`)
	nonEmpty := 0
	for _, o := range objects {
		n := rows(`SELECT (SELECT count(*) FROM x.main."` + o + `") || ' ' ||
			(SELECT count(*) FROM (SELECT * FROM x.main."` + o + `" EXCEPT ALL SELECT * FROM y.main."` + o + `")) || ' ' ||
			(SELECT count(*) FROM (SELECT * FROM y.main."` + o + `" EXCEPT ALL SELECT * FROM x.main."` + o + `"))`)
		var total int
		var onlyX, onlyY int
		if _, err := fmt.Sscan(n[0], &total, &onlyX, &onlyY); err != nil {
			t.Fatal(err)
		}
		if onlyX != 0 || onlyY != 0 {
			t.Errorf("%s: %d rows only in the updated file, %d only in the full build (of %d)", o, onlyX, onlyY, total)
		}
		if total > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 8 {
		t.Errorf("only %d of %d tables have rows: the comparison proves little", nonEmpty, len(objects))
	}
}

// The update is used only on the very file the previous build installed,
// holding only the extractor's objects, stored the way this build stores
// them: anything else is built in full, and the run says why.
func TestUpdateFallsBackToFullBuild(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, wh string)
		full   bool // --full-rebuild
		reason string
		after  func(t *testing.T, wh string)
	}{
		{name: "asked", full: true, reason: "asked for (--full-rebuild)"},
		{name: "no record", reason: "no record of the last build", tamper: func(t *testing.T, wh string) {
			if err := os.Remove(filepath.Join(wh, "_database.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "record is a link", reason: "no record of the last build", tamper: func(t *testing.T, wh string) {
			p := filepath.Join(wh, "_database.json")
			elsewhere := filepath.Join(t.TempDir(), "stamp.json")
			if err := os.Rename(p, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, p); err != nil {
				t.Skip("no symbolic links here:", err)
			}
		}},
		{name: "write-ahead log", reason: "write-ahead log", tamper: func(t *testing.T, wh string) {
			if err := os.WriteFile(filepath.Join(wh, "warehouse.duckdb.wal"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "another layout", reason: "another DuckDB version or storage layout", tamper: func(t *testing.T, wh string) {
			editStamp(t, wh, func(m map[string]any) { m["layout"] = strings.Repeat("0", 64) })
		}},
		{name: "analyst view", reason: "changed since the last build", tamper: func(t *testing.T, wh string) {
			duckWrite(t, wh, `CREATE VIEW my_sessions AS SELECT session_id FROM dim_session`)
		}, after: func(t *testing.T, wh string) {
			// Carried by the full build; the next run builds in full again
			// (the file holds an analyst's object), and carries it again.
			res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 2, Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
			if err != nil || res.Failed() {
				t.Fatalf("Run: %v", err)
			}
			if res.Rebuild.Updated || !strings.Contains(res.Rebuild.FullReason, "objects of an analyst (main.my_sessions)") {
				t.Errorf("next run: %+v", res.Rebuild)
			}
			db := testkit.Duck(t, wh)
			if got := testkit.One(t, db, `SELECT count(*) = (SELECT count(*) FROM dim_session) FROM my_sessions`); got != "true" {
				t.Errorf("analyst view not carried: %s", got)
			}
		}},
		{name: "rows changed and re-recorded", reason: "columns differ", tamper: func(t *testing.T, wh string) {
			duckWrite(t, wh, `ALTER TABLE dim_task_history ADD COLUMN planted INTEGER`)
			restamp(t, wh)
		}, after: func(t *testing.T, wh string) {
			db := testkit.Duck(t, wh)
			if got := testkit.One(t, db, `SELECT count(*) FROM duckdb_columns() WHERE column_name = 'planted'`); got != "0" {
				t.Errorf("planted column kept: %s", got)
			}
		}},
		{name: "mostly free space", reason: "free space than data", tamper: func(t *testing.T, wh string) {
			duckWrite(t, wh, `CREATE TABLE filler AS SELECT range AS n, md5(range::VARCHAR) AS s FROM range(1000000)`)
			duckWrite(t, wh, `DROP TABLE filler`)
			restamp(t, wh)
		}},
	}
	run := func(t *testing.T, wh string, full bool) pipeline.Result {
		t.Helper()
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 2, FullRebuild: full,
			Installations: []pipeline.Installation{{Name: "lab", Source: testkit.Fixture(t, "fresh-activated.db")}}})
		if err != nil || res.Failed() {
			t.Fatalf("Run: %v %v", err, res.Outcomes)
		}
		return res
	}
	// Every case starts from a copy of one warehouse of two runs, the
	// second an update (a warehouse is a directory that may be copied).
	base := filepath.Join(t.TempDir(), "wh")
	run(t, base, false)
	if res := run(t, base, false); !res.Rebuild.Updated {
		t.Fatalf("second run not an update: %+v", res.Rebuild)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wh := filepath.Join(t.TempDir(), "wh")
			if err := os.CopyFS(wh, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			if c.tamper != nil {
				c.tamper(t, wh)
			}
			res := run(t, wh, c.full)
			if res.Rebuild.Updated || !strings.Contains(res.Rebuild.FullReason, c.reason) {
				t.Fatalf("rebuild %+v, want a full build because %q", res.Rebuild, c.reason)
			}
			db := testkit.Duck(t, wh)
			if got := testkit.One(t, db, `SELECT count(DISTINCT run_id) || ' ' || count(*) FROM fact_subagent_context_history`); got != "2 "+
				testkit.One(t, db, `SELECT 2 * count(*) FROM fact_subagent_context`) {
				t.Errorf("fact history: %s (runs, rows), want 2 runs of the current fact's rows", got)
			}
			if c.after != nil {
				c.after(t, wh)
			}
		})
	}
}

// An update keeps the previous build's views and comments only when
// _database.json says the same statements created them and every one is
// there; otherwise it creates them anew, and either way the file holds
// what a full build holds. The run after records the key again.
func TestUpdateKeepsViewsOnlyWhenRecorded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, wh string)
	}{
		{name: "record of an older build", tamper: func(t *testing.T, wh string) {
			editStamp(t, wh, func(m map[string]any) { delete(m, "schema") })
		}},
		{name: "other statements", tamper: func(t *testing.T, wh string) {
			editStamp(t, wh, func(m map[string]any) { m["schema"] = strings.Repeat("0", 64) })
		}},
		{name: "a view missing, re-recorded", tamper: func(t *testing.T, wh string) {
			duckWrite(t, wh, `DROP VIEW subagent_usage`)
			restamp(t, wh)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := testkit.CopyFixture(t, "fresh-activated.db")
			wh := filepath.Join(t.TempDir(), "wh")
			run := func() pipeline.RebuildSummary {
				t.Helper()
				res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 2,
					Installations: []pipeline.Installation{{Name: "lab", Source: store}}})
				if err != nil || res.Failed() {
					t.Fatalf("Run: %v %v", err, res.Outcomes)
				}
				return res.Rebuild
			}
			run()
			if got := run(); !got.Updated || !got.ViewsKept {
				t.Fatalf("second run: %+v, want an update that keeps the views", got)
			}
			c.tamper(t, wh)
			testkit.SQLiteExec(t, store, `DELETE FROM task_session_subagents WHERE rowid IN (SELECT rowid FROM task_session_subagents ORDER BY rowid LIMIT 2)`)
			if got := run(); !got.Updated || got.ViewsKept {
				t.Fatalf("after the tampering: %+v, want an update that creates the views", got)
			}
			sameAsFullBuild(t, wh)
			if got := run(); !got.Updated || !got.ViewsKept {
				t.Fatalf("the run after: %+v, want the views kept again", got)
			}
		})
	}
}

// duckWrite runs statements on warehouse.duckdb as an analyst would.
func duckWrite(t *testing.T, wh string, stmts ...string) {
	t.Helper()
	conn := memoryConn(t)
	all := append([]string{`ATTACH '` + filepath.Join(wh, load.DatabaseFile) + `' AS w`, `USE w`}, stmts...)
	all = append(all, `CHECKPOINT w`, `USE memory`, `DETACH w`)
	for _, q := range all {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// editStamp rewrites _database.json.
func editStamp(t *testing.T, wh string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(wh, "_database.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// restamp records warehouse.duckdb as it is now, as if the last build had
// left it so: what someone who can write the warehouse can do.
func restamp(t *testing.T, wh string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(wh, load.DatabaseFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	editStamp(t, wh, func(m map[string]any) {
		m["bytes"] = len(data)
		m["sha256"] = hex.EncodeToString(sum[:])
	})
}

// memoryConn is one connection to an in-memory DuckDB (memDuck), closed
// with the test: USE holds for that connection only.
func memoryConn(t *testing.T) *sql.Conn {
	t.Helper()
	conn, err := memDuck(t).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
