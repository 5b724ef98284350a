package load

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// columnComments are the statements that give every column of the base
// views and their _history tables the meaning the catalog states
// (docs/warehouse.md prints the same text), so an analyst's client shows
// it (DuckDB's duckdb_columns().comment, DBeaver, `DESCRIBE` in the CLI).
// Only columns the built tables have are commented: a warehouse whose runs
// are all older than a column lacks it. The build runs them as one
// statement list inside its one transaction (one commit per COMMENT made a
// rebuild 0.5 s slower).
func columnComments(ctx context.Context, conn *sql.Conn) (string, error) {
	have := map[[2]string]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = current_database()`)
	if err != nil {
		return "", err
	}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return "", err
		}
		have[[2]string{t, c}] = true
	}
	if err := rows.Close(); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, name := range baseTables {
		t := models.Lookup(name)
		if t == nil {
			continue
		}
		for _, rel := range []string{name, name + "_history"} {
			for _, c := range t.Columns {
				if c.Comment == "" || !have[[2]string{rel, c.Name}] {
					continue
				}
				fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS %s;\n", rel, c.Name, quote(c.Comment))
			}
		}
	}
	return b.String(), nil
}
