package extract

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/kandev/kandev-extract/extract/internal/sqlitedrv"
	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

var _ models.Source = (*SQLiteSource)(nil)

// SQLiteSource reads a Kandev SQLite store. It opens the file read-only
// (mode=ro, query_only) so that it cannot write, and works on a store that
// Kandev holds open in WAL mode.
type SQLiteSource struct {
	Path      string
	db        *sql.DB
	immutable bool // opened with immutable=1 (see openImmutable)
	// stamp is the file as it was before an immutable open; Verify
	// compares it with the file after the reading.
	stamp *fileStamp
}

// BusyTimeout is how long a read waits for a lock that another connection
// holds exclusively (a Kandev schema migration, or a write in
// rollback-journal mode) before the run fails with a "locked" error. In
// WAL mode, Kandev's normal writes never block a reader.
var BusyTimeout = 10 * time.Second

// sqliteHeader is the first 16 bytes of every SQLite 3 database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// OpenSQLite opens path read-only after checking that it is a SQLite file.
func OpenSQLite(ctx context.Context, path string) (*SQLiteSource, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	wal, err := checkSQLiteFile(abs)
	if err != nil {
		return nil, err
	}
	// A WAL-mode store with no -wal file beside it is open by no
	// connection (SQLite creates -wal at the first open and removes it at
	// the last close). A reader that opened it as usual would create -wal
	// and -shm beside it, and leave them (a read-only connection cannot
	// remove them), or fail where the directory is not writable to us (a
	// read-only mount, ReadOnlyPaths=). It is read immutable instead, which
	// creates nothing, and Verify refuses the snapshot if anything opened
	// or wrote the store meanwhile.
	if wal && !exists(abs+"-wal") {
		s, err := openImmutable(ctx, abs)
		if !errors.Is(err, errWALAppeared) {
			return s, err
		}
		// A writer opened it meanwhile: read it as usual.
	}
	db, err := sql.Open("sqlite", sqliteDSN(abs, false))
	if err != nil {
		return nil, fmt.Errorf("store %s: open: %w", abs, err)
	}
	// One connection: the snapshot is one read transaction on it.
	db.SetMaxOpenConns(1)
	s := &SQLiteSource{Path: abs, db: db}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, s.wrap("open read-only", err)
	}
	if err := s.probe(ctx); err != nil {
		db.Close()
		return nil, s.wrap("read schema", err)
	}
	return s, nil
}

// openImmutable opens path with immutable=1 after taking its stamp.
func openImmutable(ctx context.Context, path string) (*SQLiteSource, error) {
	stamp, err := takeStamp(path)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	if exists(path + "-wal") {
		return nil, errWALAppeared
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, true))
	if err != nil {
		return nil, fmt.Errorf("store %s: open: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s := &SQLiteSource{Path: path, db: db, immutable: true, stamp: stamp}
	if err := s.probe(ctx); err != nil {
		db.Close()
		return nil, s.wrap("read schema", err)
	}
	return s, nil
}

// errWALAppeared: a -wal file is beside the store after all.
var errWALAppeared = errors.New("a -wal file appeared beside the store")

// Verify reports whether a snapshot of s can still be trusted after the
// reading: always, except for a store read immutable (without SQLite's
// locks), which must still be exactly the file it was when opened, with
// still no -wal file beside it — no connection opened it meanwhile, so
// nothing can have been written to it while it was read.
func (s *SQLiteSource) Verify() error {
	if s.stamp == nil {
		return nil
	}
	if exists(s.Path + "-wal") {
		return fmt.Errorf("store %s: another connection (Kandev?) opened the store while it was read: it was read without locks, since no connection had it open when the run began, so the snapshot cannot be trusted and nothing of it is kept; run again", s.Path)
	}
	now, err := takeStamp(s.Path)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.Path, err)
	}
	if !now.same(s.stamp) {
		return fmt.Errorf("store %s: the file changed while it was read (%s): it was read without locks, since no connection had it open when the run began, so the snapshot cannot be trusted and nothing of it is kept; run again", s.Path, s.stamp.diff(now))
	}
	return nil
}

// fileStamp is what identifies a file's content without reading it all:
// the file itself, its size, its modification time and its first 100
// bytes (SQLite's header: page count, change counter, schema cookie).
type fileStamp struct {
	info   os.FileInfo
	header [100]byte
}

func takeStamp(path string) (*fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	s := &fileStamp{info: st}
	if _, err := io.ReadFull(f, s.header[:]); err != nil {
		return nil, fmt.Errorf("read its header: %w", err)
	}
	return s, nil
}

func (a *fileStamp) same(b *fileStamp) bool {
	return os.SameFile(a.info, b.info) && a.info.Size() == b.info.Size() && a.info.ModTime().Equal(b.info.ModTime()) && a.header == b.header
}

