package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// transformers are a run's table transformers, each appending into its
// table's builder.
type transformers struct {
	ctx       *transform.Context
	rejects   *transform.Rejects
	subagents *transform.Subagents
	sessions  *transform.Sessions
	turns     *transform.Turns
	tasks     *transform.Dim
	workflows *transform.Dim
	steps     *transform.Dim
}

func newTransformers(tctx *transform.Context, outs *outputs) *transformers {
	return &transformers{
		ctx:       tctx,
		rejects:   transform.NewRejects(tctx, outs.builder(models.TableRejects)),
		subagents: transform.NewSubagents(tctx, outs.builder(models.TableFact)),
		sessions:  transform.NewSessions(tctx, outs.builder(models.TableSession)),
		turns:     transform.NewTurns(tctx, outs.builder(models.TableTurn)),
		tasks:     transform.NewTasks(tctx, outs.builder(models.TableTask)),
		workflows: transform.NewWorkflows(tctx, outs.builder(models.TableWorkflow)),
		steps:     transform.NewWorkflowSteps(tctx, outs.builder(models.TableWorkflowStep)),
	}
}

// appendRow is the transformer of a table read from its source.
func (tr *transformers) appendRow(table string) func([]any) error {
	switch table {
	case models.TableFact:
		return tr.subagents.Append
	case models.TableSession:
		return tr.sessions.Append
	case models.TableTurn:
		return tr.turns.Append
	case models.TableTask:
		return tr.tasks.Append
	case models.TableWorkflow:
		return tr.workflows.Append
	case models.TableWorkflowStep:
		return tr.steps.Append
	}
	panic("pipeline: no transformer reads " + table)
}

// highWater is the newest instant of a table's high-water column read
// (zero when none).
func (tr *transformers) highWater(table string) time.Time {
	switch table {
	case models.TableFact:
		return tr.subagents.Stats.MaxUpdated
	case models.TableSession:
		return tr.sessions.Stats.MaxUpdated
	case models.TableTurn:
		return tr.turns.Stats.MaxUpdated
	case models.TableTask:
		return tr.tasks.Stats.MaxUpdated
	case models.TableWorkflow:
		return tr.workflows.Stats.MaxUpdated
	case models.TableWorkflowStep:
		return tr.steps.Stats.MaxUpdated
	}
	return time.Time{}
}

// The order the readers read in. A second reader pinned to the same
// snapshot (extract.Fork: its own connection, the same state) reads the
// messages — the message evidence, writer health and the per-turn and
// per-session fan-out, in one pass (evidence.ReadMessagesAndFanout) — and
// then task_sessions, while the first scans task_session_subagents and
// then the other tables. dim_session depends on the message pass only, so
// its batches may reach the transformer between the fact's; dim_turn needs
// the fact transformed first (rows that no turn can place), so the first
// reader reads it after the fact, and the message pass's evidence and
// fan-out (its scan takes its counts from the pass), so it waits for the
// pass to end (not for task_sessions). Without a second reader
// (extract.Fork says why) the first reads everything, in turn: the fact,
// the messages, the sessions, the rest.
var (
	firstTable = models.TableFact
	forkTable  = models.TableSession
	// restTables: the turns first; the others need nothing from the
	// message pass (with two readers they are read while it runs).
	restTables = []string{models.TableTurn, models.TableTask, models.TableWorkflow, models.TableWorkflowStep}
)

// readers read one consistent snapshot, on one or two connections, into
// the overlap's batches for the transformers, and collect the message
// pass's results.
type readers struct {
	snap, fork     models.Snapshot // fork is nil with one reader
	ov             *overlap
	outs           *outputs
	tr             *transformers
	state          models.InstallationState
	featurePresent bool
	opts           Options
	installation   string
	log            *slog.Logger
	stages         *Stages
	// ids collect the ids of the tables whose deletions are tracked.
	ids map[string]*idSet

	acct sync.Mutex // the two readers' accounting and progress calls

	// What the schema lets the scans leave out (extract.PlanScans), read
	// before any scan.
	plan *extract.ScanPlan

	// What the message pass read; fanout is nil when the pass did not count
	// the fan-out (the scans then count it in SQL).
	evidence evidence.MessageEvidence
	fanout   *evidence.Fanout
	health   models.Health
	messages time.Duration
}

func (r *readers) progress(table string, n int64) {
	if r.opts.Progress != nil {
		r.acct.Lock()
		r.opts.Progress(r.installation, table, n)
		r.acct.Unlock()
	}
}

