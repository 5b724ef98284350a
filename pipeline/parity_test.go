package pipeline

import (
	"path/filepath"
	"testing"
)

// The same generated store in SQLite and in PostgreSQL gives the same
// warehouse, row for row, provenance aside.
func TestParityDemoStoreSQLiteAndPostgres(t *testing.T) {
	t.Parallel()
	sqlitePath := filepath.Join(repoRoot(t), "testdata", "demo", "kandev-demo.db")
	dsn := copyToPostgres(t, sqlitePath)
	whS, _ := extractTo(t, sqlitePath, "demo")
	whP, _ := extractTo(t, dsn, "demo")
	for _, table := range []string{"fact_subagent_context", "dim_session", "dim_turn", "dim_task", "dim_workflow",
		"dim_workflow_step", "disclosures", "rejects", "fact_writer_health"} {
		exclude := []string{}
		if table == "fact_writer_health" {
			exclude = []string{"evaluated_at"}
		}
		got, want := parquetTable(t, whP, table, exclude...), parquetTable(t, whS, table, exclude...)
		if len(want) == 0 && table != "rejects" {
			t.Errorf("%s is empty", table)
		}
		equalSets(t, table, got, want)
	}
	equalSets(t, "installation state",
		parquetTable(t, whP, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"),
		parquetTable(t, whS, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"))
}
