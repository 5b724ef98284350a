package extract

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/models"
)

// A fork is a second reader of the ONE snapshot: its own connection, whose
// reads see exactly the state the snapshot's first read saw, so two parts
// of a run (the table scans, the message pass) can read in parallel
// without giving up consistency. Measured by removal (docs/benchmarks.md):
// reading on one connection makes a large run 19 % slower, past the
// floor. The WAL pin reads modernc's connection handle by reflection;
// TestForkWAL fails the day that stops working.
//
//   - SQLite, rollback-journal mode: the snapshot's read transaction holds
//     a SHARED lock from its first read until it ends, and no writer can
//     commit (it needs EXCLUSIVE) while any SHARED lock is held. The fork's
//     first read comes after the snapshot's, so nothing was committed in
//     between: both read the same file. A writer already waiting for its
//     EXCLUSIVE lock (PENDING) refuses new SHARED locks: the fork then
//     fails fast (forkBusyTimeout) and the run reads on one connection.
//   - SQLite, WAL mode: readers do not block writers, so the fork is pinned
//     explicitly: sqlite3_snapshot_get on the snapshot's connection,
//     sqlite3_snapshot_open on the fork's once its first read opened the WAL (modernc's
//     SQLite is compiled with SQLITE_ENABLE_SNAPSHOT; the driver does not
//     expose the two calls, so they are made on its connection handle),
//     then both snapshots are compared with sqlite3_snapshot_cmp.
//   - SQLite opened immutable: nothing can change.
//   - PostgreSQL: pg_export_snapshot() in the snapshot's REPEATABLE READ
//     transaction (at Begin: it cannot run in a subtransaction, and its
//     failure aborts the transaction), SET TRANSACTION SNAPSHOT in the
//     fork's.
//
// Fork returns (nil, nil) when a fork cannot be made for a reason that
// does not affect the run (the run then reads on one connection): the
// caller must handle both.

// forkBusyTimeout bounds how long a SQLite fork waits for its SHARED lock.
const forkBusyTimeout = 200 * time.Millisecond

// Fork opens a second reader on the snapshot's state, or returns nil when
// it cannot (see above; why is logged by the caller from the returned
// reason).
func Fork(ctx context.Context, snap models.Snapshot) (models.Snapshot, string, error) {
	switch s := snap.(type) {
	case *maskedSnapshot:
		f, why, err := Fork(ctx, s.Snapshot)
		if err != nil || f == nil {
			return nil, why, s.mask.Err(err)
		}
		return &maskedSnapshot{Snapshot: f, mask: s.mask}, why, nil
	case *sqliteSnapshot:
		return s.fork(ctx)
	case *pgSnapshot:
		return s.fork(ctx)
	}
	return nil, fmt.Sprintf("no fork for %T", snap), nil
}

func (s *sqliteSnapshot) fork(ctx context.Context) (models.Snapshot, string, error) {
	var mode string
	if err := s.tx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return nil, "", s.src.wrap("journal mode", err)
	}
	wal := mode == "wal" && !s.src.immutable
	var pinned uintptr   // the snapshot's sqlite3_snapshot, WAL mode
	tls := libc.NewTLS() // for sqlite3_snapshot_free and _cmp
	defer tls.Close()
	if wal {
		err := s.conn.Raw(func(dc any) error {
			var err error
			pinned, err = snapshotGet(dc)
			return err
		})
		if err != nil {
			return nil, "WAL snapshot not available: " + err.Error(), nil
		}
		defer sqlite3.Xsqlite3_snapshot_free(tls, pinned)
	}
	db, err := sql.Open("sqlite", sqliteDSNWith(s.src.Path, s.src.immutable, forkBusyTimeout))
	if err != nil {
		return nil, "", s.src.wrap("open a second connection", err)
	}
	db.SetMaxOpenConns(1)
	f := &sqliteSnapshot{src: s.src, at: s.at, db: db}
	fail := func(why string, err error) (models.Snapshot, string, error) {
		f.Close()
		return nil, why + ": " + err.Error(), nil
	}
	if f.conn, err = db.Conn(ctx); err != nil {
		return fail("second connection", err)
	}
	if f.tx, err = f.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err != nil {
		return fail("second connection: begin", err)
	}
	// The first read takes the fork's SHARED lock (rollback mode: busy if a
	// writer waits for its exclusive lock) or opens the WAL (WAL mode:
	// sqlite3_snapshot_open needs it open, and moves the read transaction
	// to the pinned snapshot).
	var n int
	if err := f.tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return fail("second connection: first read", err)
	}
	if wal {
		err := f.conn.Raw(func(dc any) error { return snapshotOpen(dc, pinned) })
		if err != nil {
			return fail("second connection: open the snapshot", err)
		}
	}
	if wal {
		// Belt and braces: the fork's read transaction is on the same
		// snapshot.
		var same bool
		err := f.conn.Raw(func(dc any) error {
			mine, err := snapshotGet(dc)
			if err != nil {
				return err
			}
			defer sqlite3.Xsqlite3_snapshot_free(tls, mine)
			same = sqlite3.Xsqlite3_snapshot_cmp(tls, pinned, mine) == 0 && sqlite3.Xsqlite3_snapshot_cmp(tls, mine, pinned) == 0
			return nil
		})
		if err != nil {
			return fail("second connection: compare snapshots", err)
		}
		if !same {
			return fail("second connection", errors.New("not on the same snapshot"))
		}
	}
	f.attachLite(ctx)
	return f, "", nil
}

