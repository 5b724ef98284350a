package pipeline

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/kandev/kandev-extract/load"
)

// While DuckDB works the Go heap's soft limit is lowered by DuckDB's
// limit, and restored after; no limit, or one too small to share, is left
// as it is. (Not parallel: it sets the process's limit.)
func TestShareMemoryWithDuckDB(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		limit, during int64
	}{
		{1 << 30, 1<<30 - load.DuckDBMemoryBytes},
		{160 << 20, 160<<20 - load.DuckDBMemoryBytes},
		{math.MaxInt64, math.MaxInt64},
		{100 << 20, 100 << 20},
	} {
		debug.SetMemoryLimit(c.limit)
		restore := shareMemoryWithDuckDB()
		if got := debug.SetMemoryLimit(-1); got != c.during {
			t.Errorf("limit %d: %d while DuckDB works, want %d", c.limit, got, c.during)
		}
		restore()
		if got := debug.SetMemoryLimit(-1); got != c.limit {
			t.Errorf("limit %d: %d after, want it restored", c.limit, got)
		}
	}
}
