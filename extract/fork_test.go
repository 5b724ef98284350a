package extract

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// countRows reads how many rows t holds, in a snapshot.
func countRows(t *testing.T, snap models.Snapshot) int {
	t.Helper()
	var n int
	err := snap.Query(context.Background(), `SELECT count(*) FROM t`, nil, func(row []any) error {
		n = int(row[0].(int64))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writableStore makes a SQLite store with table t of 3 rows in the given
// journal mode, and a writer connection to it.
func writableStore(t *testing.T, mode string) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	w, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode("+mode+")&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	t.Cleanup(func() { w.Close() })
	for _, q := range []string{`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO t (v) VALUES ('a'), ('b'), ('c')`} {
		if _, err := w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	if err := w.QueryRow(`PRAGMA journal_mode`).Scan(&got); err != nil || got != mode {
		t.Fatalf("journal mode %q, want %q (%v)", got, mode, err)
	}
	return path, w
}

// TestForkWAL: in WAL mode a writer commits between the snapshot's first
// read and the fork; the fork still reads the snapshot's state, and a new
// snapshot sees the commit.
func TestForkWAL(t *testing.T) {
	ctx := context.Background()
	path, w := writableStore(t, "wal")
	src, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if n := countRows(t, snap); n != 3 {
		t.Fatalf("snapshot: %d rows", n)
	}
	for i := 0; i < 5; i++ {
		if _, err := w.Exec(`INSERT INTO t (v) VALUES ('new')`); err != nil {
			t.Fatal(err)
		}
	}
	fork, why, err := Fork(ctx, snap)
	if err != nil || fork == nil {
		t.Fatalf("fork: %v (%s)", err, why)
	}
	defer fork.Close()
	if n := countRows(t, fork); n != 3 {
		t.Errorf("the fork reads %d rows, want the snapshot's 3: it is not pinned to the snapshot", n)
	}
	if n := countRows(t, snap); n != 3 {
		t.Errorf("the snapshot reads %d rows after the fork", n)
	}
	if _, err := w.Exec(`INSERT INTO t (v) VALUES ('more')`); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, fork); n != 3 {
		t.Errorf("the fork reads %d rows after another commit", n)
	}
	// A writer can still write and checkpoint around both readers.
	if _, err := w.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	src2, err := OpenSQLite(ctx, path) // a source reads one snapshot at a time
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	later, err := src2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if n := countRows(t, later); n != 9 {
		t.Errorf("a new snapshot reads %d rows, want 9", n)
	}
}

// TestForkRollbackJournal: in rollback-journal mode the snapshot's lock
// keeps writers from committing, so the fork reads the same state; a
// writer already waiting for its exclusive lock makes the fork fail fast
// (the run then reads on one connection), without waiting for it.
func TestForkRollbackJournal(t *testing.T) {
	ctx := context.Background()
	path, w := writableStore(t, "delete")
	src, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	fork, why, err := Fork(ctx, snap)
	if err != nil || fork == nil {
		t.Fatalf("fork: %v (%s)", err, why)
	}
	if n := countRows(t, fork); n != 3 {
		t.Errorf("the fork reads %d rows, want 3", n)
	}
	fork.Close()

	// A writer waits for the snapshot's SHARED lock to go, holding PENDING.
	done := make(chan error, 1)
	go func() {
		_, err := w.Exec(`INSERT INTO t (v) VALUES ('waiting')`)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	fork, why, err = Fork(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if fork != nil {
		fork.Close()
		t.Errorf("a fork was made while a writer held PENDING")
	} else if why == "" {
		t.Errorf("no reason given for the missing fork")
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("the fork waited %s", d)
	}
	snap.Close()
	if err := <-done; err != nil {
		t.Errorf("the writer: %v", err)
	}
}

// TestForkPostgres: the fork imports the snapshot's exported snapshot, so
// a row committed after the snapshot began is invisible to both.
func TestForkPostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
	if err := c.Exec(ctx, db, `CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) VALUES ('a'), ('b'), ('c')`); err != nil {
		t.Fatal(err)
	}
	src, err := OpenPostgres(ctx, c.DSN(db), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if n := countRows(t, snap); n != 3 {
		t.Fatalf("snapshot: %d rows", n)
	}
	w, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for i := 0; i < 4; i++ {
		if _, err := w.Exec(ctx, `INSERT INTO t (v) VALUES ($1)`, strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	fork, why, err := Fork(ctx, snap)
	if err != nil || fork == nil {
		t.Fatalf("fork: %v (%s)", err, why)
	}
	if n := countRows(t, fork); n != 3 {
		t.Errorf("the fork reads %d rows, want the snapshot's 3", n)
	}
	if err := fork.Close(); err != nil {
		t.Errorf("close the fork: %v", err)
	}
	if n := countRows(t, snap); n != 3 {
		t.Errorf("the snapshot reads %d rows after the fork closed", n)
	}
}
