package extract

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

var _ models.Source = (*PostgresSource)(nil)

// PostgresSource reads a Kandev PostgreSQL database through one connection,
// inside one REPEATABLE READ READ ONLY transaction per snapshot.
type PostgresSource struct {
	location string   // PrintableLocation's form: no password, no parameter
	secrets  []string // only to scrub them from driver errors
	conn     *pgx.Conn
	guard    *stallGuard
	connect  time.Duration   // the connect timeout in effect
	cfg      *pgx.ConnConfig // to open a fork's connection (fork.go)
}

// OpenPostgres connects to dsn (URL or keyword form). The password is never
// part of an error or of Location. Connecting is bounded by the connect
// timeout, and every read afterwards by the stall watchdog (OpenOptions).
func OpenPostgres(ctx context.Context, dsn string, opts OpenOptions) (*PostgresSource, error) {
	opts = opts.withDefaults()
	cfg, loc, err := location.ParsePostgres(dsn)
	if err != nil {
		return nil, err
	}
	// An explicit option wins over the DSN's connect_timeout; 0 (libpq's
	// "wait for ever") never stays.
	if opts.ConnectTimeout > 0 {
		cfg.ConnectTimeout = opts.ConnectTimeout
	} else if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	s := &PostgresSource{location: loc, secrets: location.DSNSecrets(cfg), connect: cfg.ConnectTimeout,
		guard: &stallGuard{timeout: opts.StallTimeout}}
	// Every connection pgx dials (each host, each TLS fallback) is watched.
	dialer := &net.Dialer{KeepAlive: 5 * time.Minute}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return s.guard.watch(conn), nil
	}
	s.cfg = cfg.Copy()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if ctx.Err() == nil && !s.guard.fired.Load() && (errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)) {
			return nil, fmt.Errorf("source %s: cannot reach the PostgreSQL server within the connect timeout (%s): no answer, so the server may be down, stopped or overloaded, or a firewall drops the packets; to wait longer set connect_timeout (config file) or --connect-timeout: %s",
				s.location, s.connect, location.Scrub(err.Error(), s.secrets))
		}
		return nil, s.wrap("connect", "", err)
	}
	s.conn = conn
	return s, nil
}

func (s *PostgresSource) Dialect() models.Dialect { return models.DialectPostgres }
func (s *PostgresSource) Location() string        { return s.location }
func (s *PostgresSource) Close() error {
	if s.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.conn.Close(ctx)
}

// wrap turns a driver error into one an operator can act on, naming the
// source and, where known, the table — and never the password.
// pgPermissionTable finds the table in "permission denied for table T".
var pgPermissionTable = regexp.MustCompile(`permission denied for (?:table|relation) "?([A-Za-z_][A-Za-z0-9_]*)"?`)

func (s *PostgresSource) wrap(op, table string, err error) error {
	what := op
	if table != "" {
		what = op + " " + table
	}
	if s.guard != nil && s.guard.fired.Load() {
		return fmt.Errorf("source %s: %s: %w (%s): the server's backend may be stopped or frozen, or the network cut; the read was abandoned and the connection closed. If the server is only slow (a very large table before its first row), raise stall_timeout in the config file, or --stall-timeout",
			s.location, what, ErrStalled, s.guard.timeout)
	}
	msg := location.Scrub(err.Error(), s.secrets)
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		pgMsg := location.Scrub(pgErr.Message, s.secrets)
		switch pgErr.Code {
		case "28P01", "28000":
			return fmt.Errorf("source %s: authentication failed for the PostgreSQL role (check the user and password; the password is not shown): %s", s.location, pgMsg)
		case "3D000":
			return fmt.Errorf("source %s: database does not exist: %s", s.location, pgMsg)
		case "42501":
			// A read joins other tables: name the one the role may not read.
			if m := pgPermissionTable.FindStringSubmatch(pgErr.Message); m != nil && m[1] != table {
				return fmt.Errorf("source %s: %s: %s: permission denied (%s); grant the role SELECT on it (see docs/postgres.md)", s.location, what, m[1], pgMsg)
			}
			return fmt.Errorf("source %s: %s: permission denied (%s); grant the role SELECT on it (see docs/postgres.md)", s.location, what, pgMsg)
		case "57014":
			return fmt.Errorf("source %s: %s: cancelled by statement_timeout or a cancel request: %s", s.location, what, pgMsg)
		case "25P03":
			return fmt.Errorf("source %s: %s: the server ended the session after idle_in_transaction_session_timeout: %s", s.location, what, pgMsg)
		case "42P01":
			if m := pgNoSuchTable.FindStringSubmatch(pgErr.Message); m != nil {
				return &models.MissingTableError{Source: s.location, Table: m[1]}
			}
			return fmt.Errorf("source %s: %s: table missing: %s", s.location, what, pgMsg)
		}
		return fmt.Errorf("source %s: %s: %s (SQLSTATE %s)", s.location, what, pgMsg, pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return location.Masked(fmt.Sprintf("source %s: %s: %s", s.location, what, msg), err)
	case errors.As(err, &netErr), strings.Contains(msg, "connect"):
		return fmt.Errorf("source %s: cannot reach the PostgreSQL server: %s", s.location, msg)
	}
	return fmt.Errorf("source %s: %s: %s", s.location, what, msg)
}

