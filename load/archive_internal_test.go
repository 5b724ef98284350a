package load

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// An archive whose statement runs out of DuckDB's memory limit is written
// again with a larger one, says so, holds the deleted rows, and leaves the
// connection's limit as it was.
func TestWriteArchiveOutOfMemoryIsDoneAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	stage, err := (&Warehouse{Dir: dir}).Stage("lab", "r2")
	if err != nil {
		t.Fatal(err)
	}
	var a Archived
	for _, x := range Archives {
		if x.Archive == TableArchiveSubagent {
			a = x
		}
	}
	arch, err := OpenArchiver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arch.Close()
	conn := arch.duck.Conn
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The previous run had ids 0..19999, this run 10000..19999: 10000 deleted.
	prev, cur := filepath.Join(dir, "prev.parquet"), filepath.Join(dir, "cur.parquet")
	rows := func(run string, from int, path string) string {
		return `COPY (SELECT '` + run + `' AS run_id, 'id-' || i AS ` + a.IDColumn + `, repeat('x', 300) AS payload
			FROM range(` + strconv.Itoa(from) + `, 20000) t(i)) TO ` + quote(path) + ` (FORMAT parquet)`
	}
	exec(rows("r1", 0, prev))
	exec(rows("r2", 10000, cur))
	exec(`CREATE TEMP TABLE deleted_ids AS SELECT 'id-' || i AS id FROM range(10000) t(i)`)
	exec(`SET memory_limit = '1MB'`)
	var before string
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	retried, err := stage.WriteArchive(ctx, arch, ArchiveSource{Archived: a, Current: cur, Previous: prev, DeletedIDs: "deleted_ids",
		PreviousRun: "r1", PreviousSnapshot: "2026-12-01T00:00:00Z"}, "r2", "{}")
	if err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	if !strings.Contains(retried, "Out of Memory") || !strings.Contains(retried, before) || !strings.Contains(retried, RetryMemoryLimit) {
		t.Errorf("retried = %q, want DuckDB's error, the first limit %s and %s", retried, before, RetryMemoryLimit)
	}
	var after string
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&after); err != nil || after != before {
		t.Errorf("memory limit after: %q (%v), want %q", after, err, before)
	}
	exec(`SET memory_limit = '256MB'`)
	var got string
	q := `SELECT count(*) || ' ' || count(DISTINCT ` + a.IDColumn + `) || ' ' || min(` + a.IDColumn + `) || ' ' || max(run_id) || ' ' ||
		min(deleted_detected_run_id) || ' ' || min(last_seen_run_id) FROM read_parquet(` + quote(stage.Path(a.Archive)) + `)`
	if err := conn.QueryRowContext(ctx, q).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "10000 10000 id-0 r2 r2 r1"; got != want {
		t.Errorf("archive: %s, want %s", got, want)
	}
}