// errNoHandle: the driver connection is not the modernc.org/sqlite
// connection this code knows (its layout changed): no WAL fork.
var errNoHandle = errors.New("the driver's connection handle is not accessible")

// sqliteHandle returns the sqlite3* handle and the TLS of a
// modernc.org/sqlite driver connection (unexported fields db and tls of
// its conn type), read through reflection.
func sqliteHandle(dc any) (uintptr, *libc.TLS, error) {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, nil, errNoHandle
	}
	e := v.Elem()
	db, tls := e.FieldByName("db"), e.FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || !tls.IsValid() || tls.Type() != reflect.TypeFor[*libc.TLS]() || !db.CanAddr() {
		return 0, nil, errNoHandle
	}
	h := *(*uintptr)(unsafe.Pointer(db.UnsafeAddr()))
	t := *(**libc.TLS)(unsafe.Pointer(tls.UnsafeAddr()))
	if h == 0 || t == nil {
		return 0, nil, errNoHandle
	}
	return h, t, nil
}

// withMain calls fn with "main" as a C string and an 8-byte out pointer,
// allocated on the connection's TLS stack (libc memory, outside the Go
// heap; freed in reverse order).
func withMain(tls *libc.TLS, fn func(zMain, out uintptr) int32) (uintptr, int32) {
	zMain := tls.Alloc(8)
	out := tls.Alloc(8)
	copy(unsafe.Slice((*byte)(cPointer(zMain)), 5), "main\x00")
	*(*uintptr)(cPointer(out)) = 0
	rc := fn(zMain, out)
	p := *(*uintptr)(cPointer(out))
	tls.Free(8)
	tls.Free(8)
	return p, rc
}

// cPointer is the pointer to libc memory at address p (modernc's C
// memory is not in the Go heap and never moves).
func cPointer(p uintptr) unsafe.Pointer { return unsafe.Add(nil, p) }

func snapshotGet(dc any) (uintptr, error) {
	db, tls, err := sqliteHandle(dc)
	if err != nil {
		return 0, err
	}
	p, rc := withMain(tls, func(zMain, out uintptr) int32 { return sqlite3.Xsqlite3_snapshot_get(tls, db, zMain, out) })
	if rc != sqlite3.SQLITE_OK || p == 0 {
		return 0, fmt.Errorf("sqlite3_snapshot_get: result code %d", rc)
	}
	return p, nil
}

func snapshotOpen(dc any, snap uintptr) error {
	db, tls, err := sqliteHandle(dc)
	if err != nil {
		return err
	}
	_, rc := withMain(tls, func(zMain, _ uintptr) int32 { return sqlite3.Xsqlite3_snapshot_open(tls, db, zMain, snap) })
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_snapshot_open: result code %d", rc)
	}
	return nil
}

func (p *pgSnapshot) fork(ctx context.Context) (models.Snapshot, string, error) {
	if p.src.cfg == nil {
		return nil, "no connection configuration", nil
	}
	if p.exported == "" {
		return nil, p.exportErr, nil
	}
	id := p.exported
	conn, err := pgx.ConnectConfig(ctx, p.src.cfg.Copy())
	if err != nil {
		return nil, "second connection: " + location.Scrub(err.Error(), p.src.secrets), nil
	}
	src := &PostgresSource{location: p.src.location, secrets: p.src.secrets, conn: conn, guard: p.src.guard, connect: p.src.connect}
	fail := func(err error) (models.Snapshot, string, error) {
		src.Close()
		return nil, "second connection: " + location.Scrub(err.Error(), p.src.secrets), nil
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fail(err)
	}
	if _, err := tx.Exec(ctx, `SET TRANSACTION SNAPSHOT `+quoteLiteral(id)); err != nil {
		tx.Rollback(ctx)
		return fail(err)
	}
	if err := configureTx(ctx, tx, idleInTransactionTimeout(p.src.guard.timeout)); err != nil {
		tx.Rollback(ctx)
		return fail(err)
	}
	return &pgSnapshot{src: src, tx: tx, at: p.at, owned: true}, "", nil
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