var pgNoSuchTable = regexp.MustCompile(`^relation "(?:public\.)?([A-Za-z0-9_]+)" does not exist`)

// stallGuard is the client-side watchdog of a PostgreSQL source. Every
// connection it watches counts the reads and writes in progress; when one
// has waited StallTimeout with no byte moving, the guard closes the
// connection, so pgx fails the query at once and closes the connection,
// and wrap reports ErrStalled. A connection idle between queries (nothing
// asked of the server) is never timed: only waiting for the server is.
type stallGuard struct {
	timeout time.Duration
	fired   atomic.Bool
}

func (g *stallGuard) watch(c net.Conn) net.Conn {
	w := &watchedConn{Conn: c, g: g, done: make(chan struct{})}
	go w.run()
	return w
}

type watchedConn struct {
	net.Conn
	g    *stallGuard
	seq  atomic.Uint64 // moves at every start and end of a Read or Write
	busy atomic.Int32  // Reads and Writes in progress
	done chan struct{}
	once sync.Once
}

func (w *watchedConn) Read(b []byte) (int, error) {
	w.busy.Add(1)
	w.seq.Add(1)
	n, err := w.Conn.Read(b)
	w.seq.Add(1)
	w.busy.Add(-1)
	return n, err
}

func (w *watchedConn) Write(b []byte) (int, error) {
	w.busy.Add(1)
	w.seq.Add(1)
	n, err := w.Conn.Write(b)
	w.seq.Add(1)
	w.busy.Add(-1)
	return n, err
}

func (w *watchedConn) Close() error {
	w.once.Do(func() { close(w.done) })
	return w.Conn.Close()
}

