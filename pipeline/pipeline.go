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
	// WaitLock is how long to wait for another run's warehouse lock
	// (0 = fail at once with load.ErrLocked).
	WaitLock time.Duration
	// Progress, when set, is called as rows stream (every ProgressEvery
	// rows and at the end of each table).
	Progress func(installation, table string, rows int64)
}

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
}

// Result is a whole run.
type Result struct {
	RunID    string
	Outcomes []Outcome
	Duration time.Duration
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
	if len(opts.Installations) == 0 {
		return Result{}, errors.New("no installation to extract")
	}
	seen := map[string]bool{}
	for _, in := range opts.Installations {
		if err := load.ValidName(in.Name); err != nil {
			return Result{}, err
		}
		if seen[in.Name] {
			return Result{}, fmt.Errorf("installation %q is configured twice", in.Name)
		}
		seen[in.Name] = true
	}
	start := opts.Now()
	wh, err := load.OpenWarehouseWait(ctx, opts.Warehouse, opts.WaitLock)
	if err != nil {
		return Result{}, err
	}
	defer wh.Close()
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
	// happened, so retention and the rebuild get their own deadline.
	finish, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if n, err := wh.Prune(opts.Retention); err != nil {
		opts.Logger.Error("retention failed; older runs kept", "err", err)
	} else if n > 0 {
		opts.Logger.Info("retention removed old runs", "runs", n, "keep", opts.Retention)
	}
	if err := load.BuildDatabase(finish, wh.Dir); err != nil {
		return res, fmt.Errorf("rebuild DuckDB views: %w", err)
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
		prov, out.Facts, out.Disclosures, err = writeRun(ctx, stage, runID, in, opts, log)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err == nil {
			load.CrashPoint("staged")
			m := models.Manifest{RunID: runID, InstallationID: in.Name, Status: models.RunCommitted,
				StartedAt: started.UTC(), FinishedAt: opts.Now().UTC(), Provenance: prov}
			m.DurationMS = m.FinishedAt.Sub(m.StartedAt).Milliseconds()
			if err = stage.Commit(m); err == nil {
				out.Manifest = m
				log.Info("run committed", "subagent_rows", prov.Tables[transform.TableFact].RowsWritten,
					"duration", (time.Duration(m.DurationMS) * time.Millisecond).String())
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
		if werr := wh.WriteManifest(m); werr != nil {
			log.Error("could not record the failure", "err", werr)
		}
	}
	out.Manifest = m
	return out
}

// output is one table being written in a run.
type output struct {
	table  string
	source string
	file   *load.ParquetFile
	b      *transform.Builder
	hwCol  string
	hw     func() time.Time
}

func writeRun(ctx context.Context, stage *load.Staging, runID string, in Installation, opts Options, log *slog.Logger) (*models.Provenance, transform.Facts, []transform.Disclosure, error) {
	var facts transform.Facts
	src, err := extract.Open(ctx, in.Source)
	if err != nil {
		return nil, facts, nil, err
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return nil, facts, nil, err
	}
	defer snap.Close()

	meta, err := snap.Meta(ctx)
	if err != nil {
		return nil, facts, nil, err
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		return nil, facts, nil, err
	}
	state := transform.Installation(meta, transform.Shape(schema))
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
		f, err := load.CreateParquet(stage.Path(table), schema, "kandev-extract "+Version)
		if err != nil {
			return nil, err
		}
		o := &output{table: table, source: source, file: f}
		o.b = transform.NewBuilder(opts.Allocator, schema, f)
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
		{transform.TableDisclosures, "", transform.DisclosureSchema},
		{transform.TableRejects, "", transform.RejectsSchema},
	}
	for _, s := range specs {
		if _, err := open(s.table, s.source, s.schema); err != nil {
			abort(order)
			return nil, facts, nil, err
		}
	}
	fail := func(err error) (*models.Provenance, transform.Facts, []transform.Disclosure, error) {
		abort(order)
		return nil, facts, nil, err
	}

	tctx := &transform.Context{Installation: in.Name, Run: runID, Class: transform.Classifier{State: state}}
	rejects := transform.NewRejects(tctx, outs[transform.TableRejects].b)
	subagents := transform.NewSubagents(tctx, outs[transform.TableFact].b)
	sessions := transform.NewSessions(tctx, outs[transform.TableSession].b)
	turns := transform.NewTurns(tctx, outs[transform.TableTurn].b)
	tasks := transform.NewTasks(tctx, outs[transform.TableTask].b)
	workflows := transform.NewWorkflows(tctx, outs[transform.TableWorkflow].b)
	steps := transform.NewWorkflowSteps(tctx, outs[transform.TableWorkflowStep].b)

	read := func(table string, spec models.TableSpec, appendRow func([]any) error) error {
		t0 := time.Now()
		var n int64
		progress := func(row []any) error {
			n++
			if opts.Progress != nil && n%ProgressEvery == 0 {
				opts.Progress(in.Name, table, n)
			}
			return appendRow(row)
		}
		if err := snap.Scan(ctx, spec, progress); err != nil {
			return err
		}
		if opts.Progress != nil {
			opts.Progress(in.Name, table, n)
		}
		if err := outs[table].b.Flush(); err != nil {
			return err
		}
		log.Info("table read", "table", spec.Name, "rows", outs[table].b.Rows(), "elapsed", time.Since(t0).Round(time.Millisecond).String())
		return nil
	}
	if featurePresent {
		if err := read(transform.TableFact, transform.SubagentSpec(), subagents.Append); err != nil {
			return fail(err)
		}
	}
	for _, r := range []struct {
		table string
		spec  models.TableSpec
		fn    func([]any) error
	}{
		{transform.TableSession, transform.SessionSpec(featurePresent), sessions.Append},
		{transform.TableTurn, transform.TurnSpec(featurePresent), turns.Append},
		{transform.TableTask, transform.TaskSpec(), tasks.Append},
		{transform.TableWorkflow, transform.WorkflowSpec(), workflows.Append},
		{transform.TableWorkflowStep, transform.WorkflowStepSpec(), steps.Append},
	} {
		if err := read(r.table, r.spec, r.fn); err != nil {
			return fail(err)
		}
	}

	health, err := evaluateHealth(ctx, snap, state)
	if err != nil {
		return fail(err)
	}
	log.Info("writer health", "status", health.Status, "shortfall", health.Counts.Shortfall, "excess", health.Counts.Excess)
	if err := transform.WriteHealth(tctx, outs[transform.TableWriterHealth].b, snap.At(), health); err != nil {
		return fail(err)
	}

	facts = transform.Facts{State: state, Subagent: subagents.Stats, Sessions: sessions.Stats, Turns: turns.Stats,
		Rejected: rejects.Count, RejRows: rejects.Rows, Health: health}
	disclosures := transform.Disclose(facts)
	if err := transform.WriteDisclosures(tctx, outs[transform.TableDisclosures].b, disclosures); err != nil {
		return fail(err)
	}
	if err := transform.WriteInstallation(tctx, outs[transform.TableInstallation].b, transform.InstallationRow{
		SnapshotAt: snap.At(), Dialect: src.Dialect(), Location: src.Location(), ExtractorVersion: Version, Facts: facts,
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
		SourceDialect: src.Dialect(), SourceLocation: src.Location(),
		KandevVersion: state.KandevVersion, SnapshotAt: snap.At(),
		ExtractorVersion: Version, SchemaVersion: models.SchemaVersion,
		RawKeys: map[string]*string{
			models.KeyCaptureSince:    state.CaptureSince.Raw,
			models.KeyBackfillThrough: state.BackfillThrough.Raw,
			models.KeyExecutionSince:  state.ExecutionSince.Raw,
		},
		TableShape: state.Shape, ActivationState: state.Activation,
		Tables:         map[string]models.TableProvenance{},
		RejectedValues: rejects.Count, QuarantinedRows: rejects.Rows,
	}
	for _, o := range order {
		tp := models.TableProvenance{SourceTable: o.source, RowsWritten: o.file.Rows}
		switch o.table {
		case transform.TableFact:
			tp.RowsRead = o.file.Rows + rejects.Rows
		case transform.TableDisclosures, transform.TableRejects, transform.TableInstallation:
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
	doc, err := json.Marshal(prov)
	if err != nil {
		return fail(err)
	}
	meta2 := map[string]string{load.ProvenanceKey: string(doc)}
	for i, o := range order {
		err := o.file.Close(meta2)
		o.file = nil
		if err != nil {
			abort(order[i+1:])
			return nil, facts, nil, err
		}
	}
	return prov, facts, disclosures, nil
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