func (a *fileStamp) diff(b *fileStamp) string {
	switch {
	case !os.SameFile(a.info, b.info):
		return "it was replaced"
	case a.info.Size() != b.info.Size():
		return fmt.Sprintf("size %d → %d bytes", a.info.Size(), b.info.Size())
	case !a.info.ModTime().Equal(b.info.ModTime()):
		return "modified at " + b.info.ModTime().UTC().Format(time.RFC3339Nano)
	default:
		return "its header changed"
	}
}

// exists reports whether something is at path; when that cannot be
// told, it says yes (the store is then read as usual).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func sqliteDSN(path string, immutable bool) string {
	return sqliteDSNWith(path, immutable, BusyTimeout)
}

func sqliteDSNWith(path string, immutable bool, busy time.Duration) string {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

func (s *SQLiteSource) probe(ctx context.Context) error {
	var n int
	return s.db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
}

// checkSQLiteFile checks that path is a SQLite file, and reports whether
// it is in WAL mode (its header's read and write versions are 2).
func checkSQLiteFile(path string) (wal bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("store %s: no such file (give --source the path of Kandev's kandev.db, usually ~/.kandev/data/kandev.db)", path)
		}
		return false, fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("store %s: %w", path, err)
	}
	if st.IsDir() {
		return false, fmt.Errorf("store %s: is a directory, not a SQLite file", path)
	}
	if st.Size() == 0 {
		return false, fmt.Errorf("store %s: file is empty, not a Kandev SQLite store", path)
	}
	var head [20]byte
	n, err := io.ReadAtLeast(f, head[:], len(sqliteHeader))
	if err != nil || !bytes.Equal(head[:len(sqliteHeader)], sqliteHeader) {
		return false, fmt.Errorf("store %s: not a SQLite database (bad header)", path)
	}
	return n == len(head) && head[18] == 2 && head[19] == 2, nil
}

func (s *SQLiteSource) Dialect() models.Dialect { return models.DialectSQLite }
func (s *SQLiteSource) Location() string        { return s.Path }
func (s *SQLiteSource) Close() error            { return s.db.Close() }

// Begin starts one read transaction and pins its snapshot with a first read.
func (s *SQLiteSource) Begin(ctx context.Context) (models.Snapshot, error) {
	// A dedicated connection: Fork reaches the driver's handle through it.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.wrap("begin read transaction", err)
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return nil, s.wrap("begin read transaction", err)
	}
	at := time.Now().UTC()
	// SQLite starts the snapshot at the first read, not at BEGIN.
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		tx.Rollback()
		conn.Close()
		return nil, s.wrap("read schema", err)
	}
	snap := &sqliteSnapshot{src: s, conn: conn, tx: tx, at: at}
	snap.attachLite(ctx)
	return snap, nil
}

type sqliteSnapshot struct {
	src  *SQLiteSource
	conn *sql.Conn
	tx   *sql.Tx
	at   time.Time
	db   *sql.DB // a fork's own database handle (closed with it)
	// lite reads the bulk of the snapshot (scans, the message pass) on
	// the same snapshot, without database/sql (extract/internal/sqlitedrv); nil when it
	// could not be pinned (liteWhy says why) or for queries that call the
	// Go functions registered with the driver (kx_instant).
	lite    *sqlitedrv.Conn
	liteWhy string
	// lookupSets are the ids read for lookups decided in Go (lookups.go).
	lookupSets map[string]idHashes
}

func (s *sqliteSnapshot) At() time.Time { return s.at }
func (s *sqliteSnapshot) Close() error {
	var err error
	if s.lite != nil {
		s.lite.Close() // its read transaction ends with it
	}
	if s.tx != nil {
		err = s.tx.Rollback()
	}
	if s.conn != nil {
		s.conn.Close()
	}
	if s.db != nil {
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (s *sqliteSnapshot) Meta(ctx context.Context) ([]models.MetaEntry, error) {
	ok, err := s.TableExists(ctx, "kandev_meta")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &models.MissingTableError{Source: s.src.Path, Table: "kandev_meta"}
	}
	cols, err := s.Columns(ctx, "kandev_meta")
	if err != nil {
		return nil, err
	}
	if err := sqlkit.RequireColumns(s.src.Path, "kandev_meta", cols, "key", "value"); err != nil {
		return nil, err
	}
	// Only the keys used, each value measured and capped in the query (a
	// prefix is read only of a value up to SQLiteMetaPrefixBytes: substr
	// loads the whole value).
	args := make([]any, len(models.MetaKeys))
	for i, k := range models.MetaKeys {
		args[i] = k
	}
	q := fmt.Sprintf(`SELECT CAST(key AS TEXT),
		CASE WHEN octet_length(value) <= %[1]d THEN CAST(value AS TEXT)
			WHEN octet_length(value) <= %[2]d THEN substr(CAST(value AS BLOB), 1, %[1]d) END,
		octet_length(value)
		FROM kandev_meta WHERE key IN (%[3]s)`, models.MaxLabelBytes, models.SQLiteMetaPrefixBytes, sqlkit.Placeholders(len(args), "?"))
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.src.wrap("read kandev_meta", err)
	}
	defer rows.Close()
	var m metaReader
	for rows.Next() {
		var k sql.NullString
		var v any
		var n sql.NullInt64
		if err := rows.Scan(&k, &v, &n); err != nil {
			return nil, s.src.wrap("read kandev_meta", err)
		}
		m.add(k.String, v, n.Int64)
	}
	if err := rows.Err(); err != nil {
		return nil, s.src.wrap("read kandev_meta", err)
	}
	return m.out, nil
}

