package transform

import (
	"fmt"
	"slices"
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
	TableShortfall     = "fact_writer_shortfall"
	subagentSourceName = "task_session_subagents"
)

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
// valid UTF-8, and records each repair. names are the row's source column
// names; the row id is cell 0. It returns the row id, repaired.
func (c *Context) cleanText(table string, names []string, row []any) (string, error) {
	rawID, _ := asText(row[0])
	id := validText(rawID)
	for i, v := range row {
		if t, ok := v.(models.Truncated); ok {
			if t.Kind != models.KindText || (i < len(names) && contentColumns[names[i]]) {
				// The column's own reading refuses it, with its length:
				// a cut integer or instant would be another value.
				continue
			}
			var cell, raw any
			if t.HasPrefix {
				cell, raw = t.Prefix, t.Prefix
			}
			row[i], v = cell, cell
			col := "?"
			if i < len(names) {
				col = names[i]
			}
			if err := c.Rejects.Add(table, id, col, raw, truncatedReason(t), ActionTruncatedValue); err != nil {
				return id, err
			}
		}
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

// capped sets the cap of every column spec reads from the store (see
// models.MaxLabelBytes): identifiers and labels, the text of timestamps and
// integers, and metadata. The source applies it in its query, so no value
// longer than its cap is ever read whole. Computed columns are not capped.
func capped(spec models.TableSpec) models.TableSpec {
	for i, c := range spec.Columns {
		switch {
		case c.Expr != "":
		case contentColumns[c.Name]:
			spec.Columns[i].MaxBytes = models.MaxMetadataBytes
		case c.Kind == models.KindText:
			spec.Columns[i].MaxBytes = models.MaxLabelBytes
		default:
			spec.Columns[i].MaxBytes = models.MaxScalarBytes
		}
	}
	return spec
}

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
	return capped(models.TableSpec{Name: subagentSourceName, Alias: "t", Columns: []models.ColumnSpec{
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
		{Name: "turn_attribution", Kind: models.KindCount, Expr: turnAttribution},
	}, Join: duplicateJoin(subagentSourceName, "di") +
		` LEFT JOIN (SELECT task_session_id AS ks, {{agent_execution_id}} AS ke, tool_call_id AS kc, COUNT(*) AS n
			FROM task_session_subagents
			WHERE ` + keyFits("task_session_id") + ` AND ` + keyFits("{{agent_execution_id}}") + ` AND ` + keyFits("tool_call_id") + `
			GROUP BY 1, 2, 3 HAVING COUNT(*) > 1) dk
			ON dk.ks = ` + boundedKey("t.task_session_id") + ` AND dk.ke = ` + boundedKey("{{t.agent_execution_id}}") +
		` AND dk.kc = ` + boundedKey("t.tool_call_id")})
}

// keyFits and boundedKey keep every key the source compares — in a
// grouping, a join or a lookup — within models.SQLitePrefixBytes: SQLite
// loads a value whole to compare it (a GROUP BY over one 300 MB id cost
// 2 GB), and octet_length, which reads no content, decides first. A longer
// key is compared with nothing: its row shares no id or key and has no
// subagents by it (the row itself is kept, its value cut and listed in
// rejects). NULL keys matched nothing before either.
func keyFits(col string) string {
	return fmt.Sprintf("octet_length(%s) <= %d", col, models.SQLitePrefixBytes)
}

func boundedKey(col string) string {
	return fmt.Sprintf("CASE WHEN %s THEN %s END", keyFits(col), col)
}

// sessionMissing is 1 when the row's task_session_id has no task_sessions
// row (Kandev's foreign key cascades deletes, so only a store written with
// foreign keys off, or repaired by hand, holds such rows).
var sessionMissing = `CASE WHEN NOT (` + keyFits("t.task_session_id") + `) THEN 0 WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END`

// duplicateIDReason is the rejects reason of a row whose id n rows share.
func duplicateIDReason(n int64) string {
	return fmt.Sprintf("duplicate id: %d rows share it (the primary key was not enforced); every one is kept", n)
}

// turnAttribution is 0 when the row's turn_id is NULL or empty (ordinary,
// AC-2a), 1 when it names a turn of the snapshot, 2 when it names none (a
// key too long to compare names none).
var turnAttribution = `CASE WHEN t.turn_id IS NULL OR t.turn_id = '' THEN 0 WHEN NOT (` + keyFits("t.turn_id") +
	`) THEN 2 WHEN EXISTS (SELECT 1 FROM task_session_turns tt WHERE tt.id = t.turn_id) THEN 1 ELSE 2 END`

// attributions are turnAttribution's codes.
var attributions = [...]models.TurnAttribution{models.NullTurn, models.Attributed, models.MissingTurn}

// duplicateJoin counts, for the scanned table (alias t), the rows sharing
// an id, when more than one does (a primary key that was not enforced).
func duplicateJoin(table, alias string) string {
	return ` LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM ` + table + ` WHERE ` + keyFits("id") + ` GROUP BY id HAVING COUNT(*) > 1) ` + alias +
		` ON ` + alias + `.k = ` + boundedKey("t.id")
}

var subagentNames = specNames(SubagentSpec())

// subagentAttribution is the position of turn_attribution in SubagentSpec.
var subagentAttribution = SubagentSpec().Column("turn_attribution")

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
	str("turn_attribution"),
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
	code, _, _ := asInt(row[subagentAttribution])
	attribution := attributions[min(max(code, 0), 2)]
	b.Str(string(attribution))

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
		s.ctx.Unattributed[sess]++
	}
	if execValid && execID != models.ExecutionSentinel && IsSentinelVariant(execID) {
		st.SentinelVariants++
		if err := rej.Add(subagentSourceName, id, "agent_execution_id", row[5],
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

// evidenceColumns are read after every other column of a session or turn
// spec: the distinct tool calls of its rows and the live/backfill overlap.
func evidenceColumns(featurePresent bool) []models.ColumnSpec {
	if !featurePresent {
		return []models.ColumnSpec{
			{Name: "distinct_tool_calls", Kind: models.KindCount, Expr: "0"},
			{Name: "live_backfill_overlap", Kind: models.KindCount, Expr: "0"},
		}
	}
	return []models.ColumnSpec{
		{Name: "distinct_tool_calls", Kind: models.KindCount, Expr: "COALESCE(a.n_distinct, 0)"},
		{Name: "live_backfill_overlap", Kind: models.KindCount, Expr: "COALESCE(a.overlap, 0)"},
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
// dialects accept (SQLite scans the table: see models.SQLiteNotIndexed; and
// groups the subquery's computed columns, never source itself: see
// models.SQLiteNoFlatten).
func fanoutJoin(key string) string {
	// overlap = |live tool calls| + |backfill tool calls| - |all tool calls|:
	// the tool calls that have both a live and a backfill row.
	return ` LEFT JOIN (SELECT k, COUNT(*) AS n, SUM(live) AS n_live, SUM(backfill) AS n_backfill,
			COUNT(DISTINCT tc) AS n_distinct,
			COUNT(DISTINCT CASE WHEN live = 1 THEN tc END) + COUNT(DISTINCT CASE WHEN backfill = 1 THEN tc END) - COUNT(DISTINCT tc) AS overlap
		FROM (SELECT ` + key + ` AS k, CASE WHEN tool_call_id <> '' THEN ` + boundedKey("tool_call_id") + ` END AS tc,
			CASE WHEN NOT (` + keyFits("source") + `) THEN 0 WHEN source = 'live' THEN 1 ELSE 0 END AS live,
			CASE WHEN NOT (` + keyFits("source") + `) THEN 0 WHEN source = 'backfill' THEN 1 ELSE 0 END AS backfill
			FROM task_session_subagents ` + models.SQLiteNotIndexed + ` WHERE ` + keyFits(key) + ` ` + models.SQLiteNoFlatten + `) f
		GROUP BY k) a ON a.k = ` + boundedKey("t.id")
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
	spec.Columns = append(spec.Columns, evidenceColumns(featurePresent)...)
	spec.Join += duplicateJoin("task_sessions", "dup")
	return capped(spec)
}

var sessionNames = specNames(SessionSpec(true))

// sessionDistinct is the position of distinct_tool_calls (then
// live_backfill_overlap) in SessionSpec.
var sessionDistinct = SessionSpec(true).Column("distinct_tool_calls")

var fanoutFields = []arrow.Field{
	integer("subagents_observed"), integer("subagents_observed_live"), integer("subagents_observed_backfill"),
	optInt("fanout"), str("fanout_completeness"), str("capture_window"),
	integer("distinct_tool_calls"), integer("live_backfill_overlap"), integer("messages_expected"),
	integer("fanout_lower_bound"), optInt("writer_shortfall"), boolean("capture_boundary_ambiguous"),
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
	// Downgraded from complete: by the writer shortfall, by the ambiguous
	// second, by unplaced rows of the session (turns). MessagesOnly have
	// messages but no row (a lower bound from messages alone). Overlap
	// have a backfill row duplicating a live row's tool call.
	Shortfall, Ambiguous, Unplaceable, MessagesOnly, Overlap int64
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
	n, _, _ := asInt(row[8])
	live, _, _ := asInt(row[9])
	backfill, _, _ := asInt(row[10])
	distinct, _, _ := asInt(row[sessionDistinct])
	overlap, _, _ := asInt(row[sessionDistinct+1])
	c := s.ctx.fanout(b, &s.Stats, FanoutInput{Started: started, StartedOK: startedOK, Rows: n, Overlap: overlap, Distinct: distinct,
		Messages: s.ctx.SessionEvidence[id]}, live, backfill)
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

// fanout appends the count and completeness columns (fanoutFields order).
func (c *Context) fanout(b *Builder, st *FanoutStats, in FanoutInput, live, backfill int64) models.FanoutCompleteness {
	r := c.Class.Fanout(in)
	b.Int(in.Rows, true)
	b.Int(live, true)
	b.Int(backfill, true)
	b.Int(r.Fanout, r.Exact)
	b.Str(string(r.Completeness))
	b.Str(string(c.Class.Window(in.Started, in.StartedOK)))
	b.Int(in.Distinct, true)
	b.Int(in.Overlap, true)
	b.Int(in.Messages.Expected, true)
	b.Int(r.LowerBound, true)
	b.Int(in.Messages.Shortfall, c.ShortfallMeasured)
	b.Bool(r.Ambiguous, true)
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
	if in.Rows == 0 && in.Messages.Expected > 0 {
		st.MessagesOnly++
	}
	if in.Overlap > 0 {
		st.Overlap++
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
