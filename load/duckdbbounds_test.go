package load

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
)

// Whatever DuckDB chose for this machine (one thread per core), a run's
// connection ends up with the bounded thread count and memory limit.
func TestBoundDuckDBOverridesTheMachineDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A 64-core machine's default, and a generous memory limit.
	for _, q := range []string{`SET threads = 64`, `SET memory_limit = '8GB'`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := BoundDuckDB(ctx, conn); err != nil {
		t.Fatal(err)
	}
	var threads int
	var limit string
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('threads'), current_setting('memory_limit')`).Scan(&threads, &limit); err != nil {
		t.Fatal(err)
	}
	if threads != DuckDBThreads {
		t.Errorf("threads = %d, want %d", threads, DuckDBThreads)
	}
	// DuckDB reports the limit in its own units: 64MB is 61.0 MiB.
	if want := fmt.Sprintf("%.1f MiB", float64(DuckDBMemoryBytes)/(1<<20)); limit != want || want != "61.0 MiB" {
		t.Errorf("memory_limit = %q, want %s (%s)", limit, want, DuckDBMemoryLimit)
	}
}
