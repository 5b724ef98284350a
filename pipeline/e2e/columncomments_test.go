package e2e_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// Every column of the base views and their _history tables carries the
// catalog's meaning as its DuckDB comment (what DESCRIBE-like tools show
// an analyst), word for word.
func TestColumnCommentsFromTheCatalog(t *testing.T) {
	db := duck(t, sharedWarehouse(t))
	checked := 0
	for _, name := range load.BaseTables() {
		tbl := models.MustTable(name)
		for _, rel := range []string{name, name + "_history"} {
			for _, c := range tbl.Columns {
				var got sql.NullString
				err := db.QueryRow(`SELECT comment FROM duckdb_columns() WHERE database_name = current_database()
					AND table_name = ? AND column_name = ?`, rel, c.Name).Scan(&got)
				if err != nil {
					t.Errorf("%s.%s: %v", rel, c.Name, err)
					continue
				}
				if got.String != c.Comment || c.Comment == "" {
					t.Errorf("%s.%s: comment %q, want the catalog's %q", rel, c.Name, got.String, c.Comment)
				}
				checked++
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d columns checked", checked)
	}
}

// Every column of every table and view of a built warehouse carries a
// comment: the base views and _history tables the catalog's, the analytic
// views theirs (views/*.sql), runs, current_runs and warehouse_build
// theirs (load/duckdb.go, load/pending.go). A column without one shows an
// analyst's client nothing.
func TestEveryColumnHasAComment(t *testing.T) {
	db := duck(t, sharedWarehouse(t))
	missing := rowsOf(t, db, `SELECT table_name || '.' || column_name FROM duckdb_columns()
		WHERE database_name = current_database() AND NOT internal AND (comment IS NULL OR comment = '')
		ORDER BY table_name, column_index`)
	if len(missing) > 0 {
		t.Errorf("%d columns have no comment:\n%s", len(missing), strings.Join(missing, "\n"))
	}
	// The check covers the objects made in Go and the analytic views.
	for _, rel := range []string{"runs", "current_runs", "warehouse_build", "fanout_by_turn", "writer_shortfall_turns"} {
		if n := one(t, db, `SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() AND table_name = ?`, rel); n == "0" {
			t.Errorf("%s has no columns in the warehouse", rel)
		}
	}
}
