// Package testkit holds the helpers the test packages share: the
// repository's fixtures, read-only handles on a source store and on a
// warehouse, and query results rendered as comparable sorted lines.
package testkit

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // "duckdb"
	_ "modernc.org/sqlite"             // "sqlite"
)

// RepoRoot finds the module root (where go.mod is).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// Fixture is the path of a checked-in real Kandev store (never written).
func Fixture(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(RepoRoot(t), "testdata", "kandev", name)
}

// CopyFixture copies a fixture into a temporary directory so a test may
// change it.
func CopyFixture(t testing.TB, name string) string {
	t.Helper()
	src, err := os.Open(Fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(t.TempDir(), name)
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// SQLiteExec changes a test's own copy of a store.
func SQLiteExec(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// SourceDB opens a store read-only for the test's own, independent SQL.
func SourceDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Duck opens the warehouse database read-only.
func Duck(t testing.TB, wh string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(wh, "warehouse.duckdb")+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// MemDuck is an in-memory DuckDB, for reading Parquet back.
func MemDuck(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// HashFile is the hex SHA-256 of the file at p.
func HashFile(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RowsOf renders a query's rows as sorted "a|b|c" lines: a comparable set.
func RowsOf(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				cells[i] = "NULL"
			case []byte:
				cells[i] = string(x)
			case time.Time:
				cells[i] = x.UTC().Format(time.RFC3339Nano)
			default:
				cells[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(cells, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func One(t testing.TB, db *sql.DB, q string, args ...any) string {
	t.Helper()
	r := RowsOf(t, db, q, args...)
	if len(r) != 1 {
		t.Fatalf("%s: %d rows, want 1", q, len(r))
	}
	return r[0]
}

func EqualSets(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") == strings.Join(want, "\n") {
		return
	}
	t.Errorf("%s differ: got %d rows, want %d", what, len(got), len(want))
	g := map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	w := map[string]bool{}
	for _, s := range want {
		w[s] = true
	}
	n := 0
	for _, s := range want {
		if !g[s] && n < 10 {
			t.Errorf("  missing: %s", s)
			n++
		}
	}
	for _, s := range got {
		if !w[s] && n < 20 {
			t.Errorf("  unexpected: %s", s)
			n++
		}
	}
}
