package extract

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/extract/internal/sqlitedrv"
	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/models"
)

// A fork is a second reader of the ONE snapshot: its own connection, whose
// reads see exactly the state the snapshot's first read saw, so two parts
// of a run (the table scans, the message pass) can read in parallel
// without giving up consistency. Measured by removal (docs/benchmarks.md):
// reading on one connection makes a large run 19 % slower, past the
// floor. The WAL pin reads modernc's connection handle by reflection
// (extract/internal/sqlitedrv); TestForkWAL and sqlitedrv's
// TestDriverHandle fail the day that stops working.
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
	wal, err := s.walMode(ctx)
	if err != nil {
		return nil, "", err
	}
	var pinned sqlitedrv.Snapshot // the snapshot's, WAL mode
	if wal {
		if pinned, err = s.walSnapshot(); err != nil {
			return nil, err.Error(), nil
		}
		defer pinned.Free()
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
		err := f.conn.Raw(func(dc any) error { return sqlitedrv.OpenDriverSnapshot(dc, pinned) })
		if err != nil {
			return fail("second connection: open the snapshot", err)
		}
	}
	if wal {
		// Belt and braces: the fork's read transaction is on the same
		// snapshot.
		var same bool
		err := f.conn.Raw(func(dc any) error {
			mine, err := sqlitedrv.DriverSnapshot(dc)
			if err != nil {
				return err
			}
			defer mine.Free()
			same = sqlitedrv.Same(pinned, mine)
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

// attachLite gives s a sqlitedrv.Conn on s's own snapshot for its bulk reads
// (rawStream), pinned as a fork is (above): in WAL mode through
// sqlite3_snapshot_get/open/cmp; in rollback-journal mode by s's SHARED
// lock, which no writer can commit past; opened immutable, nothing can
// change. When that cannot be done, s reads through database/sql as before
// (the reason is kept for the run's log).
func (s *sqliteSnapshot) attachLite(ctx context.Context) {
	c, err := s.pinLite(ctx)
	if err != nil {
		s.liteWhy = err.Error()
		return
	}
	s.lite = c
}

func (s *sqliteSnapshot) pinLite(ctx context.Context) (*sqlitedrv.Conn, error) {
	wal, err := s.walMode(ctx)
	if err != nil {
		return nil, err
	}
	var pinned sqlitedrv.Snapshot
	if wal {
		if pinned, err = s.walSnapshot(); err != nil {
			return nil, err
		}
		defer pinned.Free()
	}
	c, err := sqlitedrv.Open(s.src.Path, s.src.immutable, forkBusyTimeout)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*sqlitedrv.Conn, error) {
		c.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := c.Exec(ctx, "BEGIN"); err != nil {
		return fail("begin", err)
	}
	// The first read takes the SHARED lock (rollback mode) or opens the
	// WAL (WAL mode: sqlite3_snapshot_open needs it open).
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM sqlite_master", nil, &n); err != nil {
		return fail("first read", err)
	}
	if wal {
		if err := c.OpenSnapshot(pinned); err != nil {
			return fail("open the snapshot", err)
		}
		same, err := c.OnSnapshot(pinned)
		if err != nil {
			return fail("compare snapshots", err)
		}
		if !same {
			return fail("pin", errors.New("not on the same snapshot"))
		}
	}
	return c, nil
}

// walSnapshot is the snapshot of s's read transaction, WAL mode (the
// caller frees it).
func (s *sqliteSnapshot) walSnapshot() (sqlitedrv.Snapshot, error) {
	var snap sqlitedrv.Snapshot
	err := s.conn.Raw(func(dc any) error {
		var err error
		snap, err = sqlitedrv.DriverSnapshot(dc)
		return err
	})
	if err != nil {
		return snap, fmt.Errorf("WAL snapshot not available: %w", err)
	}
	return snap, nil
}

// walMode says whether s reads a WAL-mode store (not opened immutable).
func (s *sqliteSnapshot) walMode(ctx context.Context) (bool, error) {
	var mode string
	if err := s.tx.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return false, s.src.wrap("journal mode", err)
	}
	return mode == "wal" && !s.src.immutable, nil
}
