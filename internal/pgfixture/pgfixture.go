// Package pgfixture loads Kandev stores into throwaway PostgreSQL
// databases for tests (internal/pgtest's shared cluster): the checked-in
// pg_dump fixtures, or any SQLite store copied row for row.
package pgfixture

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/transform"
)

// Load loads a checked-in pg_dump (testdata/kandev/<dump>) into a fresh
// database of the shared cluster and returns the cluster and its DSN.
func Load(t testing.TB, dump string) (*pgtest.Cluster, string) {
	t.Helper()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, filepath.Join(testkit.RepoRoot(t), "testdata", "kandev", dump))
	return c, c.DSN(db)
}

// Exec runs statements on PostgreSQL, failing the test on the first error.
func Exec(t testing.TB, dsn string, stmts ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// Rows runs a query on PostgreSQL and renders the rows as testkit.RowsOf does.
func Rows(t testing.TB, dsn, q string, args ...any) []string {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return testkit.RowsOf(t, db, q, args...)
}

// CopySQLite loads a SQLite Kandev store into a PostgreSQL database
// that has Kandev's PostgreSQL schema (taken from a pg_dump fixture, its
// data replaced): every row of the tables the extractor reads, every
// column both schemas share, timestamps converted to the UTC wall clock.
func CopySQLite(t testing.TB, sqlitePath string) string {
	t.Helper()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, filepath.Join(testkit.RepoRoot(t), "testdata", "kandev", "fresh-activated.pg.sql"))
	dsn := c.DSN(db)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := []string{"kandev_meta", "workflows", "workflow_steps", "tasks", "task_sessions", "task_session_turns", "task_session_messages", "task_session_subagents"}
	if _, err := conn.Exec(ctx, "TRUNCATE "+strings.Join(tables, ", ")+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	src := testkit.SourceDB(t, sqlitePath)
	for _, table := range tables {
		pgCols := map[string]string{}
		rows, err := conn.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n, ty string
			rows.Scan(&n, &ty)
			pgCols[n] = ty
		}
		rows.Close()
		var cols, sel []string
		for _, c := range testkit.RowsOf(t, src, `SELECT name FROM pragma_table_info(?)`, table) {
			if _, ok := pgCols[c]; ok {
				cols = append(cols, c)
				sel = append(sel, `"`+c+`"`)
			}
		}
		if len(cols) == 0 { // the store has no such table (e.g. before subagent capture)
			if _, err := conn.Exec(ctx, `DROP TABLE `+table+` CASCADE`); err != nil {
				t.Fatal(err)
			}
			continue
		}
		q, err := src.Query(`SELECT ` + strings.Join(sel, ", ") + ` FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		var data [][]any
		for q.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := q.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				vals[i] = pgValue(t, pgCols[c], vals[i])
			}
			data = append(data, vals)
		}
		q.Close()
		n, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(data))
		if err != nil || n != int64(len(data)) {
			t.Fatalf("copy %s: %d of %d rows: %v", table, n, len(data), err)
		}
	}
	return dsn
}

func pgValue(t testing.TB, pgType string, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if strings.HasPrefix(pgType, "timestamp") {
			at, _, err := transform.ParseStamp(x)
			if err != nil {
				t.Fatalf("timestamp %q: %v", x, err)
			}
			return at
		}
		return x
	}
	if pgType == "integer" {
		if n, ok := v.(int64); ok {
			return int32(n)
		}
	}
	return v
}
