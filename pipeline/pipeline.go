// Package pipeline wires one extraction: extract a consistent snapshot,
// transform and classify it, write the run's Parquet files, publish them
// atomically and rebuild the DuckDB views. Commands call it; it holds the
// order of the stages and nothing else.
package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// Version is the extractor's version, set at build time with -ldflags -X.
var Version = "dev"

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
	// Allocator is the Arrow allocator (tests pass a checked one).
	Allocator memory.Allocator
	// Now is the clock (tests pin it).
	Now func() time.Time
	// Retention keeps this many committed runs per installation (0 = all).
	Retention int
	// StaleAfter is the age beyond which an installation's current data is
	// disclosed as stale (0 = load.DefaultStaleAfter).
	StaleAfter time.Duration
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

// NewRunID returns a sortable, unique run id: UTC time plus randomness.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Run extracts every installation into the warehouse, then rebuilds the
// DuckDB views. One failing installation does not stop the others; its
// previous data stays current and its failure is recorded.
func Run(ctx context.Context, opts Options) (Result, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Allocator == nil {
		opts.Allocator = memory.DefaultAllocator
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if len(opts.Installations) == 0 {
		return Result{}, errors.New("no installation to extract")
	}
	seen := map[string]bool{}
	for _, in := range opts.Installations {
		if err := load.ValidName(in.Name); err != nil {
			return Result{}, err
		}
		if seen[strings.ToLower(in.Name)] {
			return Result{}, fmt.Errorf("installation %q is configured twice (names that differ only in case are one directory on macOS and Windows)", in.Name)
		}
		seen[strings.ToLower(in.Name)] = true
	}
	start := opts.Now()
	wh, err := load.OpenWarehouseWait(ctx, opts.Warehouse, opts.WaitLock)
	if err != nil {
		return Result{}, err
	}
	defer wh.Close()
	for _, n := range wh.Settled.Notes() {
		opts.Logger.Warn(n)
	}
	for _, in := range opts.Installations {
		if other := wh.CaseTwin(in.Name); other != "" {
			return Result{}, fmt.Errorf("installation %q: %w: it differs only in case from the installation %q this warehouse already holds, "+
				"and macOS and Windows would store both in one directory; choose another name", in.Name, load.ErrSourceChanged, other)
		}
	}
	res := Result{RunID: NewRunID(start)}
	for _, in := range opts.Installations {
		log := opts.Logger.With("installation", in.Name, "run_id", res.RunID)
		out := extractOne(ctx, wh, res.RunID, in, opts, log)
		if out.Err != nil {
			log.Error("installation failed", "err", out.Err)
		}
		res.Outcomes = append(res.Outcomes, out)
		if ctx.Err() != nil {
			break
		}
	}
	// Finish cleanly even when interrupted: the runs table must show what
	// happened, so the rebuild and retention get their own deadline.
	finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	opts.phase("", PhaseRebuild)
	t0 := time.Now()
	built, err := wh.Rebuild(finish, opts.Retention, opts.StaleAfter)
	res.DuckDB = time.Since(t0)
	res.Problems = built.Problems
	for _, p := range built.Problems {
		opts.Logger.Error("run not served", "installation", p.Installation, "run_id", p.Run, "manifest", p.Path,
			"action", p.Action, "reason", p.Reason)
	}
	res.Analyst = built.Analyst
	if len(built.Analyst.Objects) > 0 {
		opts.Logger.Info("analyst objects carried into the new warehouse.duckdb", "objects", strings.Join(built.Analyst.Objects, ", "))
	}
	if len(built.Analyst.Lost) > 0 {
		opts.Logger.Warn("analyst objects not carried into the new warehouse.duckdb; the old file is kept",
			"copy", built.Analyst.Preserved, "objects", strings.Join(built.Analyst.Lost, "; "))
	}
	if err != nil {
		return res, fmt.Errorf("rebuild warehouse.duckdb: %w", err)
	}
	res.Pending = built.Pending
	if built.Pending.Database == "" {
		opts.Logger.Info("warehouse.duckdb rebuilt", "run_id", res.RunID, "elapsed_ms", res.DuckDB.Milliseconds())
	}
	// Retention last: the database now in place holds its own data, so no
	// instant exists at which it references a pruned file.
	opts.phase("", PhasePrune)
	if n, err := wh.Prune(built.Expired); err != nil {
		opts.Logger.Error("retention failed; older runs kept", "err", err)
	} else if n > 0 {
		opts.Logger.Info("retention removed old runs", "runs", n, "keep", opts.Retention)
	}
	// What another process holds open (Windows) waits: not a failure.
	res.Pending.Leftovers = wh.Leftovers()
	for _, m := range res.Pending.Messages() {
		opts.Logger.Warn(m)
	}
	res.Duration = opts.Now().Sub(start)
	if ctx.Err() != nil {
		return res, fmt.Errorf("run interrupted: %w", context.Cause(ctx))
	}
	return res, nil
}

// extractOne runs one installation and records its manifest, committed or
// failed.
func extractOne(ctx context.Context, wh *load.Warehouse, runID string, in Installation, opts Options, log *slog.Logger) Outcome {
	started := opts.Now()
	out := Outcome{Installation: in.Name, RunID: runID}
	stage, err := wh.Stage(in.Name, runID)
	if err == nil {
		var prov *models.Provenance
		wall := time.Now()
		var binding *load.Binding
		prov, out.Facts, out.Disclosures, binding, err = writeRun(ctx, wh, stage, runID, in, opts, log, &out.Stages)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		var m models.Manifest
		if err == nil {
			load.CrashPoint("staged")
			m = models.Manifest{RunID: runID, InstallationID: in.Name, Status: models.RunCommitted,
				StartedAt: started.UTC(), FinishedAt: opts.Now().UTC(), Provenance: prov}
			m.CommitSeq, err = wh.NextCommitSeq(in.Name)
		}
		if err == nil {
			m.DurationMS = m.FinishedAt.Sub(m.StartedAt).Milliseconds()
			opts.phase(in.Name, PhasePublish)
			t0 := time.Now()
			// The binding goes first: a crash between it and the manifest
			// makes the next run from the old source ask for --rebind,
			// never lets a committed run from another store pass unbound.
			var restore func()
			if restore, err = wh.SaveBindingUndoable(binding); err != nil {
				err = fmt.Errorf("save the installation's source binding: %w", err)
			} else if err = stage.Commit(m); err != nil {
				restore()
			}
			if err == nil {
				out.Stages.Publish = time.Since(t0)
				out.Stages.Wall = time.Since(wall)
				out.Manifest = m
				log.Info("run committed", "subagent_rows", prov.Tables[transform.TableFact].RowsWritten,
					"duration", (time.Duration(m.DurationMS) * time.Millisecond).String())
				out.Stages.log(log)
				return out
			}
		}
		stage.Discard()
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("interrupted (%v); the previous data stays current: %w", context.Cause(ctx), err)
	}
	out.Err = err
	m := models.Manifest{RunID: runID, InstallationID: in.Name, Status: models.RunFailed, Error: err.Error(),
		StartedAt: started.UTC(), FinishedAt: opts.Now().UTC()}
	m.DurationMS = m.FinishedAt.Sub(m.StartedAt).Milliseconds()
	if load.ValidName(in.Name) == nil {
		seq, werr := wh.NextCommitSeq(in.Name)
		m.CommitSeq = seq
		if werr == nil {
			werr = wh.WriteManifest(m)
		}
		if werr != nil {
			log.Error("could not record the failure", "err", werr)
		}
	}
	out.Manifest = m
	return out
}

func (s Stages) log(log *slog.Logger) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	log.Info("stage timings", "wall_ms", ms(s.Wall), "extract_ms", ms(s.Extract), "reader_wait_ms", ms(s.ReaderWait),
		"transform_ms", ms(s.Transform), "parquet_ms", ms(s.Parquet), "health_ms", ms(s.Health), "publish_ms", ms(s.Publish))
}

