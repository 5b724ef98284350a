package report

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// Every connection the pool opens reads the warehouse and is locked down:
// the settings are the database's, not the first connection's.
func TestOpenWarehouseLocksEveryConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warehouse.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE runs AS SELECT 'r1' AS run_id`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ctx := context.Background()
	wh, err := OpenWarehouse(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	var conns []*sql.Conn
	for i := 0; i < 3; i++ { // held at once: three connections
		c, err := wh.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var run, ext, locked string
		if err := c.QueryRowContext(ctx, `SELECT run_id, current_setting('enable_external_access'), current_setting('lock_configuration') FROM runs`).Scan(&run, &ext, &locked); err != nil || run != "r1" || ext != "false" || locked != "true" {
			t.Errorf("connection %d: %q %q %q %v", i, run, ext, locked, err)
		}
		if _, err := c.ExecContext(ctx, `SET enable_external_access = true`); err == nil || !strings.Contains(err.Error(), "locked") {
			t.Errorf("connection %d: SET enable_external_access = true: %v", i, err)
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO runs VALUES ('x')`); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("connection %d: INSERT: %v", i, err)
		}
	}
	// A missing file is an error, not a new empty database.
	if _, err := OpenWarehouse(ctx, filepath.Join(t.TempDir(), "missing.duckdb"), false); err == nil {
		t.Error("a missing warehouse opened")
	}
}
