// Package sqlkit holds the few helpers the SQL of extract (the scans) and
// of extract/evidence (the message pass) share.
package sqlkit

import (
	"strconv"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// RequireColumns fails with a MissingColumnError naming the first of need
// that a table lacks.
func RequireColumns(source, table string, have []string, need ...string) error {
	set := ColumnSet(have)
	for _, c := range need {
		if !set[c] {
			return &models.MissingColumnError{Source: source, Table: table, Column: c}
		}
	}
	return nil
}

// ColumnSet is the set of cols.
func ColumnSet(cols []string) map[string]bool {
	m := make(map[string]bool, len(cols))
	for _, c := range cols {
		m[c] = true
	}
	return m
}

// Placeholders renders n bind parameters: "?, ?" or "$1, $2".
func Placeholders(n int, style string) string {
	p := make([]string, n)
	for i := range p {
		if style == "?" {
			p[i] = "?"
		} else {
			p[i] = "$" + strconv.Itoa(i+1)
		}
	}
	return strings.Join(p, ", ")
}

// AsInt64 reads an integer cell of any width.
func AsInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}