// output is one table being written in a run.
type output struct {
	table  string
	source string
	file   *load.ParquetFile
	b      *transform.Builder
}

// timedSink is a table's Parquet file, timing the writes (they run on the
// transformer goroutine, then on the caller's once it has finished).
type timedSink struct {
	f       *load.ParquetFile
	elapsed *time.Duration
}

func (t timedSink) Write(rec arrow.RecordBatch) error {
	t0 := time.Now()
	err := t.f.Write(rec)
	*t.elapsed += time.Since(t0)
	return err
}

// Overlap of reading and transforming. The reader goroutines (the
// caller's, and a second one on a fork pinned to the same snapshot, see
// writeRun) read the ONE consistent snapshot and copy each row into a
// batch; another goroutine transforms the batches in the order they are
// sent and writes the Parquet row groups. A fixed pool of batches bounds
// what is in flight (backpressure: a reader waits for a free batch), so
// memory does not grow with the data.
const (
	rowsPerBatch    = 512
	batchesInFlight = 8
)

// rowBatch is a run of source rows of one table, or (end set) the marker
// that the table is complete.
type rowBatch struct {
	rows, width int
	cells       []any
	apply       func([]any) error
	end         func() error
}

func (b *rowBatch) run() error {
	if b.end != nil {
		return b.end()
	}
	w := b.width
	for i := 0; i < b.rows; i++ {
		if err := b.apply(b.cells[i*w : (i+1)*w : (i+1)*w]); err != nil {
			return err
		}
	}
	return nil
}

