package transform

import (
	"fmt"
	"time"
	"unicode/utf8"

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

// Reject actions: what the extractor did with the row or value.
const (
	ActionQuarantinedRow = "quarantined_row" // the row is not in the fact; kept here
	ActionNulledValue    = "nulled_value"    // the row is kept with this value NULL
	// ActionReplacedValue: the row is kept with a repaired value (text that
	// is not UTF-8 gets U+FFFD for its invalid bytes; a non-integer is_async
	// becomes false, the column not being nullable).
	ActionReplacedValue = "replaced_value"
	// ActionFlagged: the row and the value are kept exactly as read, and
	// flagged for attention (an orphan, a duplicate key, a non-UTC offset).
	ActionFlagged = "flagged"
)

// Rejects records every row or value the pipeline refused, repaired or
// flagged, with the reason.
type Rejects struct {
	ctx *Context
	b   *Builder
	// Count is every entry: refused, repaired and flagged.
	Count int64
	Rows  int64 // quarantined rows
	// By action, for provenance and disclosures.
	Nulled, Replaced, Flagged int64
}

// NewRejects wires a rejects table to its builder.
func NewRejects(ctx *Context, b *Builder) *Rejects {
	r := &Rejects{ctx: ctx, b: b}
	ctx.Rejects = r
	return r
}

// Add records one entry. raw is the value as read: it is kept (clipped,
// invalid UTF-8 bytes escaped as \xNN); pass nil where the value may be
// content (metadata), which is never copied.
func (r *Rejects) Add(table, rowID, column string, raw any, reason, action string) error {
	r.Count++
	switch action {
	case ActionQuarantinedRow:
		r.Rows++
	case ActionNulledValue:
		r.Nulled++
	case ActionReplacedValue:
		r.Replaced++
	case ActionFlagged:
		r.Flagged++
	}
	r.ctx.lead(r.b)
	r.b.Str(table)
	id, _ := rawText(rowID)
	r.b.OptStr(id, rowID != "")
	r.b.Str(column)
	r.b.OptStr(rawText(raw))
	r.b.Str(reason)
	r.b.Str(action)
	return r.b.EndRow()
}

const reasonNotUTF8 = "text is not valid UTF-8: each invalid byte sequence was replaced with U+FFFD (the raw value shows the bytes as \\xNN)"

// MetaText records, for each kandev_meta value the warehouse keeps (the
// three activation keys and kandev_version) that is not valid UTF-8, the
// repair it gets on its way to fact_installation_state. The row id is the
// key.
func (r *Rejects) MetaText(meta []models.MetaEntry) error {
	for _, e := range meta {
		switch e.Key {
		case models.KeyCaptureSince, models.KeyBackfillThrough, models.KeyExecutionSince, models.KeyKandevVersion:
		default:
			continue
		}
		if utf8.ValidString(e.Value) {
			continue
		}
		if err := r.Add("kandev_meta", e.Key, "value", e.Value, reasonNotUTF8, ActionReplacedValue); err != nil {
			return err
		}
	}
	return nil
}

// cleanText repairs, in place, every text cell of a source row that is not
// valid UTF-8, and records each repair. names are the row's source column
// names; the row id is cell 0. It returns the row id, repaired.
func (c *Context) cleanText(table string, names []string, row []any) (string, error) {
	rawID, _ := asText(row[0])
	id := validText(rawID)
	for i, v := range row {
		s, ok := v.(string)
		if !ok || utf8.ValidString(s) {
			continue
		}
		row[i] = validText(s)
		col := "?"
		if i < len(names) {
			col = names[i]
		}
		var raw any = s
		if contentColumns[col] {
			raw = nil // never copied: it may hold content
		}
		if err := c.Rejects.Add(table, id, col, raw, reasonNotUTF8, ActionReplacedValue); err != nil {
			return id, err
		}
	}
	return id, nil
}

// stamp reads a timestamp cell, flagging a non-UTC offset (the value is
// kept, converted to the exact instant). problem is non-empty when the
// cell is refused; the caller records that with its own action.
func (c *Context) stamp(table, id, col string, v any) (t time.Time, ok bool, problem string, err error) {
	t, ok, problem = asStamp(v)
	if ok {
		if note := offsetNote(v, t); note != "" {
			err = c.Rejects.Add(table, id, col, v, note, ActionFlagged)
		}
	}
	return t, ok, problem, err
}

// contentColumns may hold user or agent content among the columns read:
// their raw value is never written to rejects.
var contentColumns = map[string]bool{"metadata": true}

func specNames(spec models.TableSpec) []string {
	names := make([]string, len(spec.Columns))
	for i, c := range spec.Columns {
		names[i] = c.Name
	}
	return names
}

// ---- fact_subagent_context -------------------------------------------------

// SubagentSpec lists what is read from task_session_subagents. description
// is deliberately absent: it is content. The last three columns are
// computed by the source inside the snapshot, to flag rows that the
// store's own constraints should have prevented: how many rows share the
// row's id, how many share its unique key (task_session_id,
// agent_execution_id, tool_call_id) — (task_session_id, tool_call_id) on a
// store without agent_execution_id — and whether its session is gone.
func SubagentSpec() models.TableSpec {
	return models.TableSpec{Name: subagentSourceName, Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "task_session_id", Required: true},
		{Name: "task_id", Required: true},
		// Needed by dim_turn's per-turn counts (a plain nullable column in
		// every Kandev build that has the table).
		{Name: "turn_id", Required: true},
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
		{Name: "rows_sharing_id", Kind: models.KindCount, Expr: "COALESCE(di.n, 1)"},
		{Name: "rows_sharing_key", Kind: models.KindCount, Expr: "COALESCE(dk.n, 1)"},
		{Name: "session_missing", Kind: models.KindCount, Expr: sessionMissing},
	}, Join: duplicateJoin(subagentSourceName, "di") +
		` LEFT JOIN (SELECT task_session_id AS ks, {{agent_execution_id}} AS ke, tool_call_id AS kc, COUNT(*) AS n
			FROM task_session_subagents GROUP BY 1, 2, 3 HAVING COUNT(*) > 1) dk
			ON dk.ks = t.task_session_id AND dk.ke = {{t.agent_execution_id}} AND dk.kc = t.tool_call_id`}
}

