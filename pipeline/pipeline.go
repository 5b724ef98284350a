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
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// Version is the extractor's version, set at build time with -ldflags -X.
var Version = "dev"

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
		opts.Allocator = load.Buffers
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
	// The extraction's memory (id sets, the deletion comparison's) goes
	// back to the system before DuckDB takes its own for the rebuild.
	debug.FreeOSMemory()
	t0 := time.Now()
	built, err := wh.Rebuild(finish, load.RebuildOptions{Keep: opts.Retention, StaleAfter: opts.StaleAfter, Full: opts.FullRebuild})
	res.DuckDB = time.Since(t0)
	res.Problems = built.Problems
	if res.MemoryRetry = built.MemoryRetry; res.MemoryRetry != "" {
		opts.Logger.Warn("warehouse.duckdb rebuilt with a larger memory limit", "why", built.MemoryRetry)
	}
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
		// The committed runs are safe on disk; the database in place still
		// serves what it did. Said so, and journaled for status.
		re := &RebuildError{Err: err, Serves: map[string]string{}}
		if cur, cerr := load.ReadCurrentManifest(wh.Dir); cerr == nil {
			for inst, e := range cur.Installations {
				re.Serves[inst] = e.RunID
			}
		}
		jerr := wh.RecordAttempt(load.Attempt{Kind: load.AttemptRebuildFailed, RunID: res.RunID, FinishedAt: opts.Now(), Error: err.Error()})
		if re.Journaled = jerr == nil; !re.Journaled {
			opts.Logger.Error("could not record the failed rebuild", "err", jerr)
		}
		res.NotRebuilt = re
		return res, re
	}
	res.Pending = built.Pending
	res.Rebuild = RebuildSummary{Updated: built.Updated, Added: built.Added, Removed: built.Removed, FullReason: built.FullReason,
		FromTemplate: built.FromTemplate, ViewsKept: built.ViewsKept}
	if built.StampError != "" {
		opts.Logger.Warn("the record of warehouse.duckdb could not be written; the next run builds it in full", "err", built.StampError)
	}
	if built.Pending.Database == "" {
		if built.Updated {
			opts.Logger.Info("warehouse.duckdb rebuilt", "run_id", res.RunID, "elapsed_ms", res.DuckDB.Milliseconds(),
				"how", "updated", "runs_added", built.Added, "runs_removed", built.Removed, "views", viewsHow(built.ViewsKept))
		} else if built.FromTemplate {
			opts.Logger.Info("warehouse.duckdb rebuilt", "run_id", res.RunID, "elapsed_ms", res.DuckDB.Milliseconds(),
				"how", "full", "why", built.FullReason, "start", "the built-in empty warehouse", "views", viewsHow(built.ViewsKept))
		} else {
			opts.Logger.Info("warehouse.duckdb rebuilt", "run_id", res.RunID, "elapsed_ms", res.DuckDB.Milliseconds(),
				"how", "full", "why", built.FullReason)
		}
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

// viewsHow says, in the rebuild's log line, whether the update kept the
// views and their comments or created them anew.
func viewsHow(kept bool) string {
	if kept {
		return "kept"
	}
	return "created"
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
				log.Info("run committed", "subagent_rows", prov.Tables[models.TableFact].RowsWritten,
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
			// Where failures go is full or unwritable: the pre-allocated
			// journal keeps the attempt for status.
			jerr := wh.RecordAttempt(load.Attempt{Kind: load.AttemptFailed, Installation: in.Name, RunID: runID,
				CommitSeq: seq, FinishedAt: m.FinishedAt, DurationMS: m.DurationMS, Error: err.Error()})
			if jerr != nil {
				log.Error("could not record the failure", "err", werr, "journal", jerr)
			} else {
				log.Error("could not record the failure in its manifest; recorded in "+load.JournalFile, "err", werr)
			}
		}
	}
	out.Manifest = m
	return out
}

