// Package sqlitedrv is kandev-extract's private SQLite driver: a read-only
// connection of modernc.org/sqlite's SQLite used directly, through its
// transpiled C API (modernc.org/libc), not through database/sql (Conn), and
// the sqlite3* handle of a modernc.org/sqlite database/sql connection, read
// by reflection, for the snapshot calls the driver does not expose
// (DriverSnapshot, OpenDriverSnapshot). It is the only package that imports
// modernc.org/libc or touches the driver's internals: its tests fail the
// day they change (TestLibcIsTheOneSQLiteRequires, TestDriverHandle).
package sqlitedrv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Conn is a read-only connection of modernc.org/sqlite's SQLite used
// directly, not through database/sql. Why: the driver opens every
// connection SQLITE_OPEN_FULLMUTEX, so each of the several API calls per
// column of every row takes and releases the connection's mutex (15–20 %
// of a large run's CPU went to its emulated pthread mutex), and
// database/sql adds its own locking and conversions per row. A snapshot,
// and each fork, is used by one reader at a time, so the connection is
// opened SQLITE_OPEN_NOMUTEX; SQLite's own core mutexes (shared memory,
// the page cache) stay on.
//
// Measured by removal (docs/benchmarks.md): a run reading through
// database/sql instead takes 37 % longer on large and 53 % on grown (CPU
// +10 s on large). It relies on modernc's transpiled API, which
// TestLibcIsTheOneSQLiteRequires and this package's other tests pin.
//
// Values come back as the driver returned them: INTEGER int64, REAL
// float64, TEXT string, BLOB []byte, NULL nil — never time.Time (the
// driver turns TIMESTAMP-declared columns into times; nothing here does).
type Conn struct {
	tls  *libc.TLS
	db   uintptr
	text textArena // the TEXT values read (one goroutine reads at a time)
	// The copies of borrowed values of the current row, under PoisonBorrowed.
	poisoned [][]byte

	// mu orders an interrupt from a cancelled context against Close: the
	// handle is never used after it is closed.
	mu     sync.Mutex
	closed bool
}

// Error is an SQLite error: the result code and SQLite's message, in
// the form the driver prints ("errstr: errmsg (code)").
type Error struct {
	msg  string
	code int
}

func (e *Error) Error() string { return e.msg }

// Code is the (extended) result code.
func (e *Error) Code() int { return e.code }

// liteURI is the URI filename of a read-only open of path.
func liteURI(path string, immutable bool) string {
	q := "mode=ro"
	if immutable {
		q += "&immutable=1"
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q
}

// Open opens path read-only (mode=ro, and query_only on top), with
// busy as its busy timeout.
func Open(path string, immutable bool, busy time.Duration) (*Conn, error) {
	tls := libc.NewTLS()
	zName, err := libc.CString(liteURI(path, immutable))
	if err != nil {
		tls.Close()
		return nil, err
	}
	defer libc.Xfree(tls, zName)
	out := tls.Alloc(8)
	*(*uintptr)(cPointer(out)) = 0
	rc := sqlite3.Xsqlite3_open_v2(tls, zName, out, sqlite3.SQLITE_OPEN_READONLY|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	db := *(*uintptr)(cPointer(out))
	tls.Free(8)
	c := &Conn{tls: tls, db: db}
	if rc != sqlite3.SQLITE_OK {
		err := c.err(rc)
		if db != 0 {
			sqlite3.Xsqlite3_close_v2(tls, db)
		}
		tls.Close()
		return nil, err
	}
	sqlite3.Xsqlite3_extended_result_codes(tls, db, 1)
	ms := busy.Milliseconds()
	if ms > math.MaxInt32 {
		ms = math.MaxInt32
	}
	if rc := sqlite3.Xsqlite3_busy_timeout(tls, db, int32(ms)); rc != sqlite3.SQLITE_OK {
		err := c.err(rc)
		c.Close()
		return nil, err
	}
	if err := c.Exec(context.Background(), "PRAGMA query_only = 1"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection (finalizing nothing: every statement is
// finalized when its query ends).
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	rc := sqlite3.Xsqlite3_close_v2(c.tls, c.db)
	c.tls.Close()
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_close_v2: result code %d", rc)
	}
	return nil
}

// err is the error of result code rc, as the driver words it.
func (c *Conn) err(rc int32) error {
	str := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	busy := ""
	if rc&0xff == sqlite3.SQLITE_BUSY {
		busy = " (SQLITE_BUSY)"
	}
	if c.db == 0 {
		return &Error{msg: fmt.Sprintf("%s (%v)%s", str, rc, busy), code: int(rc)}
	}
	if msg := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db)); msg != str {
		return &Error{msg: fmt.Sprintf("%s: %s (%v)%s", str, msg, rc, busy), code: int(rc)}
	}
	return &Error{msg: fmt.Sprintf("%s (%v)%s", str, rc, busy), code: int(rc)}
}

// interruptOn interrupts the running statement when ctx is done; the
// returned func stops that and must be called before the statement is
// finalized. The interrupt is repeated every 10 ms until then: SQLite
// clears it when a statement starts while none is running, so one
// interrupt that lands between prepare and the first step is lost (seen:
// TestLiteConnCancel ran on for minutes on a busy machine).
func (c *Conn) interruptOn(ctx context.Context) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	quit, ran := make(chan struct{}), make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ran)
		// Not c.tls: that one is the reader's, and a TLS is not safe for
		// concurrent use.
		tls := libc.NewTLS()
		defer tls.Close()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			c.mu.Lock()
			if !c.closed {
				sqlite3.Xsqlite3_interrupt(tls, c.db)
			}
			c.mu.Unlock()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	})
	return func() {
		if !stop() {
			close(quit) // the interrupts run: end them, and wait
			<-ran
		}
	}
}