func (s *sqliteSnapshot) TableExists(ctx context.Context, table string) (bool, error) {
	var n int
	err := s.tx.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	if err != nil {
		return false, s.src.wrap("look up table "+table, err)
	}
	return n > 0, nil
}

func (s *sqliteSnapshot) Columns(ctx context.Context, table string) ([]string, error) {
	rows, err := s.tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, s.src.wrap("columns of "+table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, s.src.wrap("columns of "+table, err)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.src.wrap("columns of "+table, err)
	}
	return cols, nil
}

func (s *sqliteSnapshot) SubagentSchema(ctx context.Context) (models.SubagentSchema, error) {
	const table = "task_session_subagents"
	var out models.SubagentSchema
	ok, err := s.TableExists(ctx, table)
	if err != nil || !ok {
		return out, err
	}
	out.Exists = true
	if out.Columns, err = s.Columns(ctx, table); err != nil {
		return out, err
	}
	// Unique constraints and unique indexes, by column set (origin 'pk' is
	// the primary key, not a constraint the contract talks about).
	rows, err := s.tx.QueryContext(ctx,
		`SELECT il.name, ii.name FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii
		 WHERE il."unique" = 1 AND il.origin <> 'pk' ORDER BY il.seq, ii.seqno`, table)
	if err != nil {
		return out, s.src.wrap("unique keys of "+table, err)
	}
	defer rows.Close()
	idx := map[string]int{}
	for rows.Next() {
		var name, col string
		if err := rows.Scan(&name, &col); err != nil {
			return out, err
		}
		i, seen := idx[name]
		if !seen {
			i = len(out.UniqueKeys)
			idx[name] = i
			out.UniqueKeys = append(out.UniqueKeys, nil)
		}
		out.UniqueKeys[i] = append(out.UniqueKeys[i], col)
	}
	return out, rows.Err()
}

func (s *sqliteSnapshot) Scan(ctx context.Context, spec models.TableSpec, fn func(row []any) error) error {
	ok, err := s.TableExists(ctx, spec.Name)
	if err != nil {
		return err
	}
	if !ok {
		return &models.MissingTableError{Source: s.src.Path, Table: spec.Name}
	}
	cols, err := s.Columns(ctx, spec.Name)
	if err != nil {
		return err
	}
	spec, fn, err = s.lookupsInGo(ctx, spec, fn)
	if err != nil {
		return err
	}
	q, plan, err := sqliteScanSQL(s.src.Path, spec, cols)
	if err != nil {
		return err
	}
	return s.stream(ctx, spec.Name, q, nil, plan.wrap(fn))
}

// SQLiteScanSQL is the statement the SQLite reader runs for spec on a table
// with the given columns; the benchmark's spec floor runs exactly this SQL.
// Capped columns are read through sqliteCapSpec: over-long values come back
// as marked cells, so the statement has exactly spec's columns.
func SQLiteScanSQL(spec models.TableSpec, cols []string) (string, error) {
	q, _, err := sqliteScanSQL("", spec, cols)
	return q, err
}

func sqliteScanSQL(source string, spec models.TableSpec, cols []string) (string, capPlan, error) {
	have := sqlkit.ColumnSet(cols)
	capped, plan := sqliteCapSpec(spec, have, models.SQLitePrefixBytes)
	list, err := selectList(source, capped, have, func(c string) string {
		// Read the stored text itself: the driver would otherwise turn
		// TIMESTAMP-declared columns into time.Time and lose the form.
		return "CAST(" + c + " AS TEXT)"
	})
	if err != nil {
		return "", plan, err
	}
	q := "SELECT " + list + fromClause(spec, have)
	q = strings.ReplaceAll(q, scans.SQLiteNoFlatten, "LIMIT -1 OFFSET 0")
	return strings.ReplaceAll(q, scans.SQLiteNotIndexed, "NOT INDEXED"), plan, nil
}

func (s *sqliteSnapshot) Query(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return s.stream(ctx, "query", query, args, fn)
}