// writeRun extracts one installation into its staged files, stage by
// stage: open one consistent snapshot; read the installation's state and
// compare it with the previous runs; read every table (two readers on the
// snapshot) while the transformer classifies and writes Parquet; write
// writer health and its shortfall; find the rows deleted since the
// previous run; write the disclosures and the installation's state; close
// every file with the run's provenance, then the archives.
func writeRun(ctx context.Context, wh *load.Warehouse, stage *load.Staging, runID string, in Installation, opts Options, log *slog.Logger, stages *Stages) (*models.Provenance, transform.Facts, []transform.Disclosure, *load.Binding, error) {
	var facts transform.Facts
	fail := func(err error) (*models.Provenance, transform.Facts, []transform.Disclosure, *load.Binding, error) {
		return nil, facts, nil, nil, err
	}

	// The snapshot.
	opts.phase(in.Name, PhaseOpen)
	src, err := extract.OpenWith(ctx, in.Source, in.openOptions())
	if err != nil {
		return fail(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return fail(err)
	}
	defer snap.Close()

	// The installation's state, and what the previous runs say about it.
	meta, err := snap.Meta(ctx)
	if err != nil {
		return fail(err)
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		return fail(err)
	}
	state := transform.Installation(meta, transform.Shape(schema))
	identity := load.SourceIdentity{Dialect: string(src.Dialect()), Location: src.Location(), Fingerprint: fingerprint(meta)}
	across, err := compareAcrossRuns(wh, in, runID, opts.Now(), identity, state)
	if err != nil {
		return fail(err)
	}
	if in.AcknowledgeKeyChange {
		if across.acknowledged == 0 {
			log.Warn("--acknowledge-key-change: no recorded activation key change to acknowledge")
		} else {
			log.Warn("activation key changes acknowledged; disclosed for ever after", "count", across.acknowledged)
		}
	}
	featurePresent := state.Shape != models.ShapeAbsent
	log.Info("snapshot open", "source", src.Location(), "activation_state", state.Activation, "table_shape", state.Shape)

	// One Parquet file per table, and the transformers that fill them.
	outs, err := openOutputs(stage, opts, &stages.Parquet)
	if err != nil {
		return fail(err)
	}
	defer outs.release()
	fail = func(err error) (*models.Provenance, transform.Facts, []transform.Disclosure, *load.Binding, error) {
		outs.abort()
		return nil, facts, nil, nil, err
	}
	tctx := &transform.Context{Installation: in.Name, Run: runID, Class: transform.Classifier{State: state}}
	tr := newTransformers(tctx, outs)
	if err := tr.rejects.MetaText(meta); err != nil {
		return fail(err)
	}

	// Every table: the readers scan the snapshot while the transformer
	// classifies and writes (see overlap).
	ov, rctx := startOverlap(ctx)
	defer ov.finish()
	rd := &readers{snap: snap, ov: ov, outs: outs, tr: tr, state: state, featurePresent: featurePresent,
		opts: opts, installation: in.Name, log: log, stages: stages, ids: map[string]*idSet{}}
	if across.comparesDeletions() {
		for t := range trackedIDs {
			rd.ids[t] = &idSet{}
		}
	}
	fork, why, err := extract.Fork(rctx, snap)
	if err != nil {
		return fail(err)
	}
	if fork != nil && opts.oneReader {
		fork.Close()
		fork, why = nil, "Options.oneReader"
	}
	if fork != nil {
		defer fork.Close()
		rd.fork = fork
	} else {
		log.Info("one reader", "why", why)
	}
	readErr := rd.readAll(rctx)
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
	rd.evidence.Turns, rd.evidence.Sessions, rd.evidence.Fanout, rd.fanout = nil, nil, nil, nil
	debug.FreeOSMemory()

	// Writer health and its shortfall.
	health := rd.health
	log.Info("writer health", "status", health.Status, "shortfall", health.Counts.Shortfall, "excess", health.Counts.Excess)
	if err := transform.WriteHealth(tctx, outs.builder(models.TableWriterHealth), snap.At(), health); err != nil {
		return fail(err)
	}
	if err := transform.WriteShortfall(tctx, outs.builder(models.TableShortfall), rd.evidence.Missing); err != nil {
		return fail(err)
	}

	// The rows deleted since the previous run.
	ids := rd.ids
	rd.ids = nil // the hashes go with the comparison
	for _, set := range ids {
		set.seal()
	}
	opts.phase(in.Name, PhaseDeletions)
	del, err := detectDeletions(ctx, wh.Dir, across.previous, across.reboundNow, ids)
	if err != nil {
		return fail(err)
	}
	defer del.close()
	ids = nil
	opts.phase(in.Name, PhaseWrite)

	// Disclosures and the installation's state.
	facts = transform.Facts{State: state, Subagent: tr.subagents.Stats, Sessions: tr.sessions.Stats, Turns: tr.turns.Stats,
		Tasks: tr.tasks.Stats, Workflows: tr.workflows.Stats, Steps: tr.steps.Stats,
		Rejected: tr.rejects.Count, RejRows: tr.rejects.Rows, Health: health}
	disclosures := append(append(transform.Disclose(facts), across.disclosures...), del.disclosures()...)
	if err := transform.WriteDisclosures(tctx, outs.builder(models.TableDisclosures), disclosures); err != nil {
		return fail(err)
	}
	if err := transform.WriteInstallation(tctx, outs.builder(models.TableInstallation), transform.InstallationRow{
		SnapshotAt: snap.At(), Dialect: src.Dialect(), Location: src.Location(), ExtractorVersion: ExtractorVersion(), Facts: facts,
	}); err != nil {
		return fail(err)
	}
	if err := outs.flush(); err != nil {
		return fail(err)
	}

	// Nothing is committed from a snapshot that cannot be trusted (a store
	// read without locks that something opened meanwhile).
	if err := verifySnapshot(src); err != nil {
		return fail(err)
	}

	// Every file closed with the run's provenance, then the archives.
	prov := buildProvenance(provenanceInput{runID: runID, installation: in.Name, source: src, identity: identity, state: state,
		snapshotAt: snap.At(), outs: outs, tr: tr, meta: meta, messagesRead: rd.evidence.MessagesRead, del: del})
	doc, err := json.Marshal(prov)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	if err := outs.close(map[string]string{load.ProvenanceKey: string(doc)}); err != nil {
		return nil, facts, nil, nil, err
	}
	for _, a := range load.Archives {
		src := del.sources[a.Archive]
		src.Current = stage.Path(a.Table)
		retried, err := stage.WriteArchive(ctx, del.archiver, src, runID, string(doc))
		if err != nil {
			return nil, facts, nil, nil, err
		}
		if retried != "" {
			log.Warn("archive written with a larger memory limit", "archive", a.Archive, "why", retried)
		}
	}
	stages.Parquet += time.Since(t0)
	return prov, facts, disclosures, across.binding, nil
}

// verifySnapshot asks a source whose snapshot may need it (a SQLite store
// read immutable) whether the snapshot can still be trusted.
func verifySnapshot(src models.Source) error {
	if v, ok := src.(interface{ Verify() error }); ok {
		return v.Verify()
	}
	return nil
}
