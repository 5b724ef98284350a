// Package extract reads Kandev stores: one consistent, read-only snapshot of
// a SQLite file or a PostgreSQL database. It streams rows; it never loads a
// whole table and never writes to the source.
package extract

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// Open returns a Source for a location: a PostgreSQL URL or keyword DSN, or
// a path to a SQLite file ("~/" is expanded).
func Open(ctx context.Context, location string) (models.Source, error) {
	if location == "" {
		return nil, fmt.Errorf("no source given")
	}
	// Typed nils must not escape as non-nil interfaces.
	if IsPostgres(location) {
		s, err := OpenPostgres(ctx, location)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := OpenSQLite(ctx, ExpandHome(location))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// IsPostgres reports whether a location names a PostgreSQL database.
func IsPostgres(location string) bool {
	l := strings.ToLower(strings.TrimSpace(location))
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") ||
		strings.Contains(l, "host=") || strings.Contains(l, "dbname=")
}

// ExpandHome expands a leading "~/" to the user's home directory.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// selectList renders the SELECT list for spec given the table's actual
// columns, quoting identifiers. quote renders a stamp column read.
func selectList(source string, spec models.TableSpec, have map[string]bool, stamp func(col string) string) (string, error) {
	parts := make([]string, 0, len(spec.Columns))
	for _, c := range spec.Columns {
		switch {
		case c.Expr != "":
			parts = append(parts, c.Expr)
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

// fromClause renders FROM with the optional alias, join and filter.
func fromClause(spec models.TableSpec) string {
	q := " FROM " + quoteIdent(spec.Name)
	if spec.Alias != "" {
		q += " AS " + spec.Alias
	}
	q += spec.Join
	if spec.Where != "" {
		q += " WHERE " + spec.Where
	}
	return q
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func columnSet(cols []string) map[string]bool {
	m := make(map[string]bool, len(cols))
	for _, c := range cols {
		m[c] = true
	}
	return m
}

var (
	urlPassword = regexp.MustCompile(`(?i)(postgres(?:ql)?://[^:/@]*:)([^@]*)(@)`)
	kvPassword  = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)`)
)

// RedactDSN hides the password of a PostgreSQL URL or keyword DSN, so the
// result is safe to log, print and store in provenance.
func RedactDSN(dsn string) string {
	out := urlPassword.ReplaceAllString(dsn, "${1}REDACTED${3}")
	out = kvPassword.ReplaceAllString(out, "${1}REDACTED")
	if u, err := url.Parse(out); err == nil && u.RawQuery != "" {
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "REDACTED")
			u.RawQuery = q.Encode()
			out = u.String()
		}
	}
	return out
}
