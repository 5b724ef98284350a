package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "modernc.org/sqlite"

	"github.com/kandev/kandev-extract/internal/pgfixture"
	"github.com/kandev/kandev-extract/internal/testkit"
)

// Shared helpers (internal/testkit, internal/pgfixture).
var (
	repoRoot    = testkit.RepoRoot
	fixture     = testkit.Fixture
	copyFixture = testkit.CopyFixture
	sqliteExec  = testkit.SQLiteExec
	sourceDB    = testkit.SourceDB
	duck        = testkit.Duck
	rowsOf      = testkit.RowsOf
	one         = testkit.One
	equalSets   = testkit.EqualSets
	memDuck     = testkit.MemDuck
	hashFile    = testkit.HashFile

	pgFixture      = pgfixture.Load
	pgExec         = pgfixture.Exec
	pgRows         = pgfixture.Rows
	copyToPostgres = pgfixture.CopySQLite
)

// extractTo runs the pipeline on one source into a fresh warehouse.
func extractTo(t testing.TB, source, installation string) (string, Result) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	res, err := Run(context.Background(), Options{
		Warehouse:     wh,
		Installations: []Installation{{Name: installation, Source: source}},
		Allocator:     mem,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	mem.AssertSize(t, 0)
	for _, o := range res.Outcomes {
		if o.Err != nil {
			t.Fatalf("installation %s: %v", o.Installation, o.Err)
		}
	}
	return wh, res
}