// Exec runs one or more statements that return no rows.
func (c *Conn) Exec(ctx context.Context, q string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	zSQL, err := libc.CString(q)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, zSQL)
	stop := c.interruptOn(ctx)
	rc := sqlite3.Xsqlite3_exec(c.tls, c.db, zSQL, 0, 0, 0)
	stop()
	if rc != sqlite3.SQLITE_OK {
		if err := ctx.Err(); err != nil && rc == sqlite3.SQLITE_INTERRUPT {
			return err
		}
		return c.err(rc)
	}
	return nil
}

// Query runs q with args (nil, string, []byte, int, int64, float64,
// bool) and calls fn with each row; the slice is reused between rows, its
// values are not. A statement must be one statement.
func (c *Conn) Query(ctx context.Context, q string, args []any, fn func(row []any) error) error {
	return c.run(ctx, q, args, false, fn)
}

// QueryBorrowed is Query without copying TEXT values: each points into
// SQLite's own memory and is valid only until fn returns, so fn must copy
// whatever it keeps of them. For a read that keeps little of what it
// reads (the message pass hashes ids, copies the few it keeps, and reads
// the metadata once): copying every message's metadata into the arena was
// a tenth of the pass's CPU. BLOB values are copied as by Query.
func (c *Conn) QueryBorrowed(ctx context.Context, q string, args []any, fn func(row []any) error) error {
	return c.run(ctx, q, args, true, fn)
}

// PoisonBorrowed makes QueryBorrowed hand out copies that are overwritten
// once fn returns, so that a borrowed value kept beyond its row reads as
// garbage, deterministically: the tests of this package and of the
// message pass (extract/evidence) set it, and the pass's comparisons with
// SQL then fail on any such value.
var PoisonBorrowed = false

