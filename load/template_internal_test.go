package load

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

var updateTemplate = flag.Bool("update-template", false, "rewrite the built-in empty warehouse (load/template/)")

// TestBuiltInTemplateIsCurrent builds the template afresh and requires the
// built-in one to be what it would be: the same layout and schema keys (the
// DuckDB library, storage options, every view and comment statement) and
// the same tables with the same columns. A stale template would only make
// first builds slower (they fall back to building from nothing), so this
// test is what keeps it current. `go test ./load -run
// TestBuiltInTemplateIsCurrent -update-template` rewrites it.
func TestBuiltInTemplateIsCurrent(t *testing.T) {
	ctx := context.Background()
	path, fresh, err := makeTemplate(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if *updateTemplate {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(data)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		rec, _ := json.MarshalIndent(fresh, "", "  ")
		if err := os.WriteFile(filepath.Join("template", DatabaseFile+".gz"), gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("template", "warehouse.json"), append(rec, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote load/template/ (%d bytes, %d gzipped)", len(data), gz.Len())
		return
	}
	const hint = " (run `go test ./load -run TestBuiltInTemplateIsCurrent -update-template`)"
	builtIn, err := templateStamp()
	if err != nil {
		t.Fatal(err)
	}
	if builtIn.Layout != fresh.Layout {
		t.Errorf("the built-in template's layout key %s, a fresh one's %s: another DuckDB library or storage option"+hint, builtIn.Layout, fresh.Layout)
	}
	if builtIn.Schema != fresh.Schema {
		t.Errorf("the built-in template's schema key %s, a fresh one's %s: the views or comments changed"+hint, builtIn.Schema, fresh.Schema)
	}
	embedded := filepath.Join(t.TempDir(), DatabaseFile)
	if _, err := writeTemplate(embedded); err != nil {
		t.Fatal(err)
	}
	want, got := catalogOf(t, path), catalogOf(t, embedded)
	if !slices.Equal(want, got) {
		t.Errorf("the built-in template's tables and columns differ from a fresh one's"+hint+"\n built in: %v\n fresh:    %v", got, want)
	}
	if len(want) == 0 {
		t.Error("a fresh template has no tables")
	}
}

// catalogOf lists a database's tables and views with their columns and
// types, and the number of rows of each table.
func catalogOf(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(comment, '')
		FROM duckdb_columns() WHERE NOT internal ORDER BY table_name, column_index`)
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
	var n int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM fact_subagent_context_history) + (SELECT count(*) FROM runs)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("rows in the fact and runs: %d", n))
}

// TestWriteTemplateRefusesAMismatch: the built-in database is written only
// as its record describes it, and never over an existing file.
func TestWriteTemplateRefusesAMismatch(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, DatabaseFile)
	if _, err := writeTemplate(p); err != nil {
		t.Fatal(err)
	}
	if _, err := writeTemplate(p); err == nil {
		t.Error("writeTemplate over an existing file: no error")
	}
	saved := templateStampJSON
	defer func() { templateStampJSON = saved }()
	var s databaseStamp
	json.Unmarshal(saved, &s)
	s.SHA256 = "0000000000000000000000000000000000000000000000000000000000000000"
	templateStampJSON, _ = json.Marshal(s)
	if _, err := writeTemplate(filepath.Join(dir, "other.duckdb")); err == nil {
		t.Error("a template whose SHA-256 differs from its record: no error")
	}
}
