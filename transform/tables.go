package transform

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/kandev/kandev-extract/models"
)

// Table names in the warehouse.
const (
	TableFact          = "fact_subagent_context"
	TableInstallation  = "fact_installation_state"
	TableWriterHealth  = "fact_writer_health"
	TableTask          = "dim_task"
	TableSession       = "dim_session"
	TableTurn          = "dim_turn"
	TableWorkflow      = "dim_workflow"
	TableWorkflowStep  = "dim_workflow_step"
	TableDisclosures   = "disclosures"
	TableRejects       = "rejects"
	subagentSourceName = "task_session_subagents"
)

// Context is what every transformer of one run needs.
type Context struct {
	Installation string
	Run          string
	Class        Classifier
	Rejects      *Rejects
}

func (c *Context) lead(b *Builder) {
	b.Str(c.Installation)
	b.Str(c.Run)
}

// ---- rejects ---------------------------------------------------------------

// RejectsSchema describes quarantined rows and refused values.
var RejectsSchema = runFields(
	str("table_name"), optStr("row_id"), str("column_name"), optStr("raw_value"),
	str("reason"), str("action"),
)

// Reject actions.
const (
	ActionQuarantinedRow = "quarantined_row" // the row is not in the fact; kept here
	ActionNulledValue    = "nulled_value"    // the row is kept with this value NULL
)

// Rejects records every row or value the pipeline refused, with the reason.
type Rejects struct {
	ctx   *Context
	b     *Builder
	Count int64
	Rows  int64 // quarantined rows
}

// NewRejects wires a rejects table to its builder.
func NewRejects(ctx *Context, b *Builder) *Rejects {
	r := &Rejects{ctx: ctx, b: b}
	ctx.Rejects = r
	return r
}

// Add records one refusal.
func (r *Rejects) Add(table, rowID, column string, raw any, reason, action string) error {
	r.Count++
	if action == ActionQuarantinedRow {
		r.Rows++
	}
	r.ctx.lead(r.b)
	r.b.Str(table)
	r.b.OptStr(rowID, rowID != "")
	r.b.Str(column)
	s, ok := asText(raw)
	r.b.OptStr(clipRaw(s), ok)
	r.b.Str(reason)
	r.b.Str(action)
	return r.b.EndRow()
}

