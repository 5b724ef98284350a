package pipeline

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/transform"
)

// copyToPostgres loads a SQLite Kandev store into a PostgreSQL database
// that has Kandev's PostgreSQL schema (taken from a pg_dump fixture, its
// data replaced): every row of the tables the extractor reads, every
// column both schemas share, timestamps converted to the UTC wall clock.
func copyToPostgres(t *testing.T, sqlitePath string) string {
	t.Helper()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, filepath.Join(repoRoot(t), "testdata", "kandev", "fresh-activated.pg.sql"))
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
	src := sourceDB(t, sqlitePath)
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
		for _, c := range rowsOf(t, src, `SELECT name FROM pragma_table_info(?)`, table) {
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

func pgValue(t *testing.T, pgType string, v any) any {
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

// The same generated store in SQLite and in PostgreSQL gives the same
// warehouse, row for row, provenance aside.
func TestParityDemoStoreSQLiteAndPostgres(t *testing.T) {
	t.Parallel()
	sqlitePath := filepath.Join(repoRoot(t), "testdata", "demo", "kandev-demo.db")
	dsn := copyToPostgres(t, sqlitePath)
	whS, _ := extractTo(t, sqlitePath, "demo")
	whP, _ := extractTo(t, dsn, "demo")
	for _, table := range []string{"fact_subagent_context", "dim_session", "dim_turn", "dim_task", "dim_workflow",
		"dim_workflow_step", "disclosures", "rejects", "fact_writer_health"} {
		exclude := []string{}
		if table == "fact_writer_health" {
			exclude = []string{"evaluated_at"}
		}
		got, want := parquetTable(t, whP, table, exclude...), parquetTable(t, whS, table, exclude...)
		if len(want) == 0 && table != "rejects" {
			t.Errorf("%s is empty", table)
		}
		equalSets(t, table, got, want)
	}
	equalSets(t, "installation state",
		parquetTable(t, whP, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"),
		parquetTable(t, whS, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"))
}