func (c *Conn) run(ctx context.Context, q string, args []any, borrow bool, fn func(row []any) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	zSQL, err := libc.CString(q)
	if err != nil {
		return err
	}
	defer libc.Xfree(c.tls, zSQL)
	out := c.tls.Alloc(8)
	*(*uintptr)(cPointer(out)) = 0
	rc := sqlite3.Xsqlite3_prepare_v2(c.tls, c.db, zSQL, -1, out, 0)
	stmt := *(*uintptr)(cPointer(out))
	c.tls.Free(8)
	if rc != sqlite3.SQLITE_OK {
		return c.err(rc)
	}
	if stmt == 0 {
		return errors.New("sqlite: empty statement")
	}
	var bound []uintptr // C copies of text and blob arguments, freed after the statement
	defer func() {
		sqlite3.Xsqlite3_finalize(c.tls, stmt)
		for _, p := range bound {
			libc.Xfree(c.tls, p)
		}
	}()
	for i, a := range args {
		p, err := c.bind(stmt, int32(i+1), a)
		if err != nil {
			return err
		}
		if p != 0 {
			bound = append(bound, p)
		}
	}
	stop := c.interruptOn(ctx)
	defer stop()
	n := int(sqlite3.Xsqlite3_column_count(c.tls, stmt))
	row := make([]any, n)
	// readRow's memory: each column's last TEXT value read, or when
	// borrowing, each column's string header, used again for every row.
	var (
		prev     []any
		borrowed []string
	)
	if borrow {
		borrowed = make([]string, n)
	} else {
		prev = make([]any, n)
	}
	for {
		rc := sqlite3.Xsqlite3_step(c.tls, stmt)
		if rc == sqlite3.SQLITE_DONE {
			return nil
		}
		if rc != sqlite3.SQLITE_ROW {
			if err := ctx.Err(); err != nil && rc&0xff == sqlite3.SQLITE_INTERRUPT {
				return err
			}
			return c.err(rc)
		}
		c.readRow(stmt, row, prev, borrowed)
		err := fn(row)
		for _, b := range c.poisoned {
			for i := range b {
				b[i] = 0xa5
			}
		}
		c.poisoned = c.poisoned[:0]
		if err != nil {
			return err
		}
	}
}

// readRow copies the current row's values out of SQLite: TEXT into the
// arena (see textArena), each BLOB into its own allocation. A TEXT value
// equal to the last one its column read (prev) is that value again, not a
// copy: a table's rows repeat their session, task, status and model from
// one row to the next, and a copy is an allocation for the collector. With
// borrowed set the TEXT is borrowed instead (QueryBorrowed): not copied at
// all, its header in borrowed, which the next row overwrites (a borrowed
// value is dead by then).
func (c *Conn) readRow(stmt uintptr, row, prev []any, borrowed []string) {
	for i := range row {
		// The column's value once, then its parts: each sqlite3_column_*
		// call checks the statement and the connection again (about 2 % of
		// a large run's CPU went to those checks, three calls a TEXT cell).
		// The value is "unprotected" in SQLite's words, which only matters
		// for a connection with a mutex; this one has none (NOMUTEX) and
		// one goroutine at a time reads it.
		v := sqlite3.Xsqlite3_column_value(c.tls, stmt, int32(i))
		switch sqlite3.Xsqlite3_value_type(c.tls, v) {
		case sqlite3.SQLITE_INTEGER:
			row[i] = sqlite3.Xsqlite3_value_int64(c.tls, v)
		case sqlite3.SQLITE_FLOAT:
			row[i] = sqlite3.Xsqlite3_value_double(c.tls, v)
		case sqlite3.SQLITE_TEXT:
			// text before bytes: bytes then measures the text form.
			p := sqlite3.Xsqlite3_value_text(c.tls, v)
			n := int(sqlite3.Xsqlite3_value_bytes(c.tls, v))
			if n == 0 || p == 0 {
				row[i] = ""
				continue
			}
			if borrowed != nil {
				borrowed[i] = c.borrowed(p, n)
				row[i] = boxAt(&borrowed[i])
				continue
			}
			if last, ok := prev[i].(string); ok && len(last) == n && last == unsafe.String((*byte)(cPointer(p)), n) {
				row[i] = prev[i]
				continue
			}
			row[i] = c.text.box(c.text.copy(p, n))
			prev[i] = row[i]
		case sqlite3.SQLITE_BLOB:
			p := sqlite3.Xsqlite3_value_blob(c.tls, v)
			n := int(sqlite3.Xsqlite3_value_bytes(c.tls, v))
			b := make([]byte, n)
			if n > 0 && p != 0 {
				copy(b, unsafe.Slice((*byte)(cPointer(p)), n))
			}
			row[i] = b
		default:
			row[i] = nil
		}
	}
}

// borrowed is the n bytes of SQLite's memory at p as a string, without a
// copy (a copy to be poisoned after the row, under PoisonBorrowed).
func (c *Conn) borrowed(p uintptr, n int) string {
	b := unsafe.Slice((*byte)(cPointer(p)), n)
	if PoisonBorrowed {
		b = bytes.Clone(b)
		c.poisoned = append(c.poisoned, b)
	}
	return unsafe.String(unsafe.SliceData(b), n)
}

