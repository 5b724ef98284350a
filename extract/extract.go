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