// stream runs q and hands each row to fn, BLOBs as strings (rawStream
// keeps the driver's types).
func (s *sqliteSnapshot) stream(ctx context.Context, what, q string, args []any, fn func(row []any) error) error {
	return s.rawStream(ctx, what, q, func(vals []any) error {
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		return fn(vals)
	}, args...)
}

// sqliteCoded is an error carrying an SQLite result code: the driver's
// *sqlite.Error and sqlitedrv.Error.
type sqliteCoded interface {
	error
	Code() int
}

// Dialect is evidence.Snapshot's.
func (s *sqliteSnapshot) Dialect() models.Dialect { return models.DialectSQLite }

// Location is evidence.Snapshot's: the store's path.
func (s *sqliteSnapshot) Location() string { return s.src.Path }

// Wrap is evidence.Snapshot's: wrap, of op on table.
func (s *sqliteSnapshot) Wrap(op, table string, err error) error {
	if table != "" {
		op += " " + table
	}
	return s.src.wrap(op, err)
}

// rawStream runs q and hands each row to fn with the driver's types kept
// (stream turns BLOBs into strings; SQL compares a BLOB and a TEXT as
// different values, and so does the message pass), a driver error wrapped
// as reading what.
func (s *sqliteSnapshot) rawStream(ctx context.Context, what, q string, fn func(row []any) error, args ...any) error {
	return s.rowStream(ctx, q, args, false, fn, func(err error) error { return s.src.wrap("read "+what, err) })
}

// Stream is evidence.Snapshot's: rawStream, borrowed when asked (TEXT
// values valid only until fn returns: sqlitedrv.Conn.QueryBorrowed), its
// driver errors unwrapped.
func (s *sqliteSnapshot) Stream(ctx context.Context, q string, args []any, borrow bool, fn func(row []any) error) error {
	return s.rowStream(ctx, q, args, borrow, fn, func(err error) error { return err })
}

// rowStream runs q and hands each row to fn, the driver's errors through
// wrap (fn's as they are): on the snapshot's sqlitedrv.Conn, unless q
// calls a Go function (driverFunction) or there is none.
func (s *sqliteSnapshot) rowStream(ctx context.Context, q string, args []any, borrow bool, fn func(row []any) error, wrap func(error) error) error {
	if s.lite != nil && !strings.Contains(q, driverFunction) {
		var fnErr error
		query := s.lite.Query
		if borrow {
			query = s.lite.QueryBorrowed
		}
		err := query(ctx, q, args, func(row []any) error {
			fnErr = fn(row)
			return fnErr
		})
		if err != nil && err == fnErr {
			return err
		}
		if err != nil {
			return wrap(err)
		}
		return nil
	}
	rows, err := s.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return wrap(err)
	}
	defer rows.Close()
	n := len(mustColumns(rows))
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return wrap(err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return wrap(err)
	}
	return nil
}

// driverFunction names the Go function the message pass's test oracle
// registers with the driver (extract/evidence/oracle_test.go): a query
// calling it runs on the snapshot's database/sql connection, never on its
// sqlitedrv.Conn, which knows no Go functions. No production query calls
// it.
const driverFunction = "kx_instant("

// SQLite primary result codes the extractor explains (sqlite3.h).
const (
	sqliteIOErr    = 10
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteCorrupt  = 11
	sqliteCantOpen = 14
	sqliteNotADB   = 26
)

var noSuchTable = regexp.MustCompile(`no such table: (?:main\.)?([A-Za-z0-9_]+)`)

// wrap turns a driver error into one an operator can act on: it names the
// store and what was being read, and says what to do.
func (s *SQLiteSource) wrap(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store %s: %s: %w", s.Path, op, err)
	}
	var se sqliteCoded
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqliteBusy, sqliteLocked:
			return fmt.Errorf("store %s: %s: the store is locked: another connection held an exclusive lock for the whole busy timeout (%s) "+
				"(Kandev does during a schema migration, or for a write when the store is not in WAL mode); nothing was read or written — run again later: %w",
				s.Path, op, BusyTimeout, err)
		case sqliteCorrupt, sqliteNotADB:
			return fmt.Errorf("store %s: %s: the file is corrupt or truncated, not a readable SQLite database; "+
				"kandev-extract never repairs a source — restore the store from a backup, or recover a copy with `sqlite3 COPY.db .recover`: %w",
				s.Path, op, err)
		case sqliteIOErr, sqliteCantOpen:
			return fmt.Errorf("store %s: %s: the file could not be read (I/O error or permission): %w", s.Path, op, err)
		}
		if m := noSuchTable.FindStringSubmatch(se.Error()); m != nil {
			return &models.MissingTableError{Source: s.Path, Table: m[1]}
		}
	}
	return fmt.Errorf("store %s: %s: %w", s.Path, op, err)
}

func mustColumns(rows *sql.Rows) []string {
	c, _ := rows.Columns()
	return c
}