func clipRaw(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// ---- fact_subagent_context -------------------------------------------------

// SubagentSpec lists what is read from task_session_subagents. description
// is deliberately absent: it is content.
func SubagentSpec() models.TableSpec {
	return models.TableSpec{Name: subagentSourceName, Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "task_session_id", Required: true},
		{Name: "task_id", Required: true},
		{Name: "turn_id"},
		{Name: "tool_call_id", Required: true},
		{Name: "agent_execution_id"},
		{Name: "parent_tool_call_id"},
		{Name: "subagent_type"},
		{Name: "agent_id"},
		{Name: "child_session_id"},
		{Name: "model"},
		{Name: "agent_status"},
		{Name: "tool_status"},
		{Name: "is_async", Kind: models.KindInt},
		{Name: "total_tokens", Kind: models.KindInt},
		{Name: "tool_use_count", Kind: models.KindInt},
		{Name: "duration_ms", Kind: models.KindInt},
		{Name: "source", Required: true},
		{Name: "observed_at", Kind: models.KindStamp, Required: true},
		{Name: "settled_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}
}

// FactSchema is fact_subagent_context: one row per subagent invocation,
// classified.
var FactSchema = runFields(
	str("subagent_id"), str("task_session_id"), str("task_id"), optStr("turn_id"),
	str("tool_call_id"), optStr("parent_tool_call_id"), boolean("is_nested"),
	optStr("agent_execution_id"), optStr("execution_id"), str("execution_identity"),
	optStr("subagent_type"), optStr("agent_id"), optStr("child_session_id"), optStr("model"),
	optStr("agent_status"), optStr("tool_status"), boolean("is_terminal"), boolean("is_async"),
	optInt("total_tokens"), optInt("tool_use_count"), optInt("duration_ms"), boolean("is_measured"),
	str("source"), stamp("observed_at"), optStamp("settled_at"), optStamp("updated_at"),
	str("capture_window"), boolean("capture_boundary_ambiguous"),
	optStamp("capture_since"), optStamp("execution_since"), str("activation_state"),
)

// SubagentStats are the counts disclosures and provenance need.
type SubagentStats struct {
	Rows, Live, Backfill, OtherSource int64
	Terminal, Measured, Ambiguous     int64
	Identity                          map[models.ExecutionIdentity]int64
	Window                            map[models.CaptureWindow]int64
	MaxObserved, MaxUpdated           time.Time
}

// Subagents transforms task_session_subagents rows into the fact.
type Subagents struct {
	ctx   *Context
	b     *Builder
	Stats SubagentStats
}

// NewSubagents returns the fact transformer.
func NewSubagents(ctx *Context, b *Builder) *Subagents {
	return &Subagents{ctx: ctx, b: b, Stats: SubagentStats{
		Identity: map[models.ExecutionIdentity]int64{},
		Window:   map[models.CaptureWindow]int64{},
	}}
}

// Append transforms one source row (in SubagentSpec order).
func (s *Subagents) Append(row []any) error {
	rej := s.ctx.Rejects
	id, _ := asText(row[0])
	observed, ok, problem := asStamp(row[18])
	if !ok {
		if problem == "" {
			problem = "observed_at is NULL"
		}
		return rej.Add(subagentSourceName, id, "observed_at", row[18], problem, ActionQuarantinedRow)
	}
	source, _ := asText(row[17])
	execID, execValid := asText(row[5])
	toolStatus, toolValid := asText(row[12])
	rc := s.ctx.Class.Row(observed, source, execID, execValid, toolStatus, toolValid)

	b := s.b
	s.ctx.lead(b)
	b.Str(id)
	sess, _ := asText(row[1])
	b.Str(sess)
	task, _ := asText(row[2])
	b.Str(task)
	b.OptStr(asRef(row[3]))
	tc, _ := asText(row[4])
	b.Str(tc)
	parent, nested := asRef(row[6])
	b.OptStr(parent, nested)
	b.Bool(nested, true)
	b.OptStr(execID, execValid)
	b.OptStr(rc.ExecutionID, rc.Identity == models.ExecRecorded)
	b.Str(string(rc.Identity))
	for i := 7; i <= 11; i++ { // subagent_type, agent_id, child_session_id, model, agent_status
		b.OptStr(asRef(row[i]))
	}
	b.OptStr(toolStatus, toolValid)
	b.Bool(rc.Terminal, true)
	async, asyncOK, asyncProblem := asInt(row[13])
	if asyncProblem != "" {
		if err := rej.Add(subagentSourceName, id, "is_async", row[13], asyncProblem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.Bool(asyncOK && async != 0, true)
	measured := false
	for i, col := range [...]string{"total_tokens", "tool_use_count", "duration_ms"} {
		n, valid, problem := asInt(row[14+i])
		if valid && n < 0 {
			valid, problem = false, "negative metric"
		}
		if problem != "" {
			if err := rej.Add(subagentSourceName, id, col, row[14+i], problem, ActionNulledValue); err != nil {
				return err
			}
		}
		measured = measured || valid
		b.Int(n, valid) // NULL stays NULL: never 0-filled (AC-7)
	}
	b.Bool(measured, true)
	b.Str(source)
	b.Time(observed, true)
	settled, settledOK, problem := asStamp(row[19])
	if problem != "" {
		if err := rej.Add(subagentSourceName, id, "settled_at", row[19], problem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.Time(settled, settledOK)
	updated, updatedOK, problem := asStamp(row[20])
	if problem != "" {
		if err := rej.Add(subagentSourceName, id, "updated_at", row[20], problem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.Time(updated, updatedOK)
	b.Str(string(rc.Window))
	b.Bool(rc.BoundaryAmbiguous, true)
	cs, es := s.ctx.Class.State.CaptureSince, s.ctx.Class.State.ExecutionSince
	b.Time(cs.At, cs.Valid())
	b.Time(es.At, es.Valid())
	b.Str(string(s.ctx.Class.State.Activation))

	st := &s.Stats
	st.Rows++
	switch source {
	case models.SourceLive:
		st.Live++
	case models.SourceBackfill:
		st.Backfill++
	default:
		st.OtherSource++
	}
	if rc.Terminal {
		st.Terminal++
	}
	if measured {
		st.Measured++
	}
	if rc.BoundaryAmbiguous {
		st.Ambiguous++
	}
	st.Identity[rc.Identity]++
	st.Window[rc.Window]++
	if observed.After(st.MaxObserved) {
		st.MaxObserved = observed
	}
	if updatedOK && updated.After(st.MaxUpdated) {
		st.MaxUpdated = updated
	}
	return b.EndRow()
}

// ---- fan-out dimensions ----------------------------------------------------

// countColumns are the per-turn or per-session subagent counts, computed by
// the source inside the snapshot (alias a, see fanoutJoin).
func countColumns() []models.ColumnSpec {
	return []models.ColumnSpec{
		{Name: "subagents_observed", Kind: models.KindCount, Expr: "COALESCE(a.n, 0)"},
		{Name: "subagents_live", Kind: models.KindCount, Expr: "COALESCE(a.n_live, 0)"},
		{Name: "subagents_backfill", Kind: models.KindCount, Expr: "COALESCE(a.n_backfill, 0)"},
	}
}

func zeroCountColumns() []models.ColumnSpec {
	return []models.ColumnSpec{
		{Name: "subagents_observed", Kind: models.KindCount, Expr: "0"},
		{Name: "subagents_live", Kind: models.KindCount, Expr: "0"},
		{Name: "subagents_backfill", Kind: models.KindCount, Expr: "0"},
	}
}

// fanoutJoin aggregates subagent rows by key in one pass, in SQL that both
// dialects accept.
func fanoutJoin(key string) string {
	return ` LEFT JOIN (SELECT ` + key + ` AS k, COUNT(*) AS n,
		SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS n_live,
		SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS n_backfill
		FROM task_session_subagents WHERE ` + key + ` IS NOT NULL GROUP BY ` + key + `) a ON a.k = t.id`
}

// SessionSpec reads task_sessions with their subagent counts.
func SessionSpec(featurePresent bool) models.TableSpec {
	spec := models.TableSpec{Name: "task_sessions", Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "task_id", Required: true},
		{Name: "state"},
		{Name: "agent_profile_id"},
		{Name: "is_primary", Kind: models.KindInt},
		{Name: "started_at", Kind: models.KindStamp, Required: true},
		{Name: "completed_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}
	if featurePresent {
		spec.Columns = append(spec.Columns, countColumns()...)
		spec.Join = fanoutJoin("task_session_id")
	} else {
		spec.Columns = append(spec.Columns, zeroCountColumns()...)
	}
	return spec
}

var fanoutFields = []arrow.Field{
	integer("subagents_observed"), integer("subagents_observed_live"), integer("subagents_observed_backfill"),
	optInt("fanout"), str("fanout_completeness"), str("capture_window"),
}

// SessionSchema is dim_session: exactly one row per task_sessions row.
var SessionSchema = runFields(append([]arrow.Field{
	str("session_id"), str("task_id"), optStr("state"), optStr("agent_profile_id"), optBool("is_primary"),
	optStamp("started_at"), optStamp("completed_at"), optStamp("updated_at"),
}, fanoutFields...)...)

// FanoutStats counts completeness classes for disclosures.
type FanoutStats struct {
	Rows         int64
	Completeness map[models.FanoutCompleteness]int64
	MaxUpdated   time.Time
}

// Sessions transforms task_sessions into dim_session.
type Sessions struct {
	ctx   *Context
	b     *Builder
	Stats FanoutStats
}

// NewSessions returns the dim_session transformer.
func NewSessions(ctx *Context, b *Builder) *Sessions {
	return &Sessions{ctx: ctx, b: b, Stats: FanoutStats{Completeness: map[models.FanoutCompleteness]int64{}}}
}

// Append transforms one task_sessions row (SessionSpec order).
func (s *Sessions) Append(row []any) error {
	b := s.b
	id, _ := asText(row[0])
	s.ctx.lead(b)
	b.Str(id)
	task, _ := asText(row[1])
	b.Str(task)
	b.OptStr(asRef(row[2]))
	b.OptStr(asRef(row[3]))
	primary, ok, _ := asInt(row[4])
	b.Bool(primary != 0, ok)
	started, startedOK, err := s.ctx.stampCol(b, "task_sessions", id, "started_at", row[5])
	if err != nil {
		return err
	}
	if _, _, err := s.ctx.stampCol(b, "task_sessions", id, "completed_at", row[6]); err != nil {
		return err
	}
	updated, updatedOK, err := s.ctx.stampCol(b, "task_sessions", id, "updated_at", row[7])
	if err != nil {
		return err
	}
	if updatedOK && updated.After(s.Stats.MaxUpdated) {
		s.Stats.MaxUpdated = updated
	}
	c := s.ctx.fanout(b, started, startedOK, row[8], row[9], row[10])
	s.Stats.Rows++
	s.Stats.Completeness[c]++
	return b.EndRow()
}

// stampCol appends a timestamp column, recording a refused value.
func (c *Context) stampCol(b *Builder, table, id, col string, v any) (time.Time, bool, error) {
	t, ok, problem := asStamp(v)
	if problem != "" {
		if err := c.Rejects.Add(table, id, col, v, problem, ActionNulledValue); err != nil {
			return t, false, err
		}
	}
	b.Time(t, ok)
	return t, ok, nil
}

// fanout appends the count and completeness columns.
func (c *Context) fanout(b *Builder, started time.Time, startedOK bool, n, live, backfill any) models.FanoutCompleteness {
	total, _, _ := asInt(n)
	l, _, _ := asInt(live)
	bf, _, _ := asInt(backfill)
	b.Int(total, true)
	b.Int(l, true)
	b.Int(bf, true)
	completeness, fanout, exact := c.Class.Fanout(started, startedOK, total)
	b.Int(fanout, exact)
	b.Str(string(completeness))
	b.Str(string(c.Class.Window(started, startedOK)))
	return completeness
}

// Window places an activity start against capture_since.
func (c Classifier) Window(t time.Time, valid bool) models.CaptureWindow {
	switch {
	case !c.State.CaptureSince.Valid() || !valid:
		return models.NoBoundary
	case t.Before(c.State.CaptureSince.At):
		return models.BeforeCapture
	default:
		return models.AfterCapture
	}
}