// run checks a few times per timeout whether a read or write has been
// blocked, with nothing moving, for the whole timeout.
func (w *watchedConn) run() {
	tick := min(max(w.g.timeout/20, 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var seen uint64
	var since time.Time
	for {
		select {
		case <-w.done:
			return
		case now := <-t.C:
			if w.busy.Load() == 0 {
				since = time.Time{}
				continue
			}
			if seq := w.seq.Load(); since.IsZero() || seq != seen {
				seen, since = seq, now
				continue
			}
			if now.Sub(since) >= w.g.timeout {
				w.g.fired.Store(true)
				w.Close()
				return
			}
		}
	}
}

// Begin opens a REPEATABLE READ READ ONLY transaction: one snapshot for
// keys, schema, facts, dimensions and the health check.
func (s *PostgresSource) Begin(ctx context.Context) (models.Snapshot, error) {
	snap, err := s.begin(ctx, true)
	if err != nil {
		return nil, err
	}
	if snap.exportErr != "" {
		// The export failed and aborted the transaction: begin again, on a
		// snapshot that no second reader can share (fork.go).
		snap.tx.Rollback(ctx)
		why := snap.exportErr
		if snap, err = s.begin(ctx, false); err != nil {
			return nil, err
		}
		snap.exportErr = why
	}
	return snap, nil
}

// configureTx sets a snapshot transaction's own settings in its first
// statement: how long it may sit idle on the server (a client that died or
// froze between two queries must not hold the snapshot, and the vacuum
// horizon, for ever), and work_mem raised to 64 MB for this transaction
// only, never lowered (with the default 4 MB the fact scan's duplicate-key
// aggregate over 1 M rows spilled 124 MB to temporary files; a run's two
// connections use at most that per sort or hash on the server).
func configureTx(ctx context.Context, tx pgx.Tx, idle time.Duration) error {
	var idleSet, workMem string
	return tx.QueryRow(ctx, `SELECT set_config('idle_in_transaction_session_timeout', $1, true),
		CASE WHEN pg_size_bytes(current_setting('work_mem')) < 64 * 1024 * 1024
			THEN set_config('work_mem', '64MB', true) ELSE current_setting('work_mem') END`,
		strconv.FormatInt(idle.Milliseconds(), 10)).Scan(&idleSet, &workMem)
}

// begin starts the snapshot's transaction and, with export, exports the
// snapshot for a fork (pg_export_snapshot: not in a subtransaction, so it
// is done here, first; its error is kept in exportErr, the transaction
// then being aborted).
func (s *PostgresSource) begin(ctx context.Context, export bool) (*pgSnapshot, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.wrap("begin snapshot", "", err)
	}
	at := time.Now().UTC()
	// The snapshot is taken at the first statement, configureTx's. A run
	// is never idle as long as its idle bound: rows are streamed, and the
	// stall watchdog guards the other direction.
	if err := configureTx(ctx, tx, idleInTransactionTimeout(s.guard.timeout)); err != nil {
		tx.Rollback(ctx)
		return nil, s.wrap("begin snapshot", "", err)
	}
	snap := &pgSnapshot{src: s, tx: tx, at: at}
	if export {
		if err := tx.QueryRow(ctx, `SELECT pg_export_snapshot()`).Scan(&snap.exported); err != nil {
			if ctx.Err() != nil || s.guard.fired.Load() {
				tx.Rollback(ctx)
				return nil, s.wrap("begin snapshot", "", err)
			}
			snap.exportErr = "pg_export_snapshot: " + location.Scrub(err.Error(), s.secrets)
		}
	}
	return snap, nil
}

// idleInTransactionTimeout is the server-side bound on an idle snapshot
// transaction: twice the stall timeout, and at least 10 minutes.
func idleInTransactionTimeout(stall time.Duration) time.Duration {
	return max(2*stall, 10*time.Minute)
}

type pgSnapshot struct {
	src   *PostgresSource
	tx    pgx.Tx
	at    time.Time
	owned bool // a fork: its source (connection) is closed with it
	// exported is the snapshot's id for a fork (pg_export_snapshot), or
	// exportErr why there is none.
	exported, exportErr string
	// lookupFacts are read for the lookups decided in Go (pglookups.go),
	// once per snapshot; lookupIDsRead counts the id sets read (tests);
	// lookupsInSQL (tests) probes every lookup in SQL.
	lookupFacts   map[string]*tableFacts
	lookupIDsRead int
	lookupsInSQL  bool
}

func (p *pgSnapshot) At() time.Time { return p.at }
func (p *pgSnapshot) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.tx.Rollback(ctx)
	if p.owned {
		if cerr := p.src.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (p *pgSnapshot) TableExists(ctx context.Context, table string) (bool, error) {
	var ok bool
	if err := p.tx.QueryRow(ctx, `SELECT to_regclass(quote_ident($1)) IS NOT NULL`, table).Scan(&ok); err != nil {
		return false, p.src.wrap("look up", table, err)
	}
	return ok, nil
}

func (p *pgSnapshot) Columns(ctx context.Context, table string) ([]string, error) {
	rows, err := p.tx.Query(ctx, `SELECT a.attname FROM pg_attribute a
		WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
	if err != nil {
		return nil, p.src.wrap("columns of", table, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.src.wrap("columns of", table, err)
	}
	return cols, nil
}

func (p *pgSnapshot) Meta(ctx context.Context) ([]models.MetaEntry, error) {
	ok, err := p.TableExists(ctx, "kandev_meta")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &models.MissingTableError{Source: p.src.location, Table: "kandev_meta"}
	}
	cols, err := p.Columns(ctx, "kandev_meta")
	if err != nil {
		return nil, err
	}
	if err := sqlkit.RequireColumns(p.src.location, "kandev_meta", cols, "key", "value"); err != nil {
		return nil, err
	}
	// Only the keys used, each value capped in the server (left() reads
	// a slice; octet_length reads the TOAST header, not the value).
	args := make([]any, len(models.MetaKeys))
	for i, k := range models.MetaKeys {
		args[i] = k
	}
	rows, err := p.tx.Query(ctx, fmt.Sprintf(`SELECT key::text, left(value::text, %d), octet_length(value::text)
		FROM kandev_meta WHERE key::text IN (%s)`, models.MaxLabelBytes, sqlkit.Placeholders(len(args), "$")), args...)
	if err != nil {
		return nil, p.src.wrap("read", "kandev_meta", err)
	}
	var (
		m metaReader
		k *string
		v *string
		n *int64
	)
	_, err = pgx.ForEachRow(rows, []any{&k, &v, &n}, func() error {
		var key string
		var val any
		var bytes int64
		if k != nil {
			key = *k
		}
		if v != nil {
			val = *v
		}
		if n != nil {
			bytes = *n
		}
		m.add(key, val, bytes)
		return nil
	})
	if err != nil {
		return nil, p.src.wrap("read", "kandev_meta", err)
	}
	return m.out, nil
}

func (p *pgSnapshot) SubagentSchema(ctx context.Context) (models.SubagentSchema, error) {
	const table = "task_session_subagents"
	var out models.SubagentSchema
	ok, err := p.TableExists(ctx, table)
	if err != nil || !ok {
		return out, err
	}
	out.Exists = true
	if out.Columns, err = p.Columns(ctx, table); err != nil {
		return out, err
	}
	// Unique constraints are backed by unique indexes: read every unique,
	// non-primary index by its column set (names are generated, so unused).
	rows, err := p.tx.Query(ctx, `SELECT i.indexrelid::bigint, a.attname::text
		FROM pg_index i
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisunique AND NOT i.indisprimary
		ORDER BY i.indexrelid, k.ord`, table)
	if err != nil {
		return out, p.src.wrap("unique keys of", table, err)
	}
	defer rows.Close()
	idx := map[int64]int{}
	for rows.Next() {
		var id int64
		var col string
		if err := rows.Scan(&id, &col); err != nil {
			return out, p.src.wrap("unique keys of", table, err)
		}
		i, seen := idx[id]
		if !seen {
			i = len(out.UniqueKeys)
			idx[id] = i
			out.UniqueKeys = append(out.UniqueKeys, nil)
		}
		out.UniqueKeys[i] = append(out.UniqueKeys[i], col)
	}
	return out, p.src.wrapIf("unique keys of", table, rows.Err())
}

func (s *PostgresSource) wrapIf(op, table string, err error) error {
	if err == nil {
		return nil
	}
	return s.wrap(op, table, err)
}

func (p *pgSnapshot) Scan(ctx context.Context, spec models.TableSpec, fn func(row []any) error) error {
	ok, err := p.TableExists(ctx, spec.Name)
	if err != nil {
		return err
	}
	if !ok {
		return &models.MissingTableError{Source: p.src.location, Table: spec.Name}
	}
	cols, err := p.Columns(ctx, spec.Name)
	if err != nil {
		return err
	}
	// timestamp without time zone is read as is: its wall clock is UTC by
	// Kandev's contract, and no session TimeZone is ever applied to it.
	types, err := p.pgColumnTypes(ctx, spec.Name)
	if err != nil {
		return err
	}
	spec, fn, err = p.lookupsInGo(ctx, spec, fn)
	if err != nil {
		return err
	}
	q, plan, err := pgScanSQL(p.src.location, spec, cols, types)
	if err != nil {
		return err
	}
	return p.stream(ctx, spec.Name, q, nil, plan.wrap(fn))
}

// pgScanSQL is the statement the PostgreSQL reader runs for spec on a
// table with the given columns and column types.
func pgScanSQL(source string, spec models.TableSpec, cols []string, types map[string]pgColumnType) (string, capPlan, error) {
	have := sqlkit.ColumnSet(cols)
	capped, lengths, plan := capSpec(spec, have, pgCapWhole(types))
	list, err := selectList(source, capped, have, func(c string) string { return c })
	if err != nil {
		return "", plan, err
	}
	if lengths != "" {
		list += ", " + lengths
	}
	return strings.NewReplacer(scans.SQLiteNotIndexed, "", scans.SQLiteNoFlatten, "").Replace("SELECT " + list + fromClause(spec, have)), plan, nil
}

func (p *pgSnapshot) Query(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return p.stream(ctx, "", query, args, fn)
}

func (p *pgSnapshot) stream(ctx context.Context, table, q string, args []any, fn func(row []any) error) error {
	var fnErr error
	err := p.Stream(ctx, q, args, false, func(row []any) error {
		fnErr = fn(row)
		return fnErr
	})
	if err != nil && err != fnErr {
		return p.src.wrap("read", table, err)
	}
	return err
}

// Stream is evidence.Snapshot's: the rows of q decoded as Query hands them
// (pgRowDecoder: nothing is borrowed), the driver's errors unwrapped.
func (p *pgSnapshot) Stream(ctx context.Context, q string, args []any, _ bool, fn func(row []any) error) error {
	rows, err := p.tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	dec := newPGRowDecoder(rows)
	for rows.Next() {
		vals, err := dec.decode(rows.RawValues())
		if err != nil {
			return err
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Exec is evidence.PostgresSnapshot's: a statement in the snapshot's
// transaction, the driver's error unwrapped.
func (p *pgSnapshot) Exec(ctx context.Context, q string) error {
	_, err := p.tx.Exec(ctx, q)
	return err
}

// Dialect is evidence.Snapshot's.
func (p *pgSnapshot) Dialect() models.Dialect { return models.DialectPostgres }

// Location is evidence.Snapshot's: the printable location.
func (p *pgSnapshot) Location() string { return p.src.location }

// Wrap is evidence.Snapshot's.
func (p *pgSnapshot) Wrap(op, table string, err error) error { return p.src.wrap(op, table, err) }
