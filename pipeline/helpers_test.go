package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "modernc.org/sqlite"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// Shared helpers (internal/testkit).
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

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
func itoa(n int) string                      { return fmt.Sprint(n) }
