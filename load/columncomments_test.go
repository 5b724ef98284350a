package load_test

import (
	"database/sql"
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
