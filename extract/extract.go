// Package extract reads Kandev stores: one consistent, read-only snapshot of
// a SQLite file or a PostgreSQL database. It streams rows; it never loads a
// whole table and never writes to the source.
package extract

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// Timeouts of a PostgreSQL source (OpenOptions).
const (
	// DefaultConnectTimeout bounds connecting to each PostgreSQL host.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultStallTimeout is how long a PostgreSQL read may wait for the
	// server's next bytes: long enough for a large table's first row.
	DefaultStallTimeout = 10 * time.Minute
)

// OpenOptions tune how a source is opened. The zero value is the defaults.
type OpenOptions struct {
	// ConnectTimeout bounds connecting to a PostgreSQL server (each host of
	// a multi-host DSN in turn). 0: the DSN's connect_timeout if it sets
	// one, else DefaultConnectTimeout. A connection never waits for ever.
	ConnectTimeout time.Duration
	// StallTimeout: when the client has waited this long for the
	// PostgreSQL server's next bytes (a row, a result, a reply), the
	// connection is closed and the read fails with ErrStalled. It is a
	// client-side watchdog, so a stopped or frozen backend, which cannot
	// enforce statement_timeout, cannot hang a run. 0: DefaultStallTimeout.
	StallTimeout time.Duration
}

func (o OpenOptions) withDefaults() OpenOptions {
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	return o
}

// ErrUnsupportedSource is wrapped by the error for a source that is a URL
// whose scheme kandev-extract does not read (mysql://, a mistyped
// postgress://, ...), or a malformed postgres: or file: URL. It is a usage
// error. The error names the scheme and never the rest of the text.
var ErrUnsupportedSource = errors.New("unsupported source")

// ErrBadDSN is wrapped by the error for a PostgreSQL URL or keyword/value
// DSN that cannot be read unambiguously (bad quoting or percent-encoding,
// a raw '@' in a URL's password, an upper-case keyword, a file it names
// missing). It is a usage error; the error never quotes the DSN.
var ErrBadDSN = errors.New("unreadable PostgreSQL DSN")

// ErrStalled is wrapped by the error of a PostgreSQL read that got no data
// from the server within the stall timeout (OpenOptions.StallTimeout).
var ErrStalled = errors.New("no data from the PostgreSQL server within the stall timeout")

// Open returns a Source for a location with the default options; see
// OpenWith.
func Open(ctx context.Context, location string) (models.Source, error) {
	return OpenWith(ctx, location, OpenOptions{})
}

// OpenWith returns a Source for a location, classified as Classify does:
// a PostgreSQL URL or keyword/value DSN, or a SQLite file path ("~/" is
// expanded) or file: URL. Neither the Source's Location nor any error
// holds a password: they show the location as PrintableLocation does.
func OpenWith(ctx context.Context, location string, opts OpenOptions) (models.Source, error) {
	c, err := classify(location)
	if err != nil {
		return nil, err
	}
	// Typed nils must not escape as non-nil interfaces.
	if c.dialect == models.DialectPostgres {
		s, err := OpenPostgres(ctx, c.dsn, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return openSQLite(ctx, ExpandHome(c.path))
}

// Classify tells which kind of store a location names, without opening it:
//
//   - scheme://… is a URL: postgres:// and postgresql:// (any case) are
//     PostgreSQL; file: (file:PATH, file:///PATH, file://localhost/PATH,
//     no query) names a SQLite file; any other scheme is an error wrapping
//     ErrUnsupportedSource that names only the scheme. So are postgres: or
//     postgresql: without the two slashes.
//   - text whose first token is word= (host=db dbname=kandev, or just
//     user=r4 port=5432 with PGHOST set) is a libpq keyword/value DSN:
//     PostgreSQL.
//   - anything else is a SQLite file path (a path that begins with such a
//     word=, or with scheme://, is written ./word=… or ./scheme://…).
func Classify(location string) (models.Dialect, error) {
	c, err := classify(location)
	if err != nil {
		return "", err
	}
	return c.dialect, nil
}

// CheckSource reports, without connecting or opening a store (pgx may
// read ~/.pgpass and the certificate files a DSN names), whether a
// location can be opened at all: an error wrapping
// ErrUnsupportedSource (a URL scheme kandev-extract does not read) or
// ErrBadDSN (a PostgreSQL DSN that cannot be parsed), or nil. Both are
// usage errors; neither holds more of the location than
// PrintableLocation.
func CheckSource(location string) error {
	c, err := classify(location)
	if err != nil || c.dialect != models.DialectPostgres {
		return err
	}
	_, _, err = parsePostgres(c.dsn, c.isURL)
	return err
}

// IsPostgres reports whether a location names a PostgreSQL database.
func IsPostgres(location string) bool {
	d, err := Classify(location)
	return err == nil && d == models.DialectPostgres
}

// ExpandHome expands a leading "~/" to the user's home directory.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// optionalColumn matches {{column}} or {{alias.column}} in a spec's Expr,
// Join or Where: a column of the scanned table that a store may lack. It
// renders as the quoted column when the table has it, else as an empty
// string literal (so a key that includes it degrades to the key without
// it, e.g. a pre-amendment store's (task_session_id, tool_call_id)).
var optionalColumn = regexp.MustCompile(`\{\{(?:([A-Za-z_][A-Za-z0-9_]*)\.)?([A-Za-z_][A-Za-z0-9_]*)\}\}`)

func renderOptional(sql string, have map[string]bool) string {
	if !strings.Contains(sql, "{{") {
		return sql
	}
	return optionalColumn.ReplaceAllStringFunc(sql, func(m string) string {
		sub := optionalColumn.FindStringSubmatch(m)
		if !have[sub[2]] {
			return "''"
		}
		if sub[1] != "" {
			return sub[1] + "." + quoteIdent(sub[2])
		}
		return quoteIdent(sub[2])
	})
}

// selectList renders the SELECT list for spec given the table's actual
// columns, quoting identifiers. quote renders a stamp column read.
func selectList(source string, spec models.TableSpec, have map[string]bool, stamp func(col string) string) (string, error) {
	parts := make([]string, 0, len(spec.Columns))
	for _, c := range spec.Columns {
		switch {
		case c.Expr != "":
			parts = append(parts, renderOptional(c.Expr, have))
		case have[c.Name]:
			col := quoteIdent(c.Name)
			if spec.Alias != "" {
				col = spec.Alias + "." + col
			}
			if c.Kind == models.KindStamp {
				col = stamp(col)
			}
			parts = append(parts, col)
		case c.Required:
			return "", &models.MissingColumnError{Source: source, Table: spec.Name, Column: c.Name}
		default:
			parts = append(parts, "NULL")
		}
	}
	return strings.Join(parts, ", "), nil
}

// fromClause renders FROM with the optional alias, join and filter; have
// is the scanned table's columns, for {{column}} placeholders.
func fromClause(spec models.TableSpec, have map[string]bool) string {
	q := " FROM " + quoteIdent(spec.Name)
	if spec.Alias != "" {
		q += " AS " + spec.Alias
	}
	q += renderOptional(spec.Join, have)
	if spec.Where != "" {
		q += " WHERE " + renderOptional(spec.Where, have)
	}
	return q
}

// requireColumns fails with a MissingColumnError naming the first of need
// that a table lacks.
func requireColumns(source, table string, have []string, need ...string) error {
	set := columnSet(have)
	for _, c := range need {
		if !set[c] {
			return &models.MissingColumnError{Source: source, Table: table, Column: c}
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func columnSet(cols []string) map[string]bool {
	m := make(map[string]bool, len(cols))
	for _, c := range cols {
		m[c] = true
	}
	return m
}
