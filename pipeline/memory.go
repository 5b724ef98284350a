package pipeline

import (
	"github.com/kandev/kandev-extract/internal/memlimit"
	"github.com/kandev/kandev-extract/load"
)

// shareMemoryWithDuckDB lowers the Go runtime's soft memory limit by
// DuckDB's memory limit for a phase in which DuckDB does the work (the
// deletion comparison and the archives, the rebuild), and returns what
// restores it. DuckDB's memory is outside the Go runtime's accounting:
// without this, the collector lets the Go heap refill to its limit with
// garbage while DuckDB takes its own beside it, and the two add up to the
// run's peak (296 MiB in the deletion phase of a nightly 1M-row run,
// docs/benchmarks.md). What the Go heap holds in those phases is small.
// Without a limit (GOMEMLIMIT=off), or with one too small to share, it
// changes nothing (internal/memlimit).
func shareMemoryWithDuckDB() (restore func()) {
	if !memlimit.Take(load.DuckDBMemoryBytes) {
		return func() {}
	}
	return func() { memlimit.Give(load.DuckDBMemoryBytes) }
}