// sessionMissing is 1 when the row's task_session_id has no task_sessions
// row (Kandev's foreign key cascades deletes, so only a store written with
// foreign keys off, or repaired by hand, holds such rows).
const sessionMissing = `CASE WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END`

// duplicateIDReason is the rejects reason of a row whose id n rows share.
func duplicateIDReason(n int64) string {
	return fmt.Sprintf("duplicate id: %d rows share it (the primary key was not enforced); every one is kept", n)
}

// duplicateJoin counts, for the scanned table (alias t), the rows sharing
// an id, when more than one does (a primary key that was not enforced).
func duplicateJoin(table, alias string) string {
	return ` LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM ` + table + ` GROUP BY id HAVING COUNT(*) > 1) ` + alias +
		` ON ` + alias + `.k = t.id`
}

var subagentNames = specNames(SubagentSpec())

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
	// Rows kept and flagged: sharing an id, sharing the unique key, whose
	// session is gone.
	DuplicateIDs, DuplicateKeys, Orphans int64
	Identity                             map[models.ExecutionIdentity]int64
	Window                               map[models.CaptureWindow]int64
	MaxObserved, MaxUpdated              time.Time
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
	id, err := s.ctx.cleanText(subagentSourceName, subagentNames, row)
	if err != nil {
		return err
	}
	observed, ok, problem, err := s.ctx.stamp(subagentSourceName, id, "observed_at", row[18])
	if err != nil {
		return err
	}
	if !ok {
		if problem == "" {
			problem = "observed_at is NULL"
		}
		return rej.Add(subagentSourceName, id, "observed_at", row[18], problem+": the row cannot be placed against capture_since", ActionQuarantinedRow)
	}
	if err := s.flag(id, row); err != nil {
		return err
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
		if err := rej.Add(subagentSourceName, id, "is_async", row[13], asyncProblem+": is_async written as false (the column is not nullable)", ActionReplacedValue); err != nil {
			return err
		}
	}
	b.Bool(asyncOK && async != 0, true)
	measured := false
	for i, col := range [...]string{"total_tokens", "tool_use_count", "duration_ms"} {
		n, valid, problem := asInt(row[14+i])
		switch {
		case valid && n < 0:
			valid, problem = false, ProblemNegative
		case valid && n > MaxMetric:
			valid, problem = false, ProblemImplausible
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
	settled, settledOK, err := s.ctx.optStamp(subagentSourceName, id, "settled_at", row[19])
	if err != nil {
		return err
	}
	b.Time(settled, settledOK)
	updated, updatedOK, err := s.ctx.optStamp(subagentSourceName, id, "updated_at", row[20])
	if err != nil {
		return err
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

// flag records, without changing the row, what the store's constraints
// should have prevented: a shared id, a shared unique key, a session that
// is gone. Every such row stays in the fact (nothing is dropped: which of
// two rows sharing a key is "right" is not knowable here).
func (s *Subagents) flag(id string, row []any) error {
	rej, st := s.ctx.Rejects, &s.Stats
	if n, _, _ := asInt(row[21]); n > 1 {
		st.DuplicateIDs++
		if err := rej.Add(subagentSourceName, id, "id", row[0],
			duplicateIDReason(n), ActionFlagged); err != nil {
			return err
		}
	}
	if n, _, _ := asInt(row[22]); n > 1 {
		st.DuplicateKeys++
		cols, key := "task_session_id, agent_execution_id, tool_call_id", fmt.Sprintf("%v|%v|%v", row[1], row[5], row[4])
		if s.ctx.Class.State.Shape == models.ShapePreAmendment && row[5] == nil {
			cols, key = "task_session_id, tool_call_id", fmt.Sprintf("%v|%v", row[1], row[4])
		}
		if err := rej.Add(subagentSourceName, id, cols, key,
			fmt.Sprintf("duplicate unique key (%s): %d rows share it (the store's unique constraint was not enforced); every one is kept", cols, n), ActionFlagged); err != nil {
			return err
		}
	}
	if n, _, _ := asInt(row[23]); n == 1 {
		st.Orphans++
		if err := rej.Add(subagentSourceName, id, "task_session_id", row[1],
			"orphan: no task_sessions row has this id (the session is gone); the row is kept and counted", ActionFlagged); err != nil {
			return err
		}
	}
	return nil
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
// dialects accept (SQLite scans the table: see models.SQLiteNotIndexed).
func fanoutJoin(key string) string {
	return ` LEFT JOIN (SELECT ` + key + ` AS k, COUNT(*) AS n,
		SUM(CASE WHEN source = 'live' THEN 1 ELSE 0 END) AS n_live,
		SUM(CASE WHEN source = 'backfill' THEN 1 ELSE 0 END) AS n_backfill
		FROM task_session_subagents ` + models.SQLiteNotIndexed + ` WHERE ` + key + ` IS NOT NULL GROUP BY ` + key + `) a ON a.k = t.id`
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
	spec.Columns = append(spec.Columns, models.ColumnSpec{Name: "rows_sharing_id", Kind: models.KindCount, Expr: "COALESCE(dup.n, 1)"})
	spec.Join += duplicateJoin("task_sessions", "dup")
	return spec
}

var sessionNames = specNames(SessionSpec(true))

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
	// Rows kept and flagged: sharing an id; (turns) whose session is gone.
	DuplicateIDs, Orphans int64
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
	id, err := s.ctx.cleanText("task_sessions", sessionNames, row)
	if err != nil {
		return err
	}
	if err := s.ctx.flagDuplicate("task_sessions", id, row[0], row[11], &s.Stats); err != nil {
		return err
	}
	s.ctx.lead(b)
	b.Str(id)
	task, _ := asText(row[1])
	b.Str(task)
	b.OptStr(asRef(row[2]))
	b.OptStr(asRef(row[3]))
	primary, ok, problem := asInt(row[4])
	if problem != "" {
		if err := s.ctx.Rejects.Add("task_sessions", id, "is_primary", row[4], problem, ActionNulledValue); err != nil {
			return err
		}
	}
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
	t, ok, err := c.optStamp(table, id, col, v)
	if err != nil {
		return t, false, err
	}
	b.Time(t, ok)
	return t, ok, nil
}

// optStamp reads a nullable timestamp: a value that does not parse is
// recorded and becomes NULL; a non-UTC offset is flagged.
func (c *Context) optStamp(table, id, col string, v any) (time.Time, bool, error) {
	t, ok, problem, err := c.stamp(table, id, col, v)
	if err != nil {
		return t, false, err
	}
	if problem != "" {
		if err := c.Rejects.Add(table, id, col, v, problem, ActionNulledValue); err != nil {
			return t, false, err
		}
	}
	return t, ok, nil
}

// flagDuplicate flags a row whose id other rows share (n is the count the
// source computed); the row is kept.
func (c *Context) flagDuplicate(table, id string, raw, n any, st *FanoutStats) error {
	count, _, _ := asInt(n)
	if count <= 1 {
		return nil
	}
	st.DuplicateIDs++
	return c.Rejects.Add(table, id, "id", raw,
		duplicateIDReason(count), ActionFlagged)
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
