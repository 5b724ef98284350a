package e2e_test

// What the package's tests share: one warehouse built once for the
// read-only tests (removed by TestMain), the run helpers, and the helpers
// of internal/testkit under short names.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "modernc.org/sqlite"

	"github.com/kandev/kandev-extract/internal/pgfixture"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/pipeline"
)

// shared is one warehouse built once for the package's read-only tests:
// run 1 extracts "up" (upgraded-backfill.db: live + backfill rows) and
// "fresh" (fresh-activated.db); run 2 extracts "up" again, so history views
// have two runs of it.
var shared struct {
	once sync.Once
	dir  string
	err  error
	runs []string // run ids, in order
}

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

	pgFixture      = pgfixture.Load
	pgExec         = pgfixture.Exec
	pgRows         = pgfixture.Rows
	copyToPostgres = pgfixture.CopySQLite
)

// TestMain removes the shared warehouse once every test is done with it (it
// outlives the test that built it, so it is in no test's TempDir), and
// stops the shared PostgreSQL cluster (pgtest.Main's work).
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func sharedWarehouse(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "kandev-dictionary-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		wh := filepath.Join(dir, "warehouse")
		plan := [][]pipeline.Installation{
			{{Name: "up", Source: fixture(t, "upgraded-backfill.db")}, {Name: "fresh", Source: fixture(t, "fresh-activated.db")}},
			{{Name: "up", Source: fixture(t, "upgraded-backfill.db")}},
		}
		for i, ins := range plan {
			res, err := runPipeline(wh, ins, time.Date(2026, 9, 1+i, 2, 0, 0, 0, time.UTC))
			if err != nil {
				shared.err = err
				return
			}
			shared.runs = append(shared.runs, res.RunID)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return filepath.Join(shared.dir, "warehouse")
}

func runPipeline(wh string, ins []pipeline.Installation, now time.Time) (pipeline.Result, error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	res, err := pipeline.Run(context.Background(), pipeline.Options{
		Warehouse: wh, Installations: ins, Allocator: mem, Now: func() time.Time { return now },
	})
	if err != nil {
		return res, err
	}
	for _, o := range res.Outcomes {
		if o.Err != nil {
			return res, fmt.Errorf("installation %s: %w", o.Installation, o.Err)
		}
	}
	if n := mem.CurrentAlloc(); n != 0 {
		return res, fmt.Errorf("arrow memory leaked: %d bytes", n)
	}
	return res, nil
}

// extractTo runs the pipeline on one source into a fresh warehouse.
func extractTo(t *testing.T, source, installation string) (string, pipeline.Result) {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	res, err := runPipeline(wh, []pipeline.Installation{{Name: installation, Source: source}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return wh, res
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
func itoa(n int) string                      { return fmt.Sprint(n) }