// errTransformerStopped tells the reader to stop: the transformer failed
// (its error is the one reported).
var errTransformerStopped = errors.New("transformer stopped")

type overlap struct {
	work, free chan *rowBatch
	failed     chan struct{} // closed when the transformer stops on an error
	done       chan struct{} // closed when the transformer goroutine exits
	cancel     context.CancelCauseFunc
	err        error         // the transformer's error; read after done
	busy       time.Duration // the transformer's working time; read after done
	mu         sync.Mutex    // guards wait (two readers may wait at once)
	wait       time.Duration // the readers' time waiting for a free batch
	finished   bool
}

// startOverlap starts the transformer goroutine. The returned context is
// cancelled when the transformer fails, so the reader's query stops early.
func startOverlap(ctx context.Context) (*overlap, context.Context) {
	rctx, cancel := context.WithCancelCause(ctx)
	o := &overlap{
		work: make(chan *rowBatch, batchesInFlight), free: make(chan *rowBatch, batchesInFlight),
		failed: make(chan struct{}), done: make(chan struct{}), cancel: cancel,
	}
	for range batchesInFlight {
		o.free <- &rowBatch{}
	}
	go o.loop()
	return o, rctx
}

func (o *overlap) loop() {
	defer close(o.done)
	for b := range o.work {
		if o.err == nil {
			t0 := time.Now()
			o.err = b.run()
			o.busy += time.Since(t0)
			if o.err != nil {
				close(o.failed)
				o.cancel(errTransformerStopped)
			}
		}
		clear(b.cells) // drop references to the rows' strings
		*b = rowBatch{cells: b.cells[:0]}
		o.free <- b
	}
}

// get returns a free batch, waiting while all are in flight.
func (o *overlap) get() (*rowBatch, error) {
	select {
	case b := <-o.free:
		return b, nil
	default:
	}
	t0 := time.Now()
	defer func() {
		o.mu.Lock()
		o.wait += time.Since(t0)
		o.mu.Unlock()
	}()
	select {
	case b := <-o.free:
		return b, nil
	case <-o.failed:
		return nil, errTransformerStopped
	}
}

// send hands a batch to the transformer (never blocks: the work queue
// holds every batch there is).
func (o *overlap) send(b *rowBatch) error {
	select {
	case o.work <- b:
		return nil
	case <-o.failed:
		return errTransformerStopped
	}
}

// finish waits for the transformer to drain the queue and returns its
// error. It is idempotent.
func (o *overlap) finish() error {
	if !o.finished {
		o.finished = true
		close(o.work)
		<-o.done
		o.cancel(nil)
	}
	return o.err
}

