package pipeline

import (
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// What a run is given (Options, Installation) and what it returns
// (Result, Outcome, Stages).

// Installation is one Kandev store to extract.
type Installation struct {
	Name   string // stable id: becomes installation_id
	Source string // SQLite path or PostgreSQL DSN
	// ConnectTimeout and StallTimeout bound a PostgreSQL source (0 =
	// extract's defaults); see extract.OpenOptions.
	ConnectTimeout, StallTimeout time.Duration
	// Rebind binds the installation name to this run's source even when
	// it is bound to another one (load.CheckBinding).
	Rebind bool
	// AcknowledgeKeyChange acknowledges the activation key changes earlier
	// runs recorded (load.KeyChange): their alarm ends, and a warning
	// disclosure says so at every later run.
	AcknowledgeKeyChange bool
}

// openOptions are the source options of an installation.
func (in Installation) openOptions() extract.OpenOptions {
	return extract.OpenOptions{ConnectTimeout: in.ConnectTimeout, StallTimeout: in.StallTimeout}
}

// Options configure a run.
type Options struct {
	Warehouse     string
	Installations []Installation
	Logger        *slog.Logger
	// Allocator is the Arrow allocator of the record batches (nil:
	// load.Buffers, which hands a written batch's buffers to the next;
	// tests pass a checked one).
	Allocator memory.Allocator
	// Now is the clock (tests pin it).
	Now func() time.Time
	// Retention keeps this many committed runs per installation (0 = all).
	Retention int
	// StaleAfter is the age beyond which an installation's current data is
	// disclosed as stale (0 = load.DefaultStaleAfter).
	StaleAfter time.Duration
	// FullRebuild builds warehouse.duckdb from every retained run's files
	// even when the previous build could be updated (load.RebuildOptions).
	FullRebuild bool
	// WaitLock is how long to wait for another run's warehouse lock
	// (0 = fail at once with load.ErrLocked).
	WaitLock time.Duration
	// BatchRows is how many rows each table's Arrow record batch holds
	// before it is written as one Parquet row group (0 = DefaultBatchRows).
	// It bounds the memory a run needs: a table's batch is held in Arrow
	// builders until it is written.
	BatchRows int
	// Progress, when set, is called as rows stream (with 0 as each
	// table's scan begins, every ProgressEvery rows, and at its end).
	Progress func(installation, table string, rows int64)
	// Phase, when set, is called as each named phase begins (Phase*
	// constants): per installation, then with installation "" for the
	// warehouse's own phases (rebuild, prune).
	Phase func(installation, phase string)

	// For tests: read on one connection, as when extract.Fork cannot fork
	// (oneReader); scan with a plan that proves nothing, every count in SQL
	// as before the scan plan (unproven).
	oneReader, unproven bool
}

// The phases Options.Phase names, besides the table scans Progress reports.
const (
	PhaseOpen      = "open"      // opening the source and its snapshot
	PhaseHealth    = "health"    // the message pass (writer health, message evidence); with a second reader, waiting for it
	PhaseDeletions = "deletions" // comparing row ids with the previous run
	PhaseWrite     = "write"     // finishing and closing the Parquet files
	PhasePublish   = "publish"   // the commit: files moved, manifest written
	PhaseRebuild   = "rebuild"   // warehouse.duckdb rebuilt (installation "")
	PhasePrune     = "prune"     // retention (installation "")
)

func (o Options) phase(installation, phase string) {
	if o.Phase != nil {
		o.Phase(installation, phase)
	}
}

// DefaultBatchRows is the rows per record batch and Parquet row group when
// Options.BatchRows is 0. A fact batch of 16Ki rows is about 9 MB of Arrow
// buffers. Peak RSS on the 1M-row benchmark store was 344-408 MiB with
// 128Ki-row batches (transform.DefaultBatchRows), 231 MiB with 32Ki and
// 185-216 MiB with 16Ki, for some more Parquet encoding time on the
// transformer goroutine, which has time to spare (docs/benchmarks.md).
const DefaultBatchRows = 16 * 1024

// ProgressEvery is how many rows pass between progress calls.
const ProgressEvery = 25_000

// Outcome is one installation's result in a run.
type Outcome struct {
	Installation string
	RunID        string
	Err          error
	Manifest     models.Manifest
	Facts        transform.Facts
	Disclosures  []transform.Disclosure
	Stages       Stages
}

// Stages is where one installation's run spent its time. The source is
// read on one goroutine while another transforms and writes Parquet, so
// on two cores the stages add up to more than Wall. Each is elapsed time
// on its goroutine (on a busy machine it includes time spent waiting for
// a core).
type Stages struct {
	// Extract is the table scans' SQL on the reader goroutine (time spent
	// waiting for the transformer to catch up is in ReaderWait instead).
	Extract    time.Duration
	ReaderWait time.Duration
	// Transform is conversion and classification into Arrow builders.
	Transform time.Duration
	// Parquet is encoding, compressing and writing row groups, and the
	// files' durable close.
	Parquet time.Duration
	// Health is the writer-health query (it overlaps the transformer's
	// tail).
	Health time.Duration
	// Publish is the commit: files moved into place, manifest written.
	Publish time.Duration
	Wall    time.Duration
}

// Result is a whole run.
type Result struct {
	RunID    string
	Outcomes []Outcome
	Duration time.Duration
	// DuckDB is the time spent rebuilding warehouse.duckdb.
	DuckDB time.Duration
	// Rebuild says how warehouse.duckdb was rebuilt.
	Rebuild RebuildSummary
	// MemoryRetry says why warehouse.duckdb was built a second time with
	// a larger memory limit ("" when it was not).
	MemoryRetry string
	// Problems are the manifests the warehouse does not serve (quarantined,
	// refused, or a committed run whose files failed verification).
	Problems []load.ManifestProblem
	// Analyst is what happened to objects analysts had created in
	// warehouse.duckdb.
	Analyst load.Carried
	// Pending is what waits because another process held a file open
	// (Windows): the new database, current/ files, leftovers. Not a
	// failure: the data is committed, and a later command finishes it.
	Pending load.Pending
	// NotRebuilt is set when warehouse.duckdb could not be rebuilt after
	// the installations' runs were recorded: their committed data is on
	// disk, the database still serves what it did, and the next run
	// rebuilds it (Run then returns a *RebuildError).
	NotRebuilt *RebuildError
}

// RebuildError is a rebuild of warehouse.duckdb that failed after the
// run's manifests were written.
type RebuildError struct {
	Err error
	// Serves is the run warehouse.duckdb still serves per installation
	// (current/_manifest.json; none for an installation it never served).
	Serves map[string]string
	// Journaled says the failure is in _attempts.journal, for status.
	Journaled bool
}

func (e *RebuildError) Error() string { return "rebuild warehouse.duckdb: " + e.Err.Error() }

func (e *RebuildError) Unwrap() error { return e.Err }

// Committed says, for an installation whose run committed, what the
// failed rebuild means for it.
func (e *RebuildError) Committed(installation string) string {
	serves := "no run of it"
	if r := e.Serves[installation]; r != "" {
		serves = "run " + r
	}
	return "run committed; warehouse.duckdb still serves " + serves + "; will rebuild next run"
}

// Failed reports whether any installation failed.
func (r Result) Failed() bool {
	for _, o := range r.Outcomes {
		if o.Err != nil {
			return true
		}
	}
	return false
}

func (s Stages) log(log *slog.Logger) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	log.Info("stage timings", "wall_ms", ms(s.Wall), "extract_ms", ms(s.Extract), "reader_wait_ms", ms(s.ReaderWait),
		"transform_ms", ms(s.Transform), "parquet_ms", ms(s.Parquet), "health_ms", ms(s.Health), "publish_ms", ms(s.Publish))
}

// RebuildSummary says how warehouse.duckdb was rebuilt: the previous build
// updated (Added runs inserted, Removed runs deleted), or built in full from
// every retained run's files, and why.
type RebuildSummary struct {
	Updated        bool
	Added, Removed int
	FullReason     string
	// FromTemplate: a first build started from the built-in empty
	// warehouse (its views and comments kept when ViewsKept).
	FromTemplate bool
	// ViewsKept: the update kept the previous build's views and comments.
	ViewsKept bool
}
