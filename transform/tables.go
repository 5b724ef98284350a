package transform

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev-extract/models"
)

// Table names in the warehouse (the catalog's, models.Table*).
const (
	TableFact         = models.TableFact
	TableInstallation = models.TableInstallation
	TableWriterHealth = models.TableWriterHealth
	TableTask         = models.TableTask
	TableSession      = models.TableSession
	TableTurn         = models.TableTurn
	TableWorkflow     = models.TableWorkflow
	TableWorkflowStep = models.TableWorkflowStep
	TableDisclosures  = models.TableDisclosures
	TableRejects      = models.TableRejects
	TableShortfall    = models.TableShortfall
)

// subagentSourceName is the fact's source table, as rejects name it.
const subagentSourceName = models.SourceSubagents

// Context is what every transformer of one run needs.
type Context struct {
	Installation string
	Run          string
	Class        Classifier
	Rejects      *Rejects
	// TurnEvidence and SessionEvidence are what the subagent-task messages
	// say per turn and session (set before those tables are read).
	TurnEvidence, SessionEvidence map[string]models.MessageCounts
	// Unattributed counts, per session, the subagent rows whose turn_id is
	// NULL or names no turn (filled while the fact is transformed, before
	// the turns are).
	Unattributed map[string]int64
	// ShortfallMeasured is set when writer health's shortfall was
	// measured (capture_since valid and the subagent table present).
	ShortfallMeasured bool
}

// lead sets the columns that lead every table (0 and 1: see
// models.Table.Columns).
func (c *Context) lead(b *Builder) {
	b.Str(0, c.Installation)
	b.Str(1, c.Run)
}

// ---- rejects ---------------------------------------------------------------

// RejectsSchema describes quarantined rows and refused values.
var RejectsSchema = models.MustTable(models.TableRejects).Schema()

// rejectsOut are the rejects table's columns.
var rejectsOut = func() (c struct{ table, row, column, raw, reason, action int }) {
	t := models.MustTable(models.TableRejects)
	c.table, c.row, c.column, c.raw = t.Col("table_name"), t.Col("row_id"), t.Col("column_name"), t.Col("raw_value")
	c.reason, c.action = t.Col("reason"), t.Col("action")
	return c
}()

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
	// ActionTruncatedValue: the row is kept with an identifier or label
	// cut to its first models.MaxLabelBytes bytes (at a character
	// boundary), or NULL when no prefix could be read without loading the
	// whole value; the reason gives the stored length in bytes. The cut is
	// made by the source query: the whole value is never read.
	ActionTruncatedValue = "truncated_value"
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
	Nulled, Replaced, Flagged, Truncated int64
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
	case ActionTruncatedValue:
		r.Truncated++
	}
	b, o := r.b, &rejectsOut
	r.ctx.lead(b)
	b.Str(o.table, table)
	id, _ := rawText(rowID)
	b.OptStr(o.row, id, rowID != "")
	b.Str(o.column, column)
	text, ok := rawText(raw)
	b.OptStr(o.raw, text, ok)
	b.Str(o.reason, reason)
	b.Str(o.action, action)
	return b.EndRow()
}

const reasonNotUTF8 = "text is not valid UTF-8: each invalid byte sequence was replaced with U+FFFD (the raw value shows the bytes as \\xNN)"

// ByAction is the count of entries per action, every action present:
// provenance's rejects_by_action.
func (r *Rejects) ByAction() map[string]int64 {
	return map[string]int64{
		ActionQuarantinedRow: r.Rows, ActionNulledValue: r.Nulled, ActionReplacedValue: r.Replaced,
		ActionFlagged: r.Flagged, ActionTruncatedValue: r.Truncated,
	}
}