// read scans one table of a snapshot into batches for the transformer.
// Two readers may run it at once: its accounting and the progress callback
// are serialized.
func (r *readers) read(ctx context.Context, from models.Snapshot, table string) error {
	t := models.MustTable(table)
	var fo *evidence.Fanout
	if table == models.TableTurn || table == models.TableSession {
		fo = r.fanout // set by the message pass, which is done (see readAll)
	}
	spec, fill := r.plan.ScanSpec(t, fo)
	appendRow := r.tr.appendRow(table)
	ov := r.ov
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
	idSet, idCol := r.ids[table], spec.Column("id")
	r.progress(table, 0) // the table's scan begins
	scanRow := func(row []any) error {
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
			r.progress(table, n)
		}
		if cur.rows == rowsPerBatch {
			b := cur
			cur = nil
			return ov.send(b)
		}
		return nil
	}
	if fill != nil {
		scanRow = fill(scanRow) // the fan-out cells from the pass
	}
	err := from.Scan(ctx, spec, scanRow)
	if err == nil && cur != nil {
		err = ov.send(cur)
	}
	if err != nil {
		return err
	}
	r.progress(table, n)
	end, err := get()
	if err != nil {
		return err
	}
	b := r.outs.builder(table)
	end.end = func() error {
		if err := b.Flush(); err != nil {
			return err
		}
		r.log.Info("table read", "table", spec.Name, "rows", b.Rows(), "elapsed", time.Since(t0).Round(time.Millisecond).String())
		return nil
	}
	r.acct.Lock()
	r.stages.Extract += time.Since(t0) - waited
	r.acct.Unlock()
	return ov.send(end)
}

// readMessages is the message pass: the evidence per turn and session,
// and writer health's counts when it may run. Messages bound fan-out from
// below, per turn and session; their evidence is read before sessions and
// turns, whose classification uses it.
func (r *readers) readMessages(ctx context.Context, from models.Snapshot) error {
	t0 := time.Now()
	defer func() { r.messages = time.Since(t0) }()
	var since, healthSince *time.Time
	if r.state.CaptureSince.Valid() {
		at := r.state.CaptureSince.At
		since = &at
	}
	runHealth, verdict := transform.HealthPlan(r.state)
	if runHealth {
		at := r.state.CaptureSince.At
		healthSince = &at
	}
	ev, counts, err := evidence.ReadMessagesAndFanout(ctx, from, since, r.featurePresent, healthSince, r.plan)
	if err != nil {
		return err
	}
	r.evidence, r.fanout, r.health = ev, ev.Fanout, verdict
	if runHealth {
		r.health = transform.HealthVerdict(r.state, *counts)
	}
	// The sessions, read next, are classified with it.
	r.tr.ctx.SessionEvidence = ev.Sessions
	r.tr.ctx.ShortfallMeasured = r.featurePresent && r.state.CaptureSince.Valid()
	return nil
}

// readAll reads every table and the messages, on the second reader when
// there is one (see firstTable). ctx is the overlap's: it is cancelled when
// the transformer fails.
func (r *readers) readAll(ctx context.Context) error {
	var planOn models.Snapshot = r.snap
	if r.opts.unproven {
		planOn = struct{ models.Snapshot }{r.snap} // no dialect: nothing proven
	}
	plan, err := extract.PlanScans(ctx, planOn, r.featurePresent)
	if err != nil {
		return err
	}
	r.plan = plan
	ids, key, fanout := plan.Summary()
	r.log.Info("scan plan", "ids_proven_unique", ids, "subagent_key_proven_unique", key, "fanout_from_message_pass", fanout)
	var (
		forkDone = make(chan struct{})
		passDone = make(chan struct{}) // the message pass has ended (passErr says how)
		passErr  error
		forkErr  error
		waited   time.Duration
	)
	fctx, stopFork := context.WithCancel(ctx)
	defer stopFork()
	if r.fork != nil {
		go func() {
			defer close(forkDone)
			passErr = r.readMessages(fctx, r.fork)
			close(passDone)
			if forkErr = passErr; forkErr != nil {
				return
			}
			forkErr = r.read(fctx, r.fork, forkTable)
		}()
	}
	// The second reader is done before this returns (and before the fork
	// is closed), whatever happens here.
	join := func(err error) error {
		if r.fork == nil {
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
	if r.featurePresent {
		if err := r.read(ctx, r.snap, firstTable); err != nil {
			return join(err)
		}
	}
	rest := restTables
	if r.fork == nil {
		r.opts.phase(r.installation, PhaseHealth)
		if err := r.readMessages(ctx, r.snap); err != nil {
			return err
		}
		if err := r.read(ctx, r.snap, forkTable); err != nil {
			return err
		}
	} else {
		// The fact is read. The turns need the message pass's results (its
		// evidence, and the fan-out their scan takes from it); the tables
		// that do not are read while the pass runs. Then wait for the pass,
		// which ends on its own (on an error, or when ctx is cancelled);
		// task_sessions, read after it on the second reader, may still be
		// read meanwhile.
		for _, table := range restTables[1:] {
			if err := r.read(ctx, r.snap, table); err != nil {
				return join(err)
			}
		}
		rest = restTables[:1]
		r.opts.phase(r.installation, PhaseHealth)
		t0 := time.Now()
		<-passDone
		waited += time.Since(t0)
		if passErr != nil {
			return join(nil)
		}
	}
	r.stages.Health += r.messages
	r.tr.ctx.TurnEvidence = r.evidence.Turns
	for _, table := range rest {
		if err := r.read(ctx, r.snap, table); err != nil {
			return join(err)
		}
	}
	if r.fork != nil {
		if err := join(nil); err != nil {
			return err
		}
		r.log.Info("second reader", "messages_ms", r.messages.Milliseconds(), "waited_for_ms", waited.Milliseconds())
	}
	return nil
}
