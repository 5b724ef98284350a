package sqlitedrv

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// TestDriverHandle: the sqlite3* handle of a modernc.org/sqlite
// database/sql connection is read by reflection (unexported fields db and
// tls of its conn type) for the WAL snapshot calls: a second connection's
// read transaction moved to the first one's snapshot (the pin extract's
// Fork makes, TestForkWAL) reads the first one's state after a commit, and
// compares equal to it. It fails the day the driver's connection changes
// its layout: Fork would then read on one connection.
func TestDriverHandle(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	w, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`CREATE TABLE t (v); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	// begin opens a connection of its own with a read transaction that has
	// read (a WAL snapshot exists from the first read on).
	begin := func() (*sql.Conn, *sql.Tx) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() })
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return conn, tx
	}
	conn, _ := begin()
	var pinned Snapshot
	if err := conn.Raw(func(dc any) error {
		var err error
		pinned, err = DriverSnapshot(dc)
		return err
	}); err != nil {
		t.Fatalf("DriverSnapshot: %v: the driver's connection handle is not what this package reads", err)
	}
	defer pinned.Free()
	if _, err := w.Exec(`INSERT INTO t VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	second, tx := begin()
	if err := second.Raw(func(dc any) error { return OpenDriverSnapshot(dc, pinned) }); err != nil {
		t.Fatalf("OpenDriverSnapshot: %v", err)
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the second connection reads %d rows (%v), want the pinned snapshot's 1", n, err)
	}
	if err := second.Raw(func(dc any) error {
		mine, err := DriverSnapshot(dc)
		if err != nil {
			return err
		}
		defer mine.Free()
		if !Same(pinned, mine) {
			return errors.New("not on the pinned snapshot")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, dc := range []any{nil, 42, &struct{ db uintptr }{1}} {
		if _, err := DriverSnapshot(dc); !errors.Is(err, errNoHandle) {
			t.Errorf("DriverSnapshot(%T) = %v, want errNoHandle", dc, err)
		}
	}
}
