package extract

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/models"
)

var _ models.Source = (*PostgresSource)(nil)

// PostgresSource reads a Kandev PostgreSQL database through one connection,
// inside one REPEATABLE READ READ ONLY transaction per snapshot.
type PostgresSource struct {
	location string // redacted
	password string // only to scrub it from driver errors
	conn     *pgx.Conn
}

// OpenPostgres connects to dsn (URL or keyword form). The password is never
// part of an error or of Location.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresSource, error) {
	loc := RedactDSN(dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("source %s: bad PostgreSQL DSN: %s", loc, scrub(err.Error(), "", dsn))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 15 * time.Second
	}
	s := &PostgresSource{location: loc, password: cfg.Password}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
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
func (s *PostgresSource) wrap(op, table string, err error) error {
	what := op
	if table != "" {
		what = op + " " + table
	}
	msg := scrub(err.Error(), s.password, "")
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "28P01", "28000":
			return fmt.Errorf("source %s: authentication failed for the PostgreSQL role (check the user and password; the password is not shown): %s", s.location, pgErr.Message)
		case "3D000":
			return fmt.Errorf("source %s: database does not exist: %s", s.location, pgErr.Message)
		case "42501":
			return fmt.Errorf("source %s: %s: permission denied (%s); grant the role SELECT on it (see docs/postgres.md)", s.location, what, pgErr.Message)
		case "57014":
			return fmt.Errorf("source %s: %s: cancelled by statement_timeout or a cancel request: %s", s.location, what, pgErr.Message)
		case "42P01":
			if m := pgNoSuchTable.FindStringSubmatch(pgErr.Message); m != nil {
				return &models.MissingTableError{Source: s.location, Table: m[1]}
			}
			return fmt.Errorf("source %s: %s: table missing: %s", s.location, what, pgErr.Message)
		}
		return fmt.Errorf("source %s: %s: %s (SQLSTATE %s)", s.location, what, pgErr.Message, pgErr.Code)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("source %s: %s: %w", s.location, what, err)
	case errors.As(err, &netErr), strings.Contains(msg, "connect"):
		return fmt.Errorf("source %s: cannot reach the PostgreSQL server: %s", s.location, msg)
	}
	return fmt.Errorf("source %s: %s: %s", s.location, what, msg)
}

var pgNoSuchTable = regexp.MustCompile(`^relation "(?:public\.)?([A-Za-z0-9_]+)" does not exist`)

// scrub removes a password (and a DSN that carries one) from text.
func scrub(text, password, dsn string) string {
	if dsn != "" {
		text = strings.ReplaceAll(text, dsn, RedactDSN(dsn))
	}
	if password != "" {
		text = strings.ReplaceAll(text, password, "REDACTED")
	}
	return text
}

// Begin opens a REPEATABLE READ READ ONLY transaction: one snapshot for
// keys, schema, facts, dimensions and the health check.
func (s *PostgresSource) Begin(ctx context.Context) (models.Snapshot, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.wrap("begin snapshot", "", err)
	}
	at := time.Now().UTC()
	// The snapshot is taken at the first statement.
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		tx.Rollback(ctx)
		return nil, s.wrap("begin snapshot", "", err)
	}
	return &pgSnapshot{src: s, tx: tx, at: at}, nil
}

type pgSnapshot struct {
	src *PostgresSource
	tx  pgx.Tx
	at  time.Time
}

func (p *pgSnapshot) At() time.Time { return p.at }
func (p *pgSnapshot) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.tx.Rollback(ctx)
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
	if err := requireColumns(p.src.location, "kandev_meta", cols, "key", "value"); err != nil {
		return nil, err
	}
	rows, err := p.tx.Query(ctx, `SELECT key::text, value::text FROM kandev_meta`)
	if err != nil {
		return nil, p.src.wrap("read", "kandev_meta", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (models.MetaEntry, error) {
		var k, v *string
		err := r.Scan(&k, &v)
		e := models.MetaEntry{}
		if k != nil {
			e.Key = *k
		}
		if v != nil {
			e.Value = *v
		}
		return e, err
	})
	if err != nil {
		return nil, p.src.wrap("read", "kandev_meta", err)
	}
	return out, nil
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
	have := columnSet(cols)
	list, err := selectList(p.src.location, spec, have, func(c string) string { return c })
	if err != nil {
		return err
	}
	q := strings.ReplaceAll("SELECT "+list+fromClause(spec, have), models.SQLiteNotIndexed, "")
	return p.stream(ctx, spec.Name, q, nil, fn)
}

func (p *pgSnapshot) Query(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return p.stream(ctx, "", query, args, fn)
}

func (p *pgSnapshot) stream(ctx context.Context, table, q string, args []any, fn func(row []any) error) error {
	rows, err := p.tx.Query(ctx, q, args...)
	if err != nil {
		return p.src.wrap("read", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return p.src.wrap("read", table, err)
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return p.src.wrapIf("read", table, rows.Err())
}
