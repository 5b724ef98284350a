// Package extract reads Kandev stores: one consistent, read-only snapshot of
// a SQLite file or a PostgreSQL database. It streams rows; it never loads a
// whole table and never writes to the source. It opens the sources and
// holds their snapshots, scans (ScanPlan) and forks; beside it,
// extract/location reads and redacts the locations it is given,
// extract/scans holds the scans' SQL, extract/evidence derives the message
// evidence, writer health and fan-out from a snapshot, and
// extract/internal/sqlitedrv is the private SQLite driver its snapshots
// read through.
package extract

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/extract/location"
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

// ErrStalled is wrapped by the error of a PostgreSQL read that got no data
// from the server within the stall timeout (OpenOptions.StallTimeout).
var ErrStalled = errors.New("no data from the PostgreSQL server within the stall timeout")

// Open returns a Source for a location with the default options; see
// OpenWith.
func Open(ctx context.Context, loc string) (models.Source, error) {
	return OpenWith(ctx, loc, OpenOptions{})
}

// OpenWith returns a Source for a location, classified as
// location.Classify does: a PostgreSQL URL or keyword/value DSN, or a
// SQLite file path ("~/" is expanded) or file: URL. Neither the Source's
// Location nor any error holds a password: they show the location as
// location.PrintableLocation does.
func OpenWith(ctx context.Context, loc string, opts OpenOptions) (models.Source, error) {
	c, err := location.Parse(loc)
	if err != nil {
		return nil, err
	}
	// Typed nils must not escape as non-nil interfaces.
	if c.Dialect == models.DialectPostgres {
		s, err := OpenPostgres(ctx, c.DSN, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return openSQLite(ctx, location.ExpandHome(c.Path))
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

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