// bind binds a to parameter i; the returned C memory (text and blobs) is
// the caller's to free once the statement is finalized.
func (c *Conn) bind(stmt uintptr, i int32, a any) (uintptr, error) {
	var rc int32
	switch v := a.(type) {
	case nil:
		rc = sqlite3.Xsqlite3_bind_null(c.tls, stmt, i)
	case int:
		rc = sqlite3.Xsqlite3_bind_int64(c.tls, stmt, i, int64(v))
	case int64:
		rc = sqlite3.Xsqlite3_bind_int64(c.tls, stmt, i, v)
	case float64:
		rc = sqlite3.Xsqlite3_bind_double(c.tls, stmt, i, v)
	case bool:
		var n int64
		if v {
			n = 1
		}
		rc = sqlite3.Xsqlite3_bind_int64(c.tls, stmt, i, n)
	case string:
		p, err := libc.CString(v)
		if err != nil {
			return 0, err
		}
		if rc = sqlite3.Xsqlite3_bind_text(c.tls, stmt, i, p, int32(len(v)), 0); rc != sqlite3.SQLITE_OK {
			libc.Xfree(c.tls, p)
			return 0, c.err(rc)
		}
		return p, nil
	case []byte:
		if len(v) == 0 {
			rc = sqlite3.Xsqlite3_bind_zeroblob(c.tls, stmt, i, 0)
			break
		}
		p := libc.Xmalloc(c.tls, uint64(len(v)))
		if p == 0 {
			return 0, errors.New("sqlite: out of memory binding a blob")
		}
		copy(unsafe.Slice((*byte)(cPointer(p)), len(v)), v)
		if rc = sqlite3.Xsqlite3_bind_blob(c.tls, stmt, i, p, int32(len(v)), 0); rc != sqlite3.SQLITE_OK {
			libc.Xfree(c.tls, p)
			return 0, c.err(rc)
		}
		return p, nil
	default:
		return 0, fmt.Errorf("sqlite: cannot bind a %T", a)
	}
	if rc != sqlite3.SQLITE_OK {
		return 0, c.err(rc)
	}
	return 0, nil
}

// QueryRow runs q and stores the first row's values into dest (*int,
// *int64, *string, *any); a query with no row is ErrNoRows.
func (c *Conn) QueryRow(ctx context.Context, q string, args []any, dest ...any) error {
	found := false
	err := c.Query(ctx, q, args, func(row []any) error {
		if found {
			return nil
		}
		found = true
		if len(row) != len(dest) {
			return fmt.Errorf("sqlite: %d columns into %d values", len(row), len(dest))
		}
		for i, v := range row {
			if err := assignLite(dest[i], v); err != nil {
				return fmt.Errorf("sqlite: column %d: %w", i, err)
			}
		}
		return nil
	})
	if err == nil && !found {
		return ErrNoRows
	}
	return err
}

var ErrNoRows = errors.New("sqlite: no rows in result set")

func assignLite(dest, v any) error {
	switch d := dest.(type) {
	case *any:
		*d = v
	case *int64:
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = n
	case *int:
		n, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%T is not an integer", v)
		}
		*d = int(n)
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
		case []byte:
			*d = string(x)
		default:
			return fmt.Errorf("%T is not text", v)
		}
	default:
		return fmt.Errorf("cannot scan into %T", dest)
	}
	return nil
}

// OpenSnapshot moves c's read transaction to snap.
func (c *Conn) OpenSnapshot(snap Snapshot) error {
	_, rc := withMain(c.tls, func(zMain, _ uintptr) int32 { return sqlite3.Xsqlite3_snapshot_open(c.tls, c.db, zMain, snap.p) })
	if rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite3_snapshot_open: result code %d", rc)
	}
	return nil
}

// OnSnapshot says whether c's read transaction is on snap.
func (c *Conn) OnSnapshot(snap Snapshot) (bool, error) {
	mine, rc := withMain(c.tls, func(zMain, out uintptr) int32 { return sqlite3.Xsqlite3_snapshot_get(c.tls, c.db, zMain, out) })
	if rc != sqlite3.SQLITE_OK || mine == 0 {
		return false, fmt.Errorf("sqlite3_snapshot_get: result code %d", rc)
	}
	defer sqlite3.Xsqlite3_snapshot_free(c.tls, mine)
	return sqlite3.Xsqlite3_snapshot_cmp(c.tls, snap.p, mine) == 0 && sqlite3.Xsqlite3_snapshot_cmp(c.tls, mine, snap.p) == 0, nil
}