// MetaText records, for each kandev_meta value the extractor reads
// (models.MetaKeys), what it got on its way to the warehouse: a value over
// the cap is cut (truncated_value, and an activation key so cut is
// unparseable); a key that several rows share (a lost primary key) is
// flagged, the first row read being used; and, for the values
// fact_installation_state keeps (the three activation keys and
// kandev_version), one that is not valid UTF-8 is repaired. The row id is
// the key.
func (r *Rejects) MetaText(meta []models.MetaEntry) error {
	for _, e := range meta {
		if !slices.Contains(models.MetaKeys, e.Key) {
			continue
		}
		if e.Truncated() {
			t := models.Truncated{Prefix: e.Value, HasPrefix: e.HasPrefix, Bytes: e.Bytes, Cap: models.MaxLabelBytes}
			var raw any
			if e.HasPrefix {
				raw = e.Value
			}
			if err := r.Add("kandev_meta", e.Key, "value", raw, truncatedReason(t), ActionTruncatedValue); err != nil {
				return err
			}
		}
		if e.Rows > 1 {
			if err := r.Add("kandev_meta", e.Key, "key", e.Key,
				fmt.Sprintf("duplicate key: %d kandev_meta rows have it (the primary key was not enforced); the first one read is used", e.Rows),
				ActionFlagged); err != nil {
				return err
			}
		}
		switch e.Key {
		case models.KeyCaptureSince, models.KeyBackfillThrough, models.KeyExecutionSince, models.KeyKandevVersion:
		default:
			continue // read, but not copied into the warehouse's tables
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

// truncatedReason is the rejects reason of a value cut at its cap.
func truncatedReason(t models.Truncated) string {
	if t.HasPrefix {
		return fmt.Sprintf("value is %d bytes, over the %d-byte cap: the warehouse keeps its first %d bytes (cut by the source query at a character boundary)",
			t.Bytes, t.Cap, len(t.Prefix))
	}
	return fmt.Sprintf("value is %d bytes, over the %d-byte cap; SQLite cannot read part of a value without loading all of it, "+
		"so a value over %d bytes is measured but not read: the warehouse holds NULL", t.Bytes, t.Cap, models.SQLitePrefixBytes)
}

// cleanText repairs, in place, every text cell of a source row that is not
// valid UTF-8, and records each repair. cols are the row's source columns
// (models.Table.Read); the row id is cell 0. It returns the row id,
// repaired.
func (c *Context) cleanText(table string, cols []models.SourceColumn, row []any) (string, error) {
	rawID, _ := asText(row[0])
	id := validText(rawID)
	for i, v := range row {
		if t, ok := v.(models.Truncated); ok {
			if t.Kind != models.KindText || (i < len(cols) && cols[i].Content) {
				// The column's own reading refuses it, with its length:
				// a cut integer or instant would be another value.
				continue
			}
			var cell, raw any
			if t.HasPrefix {
				cell, raw = t.Prefix, t.Prefix
			}
			row[i], v = cell, cell
			if err := c.Rejects.Add(table, id, colName(cols, i), raw, truncatedReason(t), ActionTruncatedValue); err != nil {
				return id, err
			}
		}
		s, ok := v.(string)
		if !ok || utf8.ValidString(s) {
			continue
		}
		row[i] = validText(s)
		var raw any = s
		if i < len(cols) && cols[i].Content {
			raw = nil // never copied: it may hold content
		}
		if err := c.Rejects.Add(table, id, colName(cols, i), raw, reasonNotUTF8, ActionReplacedValue); err != nil {
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

// colName is the name of a row's cell i, for rejects.
func colName(cols []models.SourceColumn, i int) string {
	if i < len(cols) {
		return cols[i].Name
	}
	return "?"
}

// ---- fact_subagent_context -------------------------------------------------

var factTable = models.MustTable(models.TableFact)

// FactSchema is fact_subagent_context: one row per subagent invocation,
// classified.
var FactSchema = factTable.Schema()

// factIn are the positions of the scan's cells, factOut the fact's
// columns: resolved once, by name, from the catalog.
var factIn, factOut = func() (in factInCols, out factOutCols) {
	t := factTable
	r := t.ReadCol
	in = factInCols{id: r("id"), session: r("task_session_id"), task: r("task_id"), turn: r("turn_id"), toolCall: r("tool_call_id"),
		execID: r("agent_execution_id"), parent: r("parent_tool_call_id"), toolStatus: r("tool_status"), async: r("is_async"),
		source: r("source"), observed: r("observed_at"), settled: r("settled_at"), updated: r("updated_at"),
		sharingID: r("rows_sharing_id"), sharingKey: r("rows_sharing_key"), sessionMissing: r("session_missing"), attribution: r("turn_attribution")}
	c := t.Col
	out = factOutCols{id: c("subagent_id"), session: c("task_session_id"), task: c("task_id"), turn: c("turn_id"), toolCall: c("tool_call_id"),
		parent: c("parent_tool_call_id"), nested: c("is_nested"), execID: c("agent_execution_id"), execution: c("execution_id"),
		identity: c("execution_identity"), identityReasons: c("execution_identity_reasons"), toolStatus: c("tool_status"), terminal: c("is_terminal"), async: c("is_async"),
		measured: c("is_measured"), source: c("source"), observed: c("observed_at"), settled: c("settled_at"), updated: c("updated_at"),
		window: c("capture_window"), ambiguous: c("capture_boundary_ambiguous"), captureSince: c("capture_since"),
		executionSince: c("execution_since"), activation: c("activation_state"), attribution: c("turn_attribution")}
	// Copied as read: the same name in the scan and the fact.
	for _, name := range []string{"subagent_type", "agent_id", "child_session_id", "model", "agent_status"} {
		out.refs = append(out.refs, [2]int{r(name), c(name)})
	}
	// Reported metrics: NULL stays NULL.
	for _, name := range []string{"total_tokens", "tool_use_count", "duration_ms"} {
		out.metrics = append(out.metrics, factMetric{name, r(name), c(name)})
	}
	return in, out
}()

type factInCols struct {
	id, session, task, turn, toolCall, execID, parent, toolStatus, async, source   int
	observed, settled, updated, sharingID, sharingKey, sessionMissing, attribution int
}

type factOutCols struct {
	id, session, task, turn, toolCall, parent, nested, execID, execution, identity, identityReasons, toolStatus int
	terminal, async, measured, source, observed, settled, updated, window, ambiguous                            int
	captureSince, executionSince, activation, attribution                                                       int
	refs                                                                                                        [][2]int // [scan, fact]
	metrics                                                                                                     []factMetric
}

type factMetric struct {
	name    string
	in, out int
}

// duplicateIDReason is the rejects reason of a row whose id n rows share.
func duplicateIDReason(n int64) string {
	return fmt.Sprintf("duplicate id: %d rows share it (the primary key was not enforced); every one is kept", n)
}

// attributions are the codes of the scan's turn_attribution (extract's
// SQL: 0 turn_id NULL or empty, 1 names a turn of the snapshot, 2 names
// none).
var attributions = [...]models.TurnAttribution{models.NullTurn, models.Attributed, models.MissingTurn}

// SubagentStats are the counts disclosures and provenance need.
type SubagentStats struct {
	Rows, Live, Backfill, OtherSource int64
	Terminal, Measured, Ambiguous     int64
	// Rows kept and flagged: sharing an id, sharing the unique key, whose
	// session is gone.
	DuplicateIDs, DuplicateKeys, Orphans int64
	Identity                             map[models.ExecutionIdentity]int64
	Window                               map[models.CaptureWindow]int64
	// NullTurn and MissingTurn rows cannot be placed in a turn;
	// SentinelVariants carry an agent_execution_id that only differs from
	// 'unknown' by case or whitespace, or is empty (AC-31).
	NullTurn, MissingTurn, SentinelVariants int64
	MaxObserved, MaxUpdated                 time.Time
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

// Append transforms one source row (the catalog's Read order).
func (s *Subagents) Append(row []any) error {
	rej, in, o := s.ctx.Rejects, &factIn, &factOut
	id, err := s.ctx.cleanText(subagentSourceName, factTable.Read, row)
	if err != nil {
		return err
	}
	observed, ok, problem, err := s.ctx.stamp(subagentSourceName, id, "observed_at", row[in.observed])
	if err != nil {
		return err
	}
	if !ok {
		if problem == "" {
			problem = "observed_at is NULL"
		}
		return rej.Add(subagentSourceName, id, "observed_at", row[in.observed], problem+": the row cannot be placed against capture_since", ActionQuarantinedRow)
	}
	if err := s.flag(id, row); err != nil {
		return err
	}
	source, _ := asText(row[in.source])
	execID, execValid := asText(row[in.execID])
	toolStatus, toolValid := asText(row[in.toolStatus])
	rc := s.ctx.Class.Row(observed, source, execID, execValid, toolStatus, toolValid)

	b := s.b
	s.ctx.lead(b)
	b.Str(o.id, id)
	sess, _ := asText(row[in.session])
	b.Str(o.session, sess)
	task, _ := asText(row[in.task])
	b.Str(o.task, task)
	turn, turnOK := asRef(row[in.turn])
	b.OptStr(o.turn, turn, turnOK)
	tc, _ := asText(row[in.toolCall])
	b.Str(o.toolCall, tc)
	parent, nested := asRef(row[in.parent])
	b.OptStr(o.parent, parent, nested)
	b.Bool(o.nested, nested, true)
	b.OptStr(o.execID, execID, execValid)
	b.OptStr(o.execution, rc.ExecutionID, rc.Identity == models.ExecRecorded)
	b.Str(o.identity, string(rc.Identity))
	b.Str(o.identityReasons, rc.IdentityReasons.String())
	for _, ref := range o.refs { // subagent_type, agent_id, child_session_id, model, agent_status
		v, ok := asRef(row[ref[0]])
		b.OptStr(ref[1], v, ok)
	}
	b.OptStr(o.toolStatus, toolStatus, toolValid)
	b.Bool(o.terminal, rc.Terminal, true)
	async, asyncOK, asyncProblem := asInt(row[in.async])
	if asyncProblem != "" {
		if err := rej.Add(subagentSourceName, id, "is_async", row[in.async], asyncProblem+": is_async written as false (the column is not nullable)", ActionReplacedValue); err != nil {
			return err
		}
	}
	b.Bool(o.async, asyncOK && async != 0, true)
	measured := false
	for _, m := range o.metrics {
		n, valid, problem := asInt(row[m.in])
		switch {
		case valid && n < 0:
			valid, problem = false, ProblemNegative
		case valid && n > MaxMetric:
			valid, problem = false, ProblemImplausible
		}
		if problem != "" {
			if err := rej.Add(subagentSourceName, id, m.name, row[m.in], problem, ActionNulledValue); err != nil {
				return err
			}
		}
		measured = measured || valid
		b.Int(m.out, n, valid) // NULL stays NULL: never 0-filled (AC-7)
	}
	b.Bool(o.measured, measured, true)
	b.Str(o.source, source)
	b.Time(o.observed, observed, true)
	settled, settledOK, err := s.ctx.optStamp(subagentSourceName, id, "settled_at", row[in.settled])
	if err != nil {
		return err
	}
	b.Time(o.settled, settled, settledOK)
	updated, updatedOK, err := s.ctx.optStamp(subagentSourceName, id, "updated_at", row[in.updated])
	if err != nil {
		return err
	}
	b.Time(o.updated, updated, updatedOK)
	b.Str(o.window, string(rc.Window))
	b.Bool(o.ambiguous, rc.BoundaryAmbiguous, true)
	cs, es := s.ctx.Class.State.CaptureSince, s.ctx.Class.State.ExecutionSince
	b.Time(o.captureSince, cs.At, cs.Valid())
	b.Time(o.executionSince, es.At, es.Valid())
	b.Str(o.activation, string(s.ctx.Class.State.Activation))
	code, _, _ := asInt(row[in.attribution])
	attribution := attributions[min(max(code, 0), 2)]
	b.Str(o.attribution, string(attribution))

	st := &s.Stats
	st.Rows++
	switch attribution {
	case models.NullTurn:
		st.NullTurn++
	case models.MissingTurn:
		st.MissingTurn++
	}
	if attribution != models.Attributed {
		if s.ctx.Unattributed == nil {
			s.ctx.Unattributed = map[string]int64{}
		}
		if _, ok := s.ctx.Unattributed[sess]; !ok {
			sess = strings.Clone(sess) // kept: not the reader's chunk of row values
		}
		s.ctx.Unattributed[sess]++
	}
	if execValid && execID != models.ExecutionSentinel && IsSentinelVariant(execID) {
		st.SentinelVariants++
		if err := rej.Add(subagentSourceName, id, "agent_execution_id", row[in.execID],
			"not the 'unknown' sentinel but a variant of it (empty, blank, or differing in case or whitespace), which AC-31 forbids: classified as unrecorded, never an execution", ActionFlagged); err != nil {
			return err
		}
	}
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
	rej, st, in := s.ctx.Rejects, &s.Stats, &factIn
	if n, _, _ := asInt(row[in.sharingID]); n > 1 {
		st.DuplicateIDs++
		if err := rej.Add(subagentSourceName, id, "id", row[in.id],
			duplicateIDReason(n), ActionFlagged); err != nil {
			return err
		}
	}
	if n, _, _ := asInt(row[in.sharingKey]); n > 1 {
		st.DuplicateKeys++
		cols, key := "task_session_id, agent_execution_id, tool_call_id", fmt.Sprintf("%v|%v|%v", row[in.session], row[in.execID], row[in.toolCall])
		if s.ctx.Class.State.Shape == models.ShapePreAmendment && row[in.execID] == nil {
			cols, key = "task_session_id, tool_call_id", fmt.Sprintf("%v|%v", row[in.session], row[in.toolCall])
		}
		if err := rej.Add(subagentSourceName, id, cols, key,
			fmt.Sprintf("duplicate unique key (%s): %d rows share it (the store's unique constraint was not enforced); every one is kept", cols, n), ActionFlagged); err != nil {
			return err
		}
	}
	if n, _, _ := asInt(row[in.sessionMissing]); n == 1 {
		st.Orphans++
		if err := rej.Add(subagentSourceName, id, "task_session_id", row[in.session],
			"orphan: no task_sessions row has this id (the session is gone); the row is kept and counted", ActionFlagged); err != nil {
			return err
		}
	}
	return nil
}

// ---- fan-out dimensions ----------------------------------------------------

var sessionTable = models.MustTable(models.TableSession)

// SessionSchema is dim_session: exactly one row per task_sessions row.
var SessionSchema = sessionTable.Schema()

// fanoutIn are the positions of the per-turn or per-session counts the
// source computes in a scan; fanoutOut the dimension's fan-out columns.
type fanoutIn struct{ observed, live, backfill, sharingID, distinct, overlap int }

type fanoutOut struct {
	observed, live, backfill, fanout, completeness, window, distinct, overlap int
	expected, lowerBound, shortfall, ambiguous, reasons                       int
}

func resolveFanout(t *models.Table) (in fanoutIn, out fanoutOut) {
	r, c := t.ReadCol, t.Col
	in = fanoutIn{observed: r("subagents_observed"), live: r("subagents_live"), backfill: r("subagents_backfill"),
		sharingID: r("rows_sharing_id"), distinct: r("distinct_tool_calls"), overlap: r("live_backfill_overlap")}
	out = fanoutOut{observed: c("subagents_observed"), live: c("subagents_observed_live"), backfill: c("subagents_observed_backfill"),
		fanout: c("fanout"), completeness: c("fanout_completeness"), window: c("capture_window"), distinct: c("distinct_tool_calls"),
		overlap: c("live_backfill_overlap"), expected: c("messages_expected"), lowerBound: c("fanout_lower_bound"),
		shortfall: c("writer_shortfall"), ambiguous: c("capture_boundary_ambiguous"), reasons: c("completeness_reasons")}
	return in, out
}

// sessionIn and sessionOut are dim_session's cells and columns.
var sessionIn, sessionOut = func() (in sessionInCols, out sessionOutCols) {
	t := sessionTable
	r, c := t.ReadCol, t.Col
	in = sessionInCols{id: r("id"), task: r("task_id"), state: r("state"), profile: r("agent_profile_id"), primary: r("is_primary"),
		started: r("started_at"), completed: r("completed_at"), updated: r("updated_at")}
	out = sessionOutCols{id: c("session_id"), task: c("task_id"), state: c("state"), profile: c("agent_profile_id"), primary: c("is_primary"),
		started: c("started_at"), completed: c("completed_at"), updated: c("updated_at")}
	in.fanoutIn, out.fanoutOut = resolveFanout(t)
	return in, out
}()

type sessionInCols struct {
	id, task, state, profile, primary, started, completed, updated int
	fanoutIn
}

type sessionOutCols struct {
	id, task, state, profile, primary, started, completed, updated int
	fanoutOut
}

// FanoutStats counts completeness classes for disclosures.
type FanoutStats struct {
	Rows         int64
	Completeness map[models.FanoutCompleteness]int64
	MaxUpdated   time.Time
	// Rows kept and flagged: sharing an id; (turns) whose session is gone.
	DuplicateIDs, Orphans int64
	// Downgraded from complete: by the writer shortfall, by the ambiguous
	// second, by unplaced rows of the session (turns). MessagesOnly have
	// messages but no row (a lower bound from messages alone). Overlap
	// have a backfill row duplicating a live row's tool call; RowsBeyond
	// more rows than that leaves tool calls (Classifier.Fanout: a lower
	// bound, whenever they started).
	Shortfall, Ambiguous, Unplaceable, MessagesOnly, Overlap, RowsBeyond int64
	// Of those that started before capture_since: lower_bound, unknown.
	BeforeLower, BeforeUnknown int64
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

// Append transforms one task_sessions row (the catalog's Read order).
func (s *Sessions) Append(row []any) error {
	b, in, o := s.b, &sessionIn, &sessionOut
	id, err := s.ctx.cleanText(models.SourceSessions, sessionTable.Read, row)
	if err != nil {
		return err
	}
	if err := s.ctx.flagDuplicate(models.SourceSessions, id, row[in.id], row[in.sharingID], &s.Stats); err != nil {
		return err
	}
	s.ctx.lead(b)
	b.Str(o.id, id)
	task, _ := asText(row[in.task])
	b.Str(o.task, task)
	state, ok := asRef(row[in.state])
	b.OptStr(o.state, state, ok)
	profile, ok := asRef(row[in.profile])
	b.OptStr(o.profile, profile, ok)
	primary, ok, problem := asInt(row[in.primary])
	if problem != "" {
		if err := s.ctx.Rejects.Add(models.SourceSessions, id, "is_primary", row[in.primary], problem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.Bool(o.primary, primary != 0, ok)
	started, startedOK, err := s.ctx.stampCol(b, o.started, models.SourceSessions, id, "started_at", row[in.started])
	if err != nil {
		return err
	}
	if _, _, err := s.ctx.stampCol(b, o.completed, models.SourceSessions, id, "completed_at", row[in.completed]); err != nil {
		return err
	}
	updated, updatedOK, err := s.ctx.stampCol(b, o.updated, models.SourceSessions, id, "updated_at", row[in.updated])
	if err != nil {
		return err
	}
	if updatedOK && updated.After(s.Stats.MaxUpdated) {
		s.Stats.MaxUpdated = updated
	}
	n, _, _ := asInt(row[in.observed])
	live, _, _ := asInt(row[in.live])
	backfill, _, _ := asInt(row[in.backfill])
	distinct, _, _ := asInt(row[in.distinct])
	overlap, _, _ := asInt(row[in.overlap])
	c := s.ctx.fanout(b, &o.fanoutOut, &s.Stats, FanoutInput{Started: started, StartedOK: startedOK, Rows: n, Overlap: overlap, Distinct: distinct,
		Messages: s.ctx.SessionEvidence[id]}, live, backfill)
	s.Stats.Rows++
	s.Stats.Completeness[c]++
	return b.EndRow()
}

// stampCol sets timestamp column i, recording a refused value.
func (c *Context) stampCol(b *Builder, i int, table, id, col string, v any) (time.Time, bool, error) {
	t, ok, err := c.optStamp(table, id, col, v)
	if err != nil {
		return t, false, err
	}
	b.Time(i, t, ok)
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

// fanout sets the count and completeness columns o.
func (c *Context) fanout(b *Builder, o *fanoutOut, st *FanoutStats, in FanoutInput, live, backfill int64) models.FanoutCompleteness {
	r := c.Class.Fanout(in)
	b.Int(o.observed, in.Rows, true)
	b.Int(o.live, live, true)
	b.Int(o.backfill, backfill, true)
	b.Int(o.fanout, r.Fanout, r.Exact)
	b.Str(o.completeness, string(r.Completeness))
	b.Str(o.reasons, r.Reasons.String())
	b.Str(o.window, string(c.Class.Window(in.Started, in.StartedOK)))
	b.Int(o.distinct, in.Distinct, true)
	b.Int(o.overlap, in.Overlap, true)
	b.Int(o.expected, in.Messages.Expected, true)
	b.Int(o.lowerBound, r.LowerBound, true)
	b.Int(o.shortfall, in.Messages.Shortfall, c.ShortfallMeasured)
	b.Bool(o.ambiguous, r.Ambiguous, true)
	if r.Completeness != models.FanoutComplete && c.Class.State.CaptureSince.Valid() && in.StartedOK && !in.Started.Before(c.Class.State.CaptureSince.At) {
		switch {
		case in.Messages.Shortfall > 0:
			st.Shortfall++
		case r.Ambiguous:
			st.Ambiguous++
		case in.Unattributed > 0:
			st.Unplaceable++
		}
	}
	if r.Reasons&models.ReasonStartedBeforeCapture != 0 {
		switch r.Completeness {
		case models.FanoutLowerBound:
			st.BeforeLower++
		case models.FanoutUnknown:
			st.BeforeUnknown++
		}
	}
	if in.Rows == 0 && in.Messages.Expected > 0 {
		st.MessagesOnly++
	}
	if in.Overlap > 0 {
		st.Overlap++
	}
	if in.Rows-in.Overlap > in.Distinct {
		st.RowsBeyond++
	}
	return r.Completeness
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