func writeRun(ctx context.Context, wh *load.Warehouse, stage *load.Staging, runID string, in Installation, opts Options, log *slog.Logger, stages *Stages) (*models.Provenance, transform.Facts, []transform.Disclosure, *load.Binding, error) {
	var facts transform.Facts
	opts.phase(in.Name, PhaseOpen)
	src, err := extract.OpenWith(ctx, in.Source, in.openOptions())
	if err != nil {
		return nil, facts, nil, nil, err
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return nil, facts, nil, nil, err
	}
	defer snap.Close()

	meta, err := snap.Meta(ctx)
	if err != nil {
		return nil, facts, nil, nil, err
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		return nil, facts, nil, nil, err
	}
	state := transform.Installation(meta, transform.Shape(schema))
	identity := load.SourceIdentity{Dialect: string(src.Dialect()), Location: src.Location(), Fingerprint: fingerprint(meta)}
	across, err := compareAcrossRuns(wh, in, runID, opts.Now(), identity, state)
	if err != nil {
		return nil, facts, nil, nil, err
	}
	featurePresent := state.Shape != models.ShapeAbsent
	log.Info("snapshot open", "source", src.Location(), "activation_state", state.Activation, "table_shape", state.Shape)

	outs := map[string]*output{}
	var order []*output
	defer func() {
		for _, o := range order {
			if o.b != nil {
				o.b.Release()
			}
		}
	}()
	open := func(table, source string, schema *arrow.Schema) (*output, error) {
		f, err := load.CreateParquet(stage.Path(table), schema, "kandev-extract "+ExtractorVersion())
		if err != nil {
			return nil, err
		}
		o := &output{table: table, source: source, file: f}
		o.b = transform.NewBuilder(opts.Allocator, schema, timedSink{f, &stages.Parquet})
		o.b.BatchRows = opts.BatchRows
		outs[table] = o
		order = append(order, o)
		return o, nil
	}
	specs := []struct {
		table, source string
		schema        *arrow.Schema
	}{
		{transform.TableFact, "task_session_subagents", transform.FactSchema},
		{transform.TableSession, "task_sessions", transform.SessionSchema},
		{transform.TableTurn, "task_session_turns", transform.TurnSchema},
		{transform.TableTask, "tasks", transform.TaskSchema},
		{transform.TableWorkflow, "workflows", transform.WorkflowSchema},
		{transform.TableWorkflowStep, "workflow_steps", transform.WorkflowStepSchema},
		{transform.TableInstallation, "kandev_meta", transform.InstallationSchema},
		{transform.TableWriterHealth, "task_session_messages", transform.HealthSchema},
		{transform.TableShortfall, "task_session_messages", transform.ShortfallSchema},
		{transform.TableDisclosures, "", transform.DisclosureSchema},
		{transform.TableRejects, "", transform.RejectsSchema},
	}
	for _, s := range specs {
		if _, err := open(s.table, s.source, s.schema); err != nil {
			abort(order)
			return nil, facts, nil, nil, err
		}
	}
	fail := func(err error) (*models.Provenance, transform.Facts, []transform.Disclosure, *load.Binding, error) {
		abort(order)
		return nil, facts, nil, nil, err
	}

	tctx := &transform.Context{Installation: in.Name, Run: runID, Class: transform.Classifier{State: state}}
	rejects := transform.NewRejects(tctx, outs[transform.TableRejects].b)
	if err := rejects.MetaText(meta); err != nil {
		return fail(err)
	}
	subagents := transform.NewSubagents(tctx, outs[transform.TableFact].b)
	sessions := transform.NewSessions(tctx, outs[transform.TableSession].b)
	turns := transform.NewTurns(tctx, outs[transform.TableTurn].b)
	tasks := transform.NewTasks(tctx, outs[transform.TableTask].b)
	workflows := transform.NewWorkflows(tctx, outs[transform.TableWorkflow].b)
	steps := transform.NewWorkflowSteps(tctx, outs[transform.TableWorkflowStep].b)

	// The reader (this goroutine) scans every table, then evaluates writer
	// health while the transformer finishes; see overlap.
	ov, rctx := startOverlap(ctx)
	defer ov.finish()
	ids := map[string]*idSet{}
	for t := range trackedIDs {
		ids[t] = &idSet{}
	}
	// read scans one table of a snapshot into batches for the transformer.
	// Two readers may run it at once (see the second reader below): its
	// accounting and the progress callback are serialized.
	var acct sync.Mutex
	progress := func(table string, n int64) {
		if opts.Progress != nil {
			acct.Lock()
			opts.Progress(in.Name, table, n)
			acct.Unlock()
		}
	}
	read := func(ctx context.Context, from models.Snapshot, table string, spec models.TableSpec, appendRow func([]any) error) error {
		t0 := time.Now()
		var (
			n      int64
			cur    *rowBatch
			waited time.Duration
		)
		get := func() (*rowBatch, error) {
			t := time.Now()
			b, err := ov.get()
			waited += time.Since(t)
			return b, err
		}
		idSet, idCol := ids[table], spec.Column("id")
		progress(table, 0) // the table's scan begins
		err := from.Scan(ctx, spec, func(row []any) error {
			if idSet != nil && idCol >= 0 {
				idSet.add(row[idCol])
			}
			if cur == nil {
				b, err := get()
				if err != nil {
					return err
				}
				cur, b.apply, b.width = b, appendRow, len(row)
			}
			cur.cells = append(cur.cells, row...)
			cur.rows++
			n++
			if n%ProgressEvery == 0 {
				progress(table, n)
			}
			if cur.rows == rowsPerBatch {
				b := cur
				cur = nil
				return ov.send(b)
			}
			return nil
		})
		if err == nil && cur != nil {
			err = ov.send(cur)
		}
		if err != nil {
			return err
		}
		progress(table, n)
		end, err := get()
		if err != nil {
			return err
		}
		end.end = func() error {
			if err := outs[table].b.Flush(); err != nil {
				return err
			}
			log.Info("table read", "table", spec.Name, "rows", outs[table].b.Rows(), "elapsed", time.Since(t0).Round(time.Millisecond).String())
			return nil
		}
		acct.Lock()
		stages.Extract += time.Since(t0) - waited
		acct.Unlock()
		return ov.send(end)
	}
	var (
		health   models.Health
		evidence extract.MessageEvidence
	)
	// A second reader pinned to the same snapshot (extract.Fork: its own
	// connection, the same state) reads the messages — the message
	// evidence and writer health, in one pass (extract.ReadMessages) — and
	// then task_sessions, while this one scans task_session_subagents and
	// the other tables. dim_session depends on the message evidence only,
	// so its batches may reach the transformer between the fact's; dim_turn
	// also needs the fact transformed first (rows that no turn can place),
	// so it is read here, after the fact. Without a second reader
	// (extract.Fork says why) everything is read here, in turn.
	fork, why, err := extract.Fork(rctx, snap)
	if err != nil {
		return fail(err)
	}
	if fork != nil {
		defer fork.Close()
	} else {
		log.Info("one reader", "why", why)
	}
	readAll := func() error {
		// Messages bound fan-out from below, per turn and session; their
		// evidence is read before sessions and turns, whose classification
		// uses it.
		var since, healthSince *time.Time
		if state.CaptureSince.Valid() {
			at := state.CaptureSince.At
			since = &at
		}
		runHealth, verdict := transform.HealthPlan(state)
		if runHealth {
			at := state.CaptureSince.At
			healthSince = &at
		}
		var messagesTime time.Duration
		readMessages := func(ctx context.Context, from models.Snapshot) error {
			t0 := time.Now()
			defer func() { messagesTime = time.Since(t0) }()
			ev, counts, err := extract.ReadMessages(ctx, from, since, featurePresent, healthSince)
			if err != nil {
				return err
			}
			evidence, health = ev, verdict
			if runHealth {
				health = transform.HealthVerdict(state, *counts)
			}
			return nil
		}
		sessionsSpec := transform.SessionSpec(featurePresent)
		var (
			forkDone = make(chan struct{})
			forkErr  error
			waited   time.Duration
		)
		fctx, stopFork := context.WithCancel(rctx)
		defer stopFork()
		if fork != nil {
			go func() {
				defer close(forkDone)
				if forkErr = readMessages(fctx, fork); forkErr != nil {
					return
				}
				tctx.SessionEvidence = evidence.Sessions
				tctx.ShortfallMeasured = featurePresent && since != nil
				forkErr = read(fctx, fork, transform.TableSession, sessionsSpec, sessions.Append)
			}()
		}
		// The second reader is done before this returns (and before the
		// fork is closed), whatever happens here.
		join := func(err error) error {
			if fork == nil {
				return err
			}
			if err != nil {
				stopFork()
			}
			t0 := time.Now()
			<-forkDone
			waited += time.Since(t0)
			if err == nil {
				err = forkErr
			}
			return err
		}
		if featurePresent {
			if err := read(rctx, snap, transform.TableFact, transform.SubagentSpec(), subagents.Append); err != nil {
				return join(err)
			}
		}
		if fork == nil {
			opts.phase(in.Name, PhaseHealth)
			if err := readMessages(rctx, snap); err != nil {
				return err
			}
			tctx.SessionEvidence = evidence.Sessions
			tctx.ShortfallMeasured = featurePresent && since != nil
			if err := read(rctx, snap, transform.TableSession, sessionsSpec, sessions.Append); err != nil {
				return err
			}
		} else {
			// The fact is read; what is left of the second reader's work
			// (the message pass, then task_sessions) is what this waits for.
			opts.phase(in.Name, PhaseHealth)
			if err := join(nil); err != nil {
				return err
			}
			log.Info("second reader", "messages_ms", messagesTime.Milliseconds(), "waited_for_ms", waited.Milliseconds())
		}
		stages.Health += messagesTime
		tctx.TurnEvidence = evidence.Turns
		for _, r := range []struct {
			table string
			spec  models.TableSpec
			fn    func([]any) error
		}{
			{transform.TableTurn, transform.TurnSpec(featurePresent), turns.Append},
			{transform.TableTask, transform.TaskSpec(), tasks.Append},
			{transform.TableWorkflow, transform.WorkflowSpec(), workflows.Append},
			{transform.TableWorkflowStep, transform.WorkflowStepSpec(), steps.Append},
		} {
			if err := read(rctx, snap, r.table, r.spec, r.fn); err != nil {
				return err
			}
		}
		return nil
	}
	readErr := readAll()
	// The transformer's error comes first: it concerns rows read before
	// whatever stopped the reader.
	if err := ov.finish(); err != nil {
		return fail(err)
	}
	// Until now only the transformer wrote Parquet row groups.
	stages.Transform = ov.busy - stages.Parquet
	stages.ReaderWait = ov.wait
	if readErr != nil {
		return fail(readErr)
	}
	// What the readers and the transformer held (the message pass's keys,
	// the per-turn and per-session evidence, the batches' garbage) goes back
	// to the system before the deletion comparison and the DuckDB rebuild
	// allocate theirs: on the 1M-row store the rebuild's peak RSS drops by
	// ~130 MiB (docs/benchmarks.md, Peak RSS), for one collection.
	tctx.TurnEvidence, tctx.SessionEvidence = nil, nil
	evidence.Turns, evidence.Sessions = nil, nil
	debug.FreeOSMemory()
	log.Info("writer health", "status", health.Status, "shortfall", health.Counts.Shortfall, "excess", health.Counts.Excess)
	if err := transform.WriteHealth(tctx, outs[transform.TableWriterHealth].b, snap.At(), health); err != nil {
		return fail(err)
	}
	if err := transform.WriteShortfall(tctx, outs[transform.TableShortfall].b, evidence.Missing); err != nil {
		return fail(err)
	}

	for _, set := range ids {
		set.seal()
	}
	opts.phase(in.Name, PhaseDeletions)
	del, err := detectDeletions(ctx, wh.Dir, across.previous, across.reboundNow, ids)
	if err != nil {
		return fail(err)
	}
	defer del.close()
	ids = nil // the hashes are no longer needed
	opts.phase(in.Name, PhaseWrite)

	facts = transform.Facts{State: state, Subagent: subagents.Stats, Sessions: sessions.Stats, Turns: turns.Stats,
		Tasks: tasks.Stats, Workflows: workflows.Stats, Steps: steps.Stats,
		Rejected: rejects.Count, RejRows: rejects.Rows, Health: health}
	disclosures := append(append(transform.Disclose(facts), across.disclosures...), del.disclosures()...)
	if err := transform.WriteDisclosures(tctx, outs[transform.TableDisclosures].b, disclosures); err != nil {
		return fail(err)
	}
	if err := transform.WriteInstallation(tctx, outs[transform.TableInstallation].b, transform.InstallationRow{
		SnapshotAt: snap.At(), Dialect: src.Dialect(), Location: src.Location(), ExtractorVersion: ExtractorVersion(), Facts: facts,
	}); err != nil {
		return fail(err)
	}
	for _, o := range order {
		if err := o.b.Flush(); err != nil {
			return fail(err)
		}
	}

	highWater := map[string]struct {
		col string
		at  time.Time
	}{
		transform.TableFact:         {"updated_at", subagents.Stats.MaxUpdated},
		transform.TableSession:      {"updated_at", sessions.Stats.MaxUpdated},
		transform.TableTurn:         {"updated_at", turns.Stats.MaxUpdated},
		transform.TableTask:         {"updated_at", tasks.Stats.MaxUpdated},
		transform.TableWorkflow:     {"updated_at", workflows.Stats.MaxUpdated},
		transform.TableWorkflowStep: {"updated_at", steps.Stats.MaxUpdated},
	}
	prov := &models.Provenance{
		Format: models.ProvenanceFormat, Version: models.DocumentVersion,
		RunID: runID, InstallationID: in.Name,
		SourceDialect: src.Dialect(), SourceLocation: src.Location(), SourceFingerprint: identity.Fingerprint,
		KandevVersion: state.KandevVersion, SnapshotAt: snap.At(),
		ExtractorVersion: ExtractorVersion(), SchemaVersion: models.SchemaVersion,
		RawKeys: map[string]*string{
			models.KeyCaptureSince:    state.CaptureSince.Raw,
			models.KeyBackfillThrough: state.BackfillThrough.Raw,
			models.KeyExecutionSince:  state.ExecutionSince.Raw,
		},
		TableShape: state.Shape, ActivationState: state.Activation,
		Tables:         map[string]models.TableProvenance{},
		RejectedValues: rejects.Count, QuarantinedRows: rejects.Rows,
		RejectsByAction: rejects.ByAction(),
	}
	for _, o := range order {
		tp := models.TableProvenance{SourceTable: o.source, RowsWritten: o.file.Rows}
		switch o.table {
		case transform.TableFact:
			tp.RowsRead = o.file.Rows + rejects.Rows
		case transform.TableInstallation:
			tp.RowsRead = models.MetaRowsRead(meta)
		case transform.TableWriterHealth:
			tp.RowsRead = evidence.MessagesRead
		case transform.TableShortfall:
			tp.RowsRead = 0
		case transform.TableDisclosures, transform.TableRejects:
			tp.RowsRead = 0
		default:
			tp.RowsRead = o.file.Rows
		}
		if hw, ok := highWater[o.table]; ok && !hw.at.IsZero() {
			at := hw.at
			tp.HighWaterColumn, tp.HighWater = hw.col, &at
		}
		prov.Tables[o.table] = tp
	}
	if del.skipped == "" {
		prov.ComparedWithRun = del.previous.RunID
		prov.Deleted = map[string]int64{}
		for _, a := range load.Archives {
			prov.Deleted[a.Archive] = del.deleted[a.Archive]
		}
	}
	for _, a := range load.Archives {
		prov.Tables[a.Archive] = models.TableProvenance{RowsWritten: del.archiveRows(a.Archive)}
	}
	doc, err := json.Marshal(prov)
	if err != nil {
		return fail(err)
	}
	meta2 := map[string]string{load.ProvenanceKey: string(doc)}
	t0 := time.Now()
	for i, o := range order {
		err := o.file.Close(meta2)
		o.file = nil
		if err != nil {
			abort(order[i+1:])
			return nil, facts, nil, nil, err
		}
	}
	for _, a := range load.Archives {
		src := del.sources[a.Archive]
		src.Current = stage.Path(a.Table)
		if err := stage.WriteArchive(ctx, del.conn, src, runID, string(doc)); err != nil {
			return nil, facts, nil, nil, err
		}
	}
	stages.Parquet += time.Since(t0)
	return prov, facts, disclosures, across.binding, nil
}

// evaluateHealth runs the writer-health comparison inside the snapshot, or
// returns the verdict that stands when it must not run.
func evaluateHealth(ctx context.Context, snap models.Snapshot, state models.InstallationState) (models.Health, error) {
	runIt, verdict := transform.HealthPlan(state)
	if !runIt {
		return verdict, nil
	}
	counts, err := extract.HealthCounts(ctx, snap, state.CaptureSince.At)
	if err != nil {
		return verdict, err
	}
	return transform.HealthVerdict(state, counts), nil
}

func abort(outs []*output) {
	for _, o := range outs {
		if o.file != nil {
			o.file.Abort()
		}
	}
}
