package load_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/load"
)

// ReadIDs reads a string column of a file DuckDB wrote — several row
// groups, NULLs, a dictionary-encoded column, a value with a NUL and
// non-ASCII bytes — exactly as DuckDB reads it back, and names the file
// and column of what it cannot read, without panicking.
func TestReadIDsMatchesDuckDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ids.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`COPY (
		SELECT CASE WHEN i % 7 = 0 THEN NULL WHEN i = 1 THEN 'nul' || chr(0) || 'é' ELSE 'id-' || i END AS id,
			CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END AS kind, i AS n
		FROM range(10000) t(i)) TO '` + path + `' (FORMAT parquet, ROW_GROUP_SIZE 1000)`); err != nil {
		t.Fatal(err)
	}
	var groups int
	if err := db.QueryRow(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata('` + path + `')`).Scan(&groups); err != nil || groups < 2 {
		t.Fatalf("row groups: %d, %v", groups, err)
	}
	for _, col := range []string{"id", "kind"} {
		var got strings.Builder
		n, err := load.ReadIDs(path, col, func(id []byte) { got.Write(id); got.WriteByte('\n') })
		if err != nil {
			t.Fatal(err)
		}
		var want string
		var wantN int64
		if err := db.QueryRow(`SELECT string_agg(`+col+` || chr(10), '' ORDER BY n), count(`+col+`) FROM read_parquet('`+path+`')`).Scan(&want, &wantN); err != nil {
			t.Fatal(err)
		}
		if n != wantN || got.String() != want {
			t.Errorf("%s: read %d values (want %d); equal to DuckDB's: %v", col, n, wantN, got.String() == want)
		}
	}
	if n, _ := load.ReadIDs(path, "id", func([]byte) {}); n != 10000-1429 {
		t.Errorf("non-NULL ids: %d, want %d", n, 10000-1429)
	}

	for col, want := range map[string]string{"n": "column n is INT64, not a string", "missing": "no column missing"} {
		if _, err := load.ReadIDs(path, col, func([]byte) {}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("column %s: %v, want an error naming the file and %q", col, err, want)
		}
	}
	// A truncated file is an error, not a panic.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.parquet")
	if err := os.WriteFile(cut, append(data[:len(data)/2:len(data)/2], data[len(data)-8:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := load.ReadIDs(cut, "id", func([]byte) {}); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("truncated file: %v", err)
	}
}
