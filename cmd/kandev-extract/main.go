// Command kandev-extract turns Kandev stores into an analytics warehouse:
// Parquet files plus a DuckDB database whose views carry Kandev's disclosure
// rules. It wires the pipeline together; the ETL lives in the packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// goMemoryLimit is the Go heap's soft limit when GOMEMLIMIT is not set:
// without it the collector lets the heap grow to twice what is live
// before collecting, and the run's peak RSS follows. Measured
// (docs/benchmarks.md): on large, GOMEMLIMIT=off peaks 45 % higher and
// 256 MiB 31 % higher, past the 256 MiB target, for no wall time gained
// (+1 %, 0 %). A run whose live heap exceeds it still completes: the
// collector works harder, it does not fail. GOMEMLIMIT overrides it
// (GOMEMLIMIT=off removes it).
const goMemoryLimit = 160 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(goMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError carries a specific exit code (documented in the README).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1  // a run or command failed
	exitUsage   = 2  // bad flags or arguments
	exitLocked  = 75 // another run holds the warehouse (EX_TEMPFAIL)
)

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "kandev-extract:", termSafeLines(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "kandev-extract:", termSafeLines(err.Error()))
	return exitFailure
}
