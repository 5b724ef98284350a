package transform

import (
	"fmt"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// Disclosure is one plain-words rule that applies to an installation's data.
type Disclosure struct {
	Rule     string
	Severity string // info, warning
	Text     string
	Instant  time.Time // zero when the rule names none
	Count    int64
	HasCount bool
}

// Facts is what the disclosures are computed from: the installation state
// and the counts the run actually read.
type Facts struct {
	State    models.InstallationState
	Subagent SubagentStats
	Sessions FanoutStats
	Turns    FanoutStats
	// The plain dimensions: tasks, workflows, workflow_steps.
	Tasks, Workflows, Steps DimStats
	Rejected                int64
	RejRows                 int64
	Health                  models.Health
}

const tsLayout = "2006-01-02T15:04:05.999999999Z07:00"

// Disclose states, per rule, what an analyst must know to read the data.
func Disclose(f Facts) []Disclosure {
	var out []Disclosure
	add := func(rule, sev string, at time.Time, count int64, hasCount bool, format string, args ...any) {
		out = append(out, Disclosure{Rule: rule, Severity: sev, Text: fmt.Sprintf(format, args...),
			Instant: at, Count: count, HasCount: hasCount})
	}
	st, sa := f.State, f.Subagent
	turnsLower, turnsUnknown := f.Turns.Completeness[models.FanoutLowerBound], f.Turns.Completeness[models.FanoutUnknown]
	sessLower, sessUnknown := f.Sessions.Completeness[models.FanoutLowerBound], f.Sessions.Completeness[models.FanoutUnknown]

	if st.Shape == models.ShapeAbsent {
		add("feature_absent", "warning", time.Time{}, f.Sessions.Rows, true,
			"This store has no task_session_subagents table (a Kandev build from before subagent capture). "+
				"Fan-out is never exact here: it is a lower bound from subagent-task messages where they exist (%s, %s) and UNKNOWN, not zero, elsewhere (%s, %s): "+
				"the absence of a row is not the absence of a subagent.",
			turns(turnsLower), sessions(sessLower), turns(turnsUnknown), sessions(sessUnknown))
		out = append(out, f.provenRules()...)
		out = append(out, f.integrityRules()...)
		return append(out, f.rejectRules()...)
	}
	for _, k := range []models.ActivationKey{st.CaptureSince, st.BackfillThrough, st.ExecutionSince} {
		if k.State == models.KeyUnparseable {
			add("key_unparseable", "warning", time.Time{}, 0, false,
				"kandev_meta key %s holds %q, which is not an RFC 3339 instant (%s). No boundary is published from it, and it is not treated as absent.",
				k.Name, *k.Raw, k.Problem)
		}
	}
	if !st.CaptureSince.Valid() {
		why := "is absent"
		if st.CaptureSince.State == models.KeyUnparseable {
			why = "does not parse"
		}
		add("no_capture_boundary", "warning", time.Time{}, sa.Rows, true,
			"subagent_context_capture_since %s, so no capture boundary is known. The subagent rows (%d) are real measurements, "+
				"but no count is complete: fan-out is a lower bound where rows exist (%s, %s) and UNKNOWN, not zero, where none do (%s, %s).",
			why, sa.Rows, turns(turnsLower), sessions(sessLower), turns(turnsUnknown), sessions(sessUnknown))
	} else {
		c := st.CaptureSince
		add("capture_boundary", "info", c.At, sa.Window[models.BeforeCapture], true,
			"Subagent capture is complete from %s (subagent_context_capture_since = %q): fan-out of activity that started at or after it is exact, and a zero there is a true zero. "+
				"Activity that started before it has fan-out that is a lower bound (%s, %s with rows) or UNKNOWN, not zero (%s, %s without rows). "+
				"The rows observed before it (%d) are real measurements and are kept.",
			c.At.Format(tsLayout), *c.Raw, turns(f.Turns.BeforeLower), sessions(f.Sessions.BeforeLower), turns(f.Turns.BeforeUnknown), sessions(f.Sessions.BeforeUnknown), sa.Window[models.BeforeCapture])
		if c.Precision == models.PrecisionSecond {
			add("second_precision_boundary", "warning", c.At, sa.Ambiguous, true,
				"subagent_context_capture_since (%q) is only second-precise (written by an older Kandev build and never rewritten, as AC-24 requires). "+
					"The true boundary lies somewhere in the second after it: %s observed in that second %s flagged capture_boundary_ambiguous.",
				*c.Raw, rows(sa.Ambiguous), agree(sa.Ambiguous, "is", "are"))
		}
	}
	switch st.BackfillThrough.State {
	case models.KeyAbsent:
		if st.CaptureSince.Valid() {
			add("partial_key_pair", "warning", time.Time{}, 0, false,
				"subagent_context_backfill_through is missing while capture_since is present: a partial key pair that a pre-amendment Kandev build could leave. "+
					"capture_since still bounds completeness; whether history before it was backfilled is not stated.")
		}
	case models.KeyNoneMatched:
		add("backfill_matched_nothing", "info", time.Time{}, 0, false,
			"subagent_context_backfill_through is '' (the state of every fresh install): the backfill matched nothing, so no history before capture_since is claimed as covered, "+
				"and there was none to recover. This is not a missing boundary; capture_since is the boundary that matters.")
	case models.KeyPresent:
		b := st.BackfillThrough
		add("backfill_through", "info", b.At, 0, false,
			"The one-time backfill recovered subagents from message metadata up to %s (subagent_context_backfill_through = %q).",
			b.At.Format(tsLayout), *b.Raw)
	}
	if sa.Backfill > 0 {
		add("backfill_provenance", "warning", time.Time{}, sa.Backfill, true,
			"%d of %d rows came from the backfill (source = 'backfill', recovered from message metadata) and are not like-for-like with the live rows (%d): "+
				"they carry no execution identity and only what survived in metadata. Aggregates carry the live/backfill split.",
			sa.Backfill, sa.Rows, sa.Live)
	}
	if st.Shape == models.ShapePreAmendment {
		add("pre_amendment_shape", "warning", time.Time{}, sa.Rows, true,
			"task_session_subagents has the pre-amendment shape (no execution-scoped unique key), so no execution identity is recorded: every row (%d) is not_recorded and its execution_id NULL.",
			sa.Rows)
	} else if unrec := sa.Rows - sa.Identity[models.ExecRecorded]; unrec > 0 {
		add("unrecorded_execution", "warning", time.Time{}, unrec, true,
			"%s %s no recorded execution (agent_execution_id = 'unknown': %d from the backfill, %d before execution identity existed, %d live frames that arrived without one). "+
				"Their execution_id is NULL, so COUNT(DISTINCT execution_id) never counts 'unknown' as an execution and never reads two 'unknown' rows as one.",
			rows(unrec), agree(unrec, "has", "have"), sa.Identity[models.ExecUnrecordedBackfill], sa.Identity[models.ExecUnrecordedPreAmendment], sa.Identity[models.ExecUnrecordedLive])
	}
	if e := st.ExecutionSince; e.Valid() {
		add("execution_since", "info", e.At, sa.Identity[models.ExecUnrecordedPreAmendment], true,
			"subagent_context_execution_since = %q: %d 'unknown' live rows before it predate execution identity, and %d after it are live frames that arrived without one; "+
				"compare execution counts across it only with that split. Real execution ids are real on both sides.",
			*e.Raw, sa.Identity[models.ExecUnrecordedPreAmendment], sa.Identity[models.ExecUnrecordedLive])
	}
	if unmeasured := sa.Rows - sa.Measured; unmeasured > 0 {
		add("unmeasured_usage", "info", time.Time{}, unmeasured, true,
			"%d of %d rows report no usage at all (total_tokens, tool_use_count and duration_ms all NULL, e.g. async_launched dispatches that never report). "+
				"They stay NULL, never 0: averages are over the measured rows only (%d).",
			unmeasured, sa.Rows, sa.Measured)
	}
	if st.Shape == models.ShapeExecutionAware && st.ExecutionSince.State != models.KeyPresent {
		add("execution_ids_trusted", "info", time.Time{}, sa.Identity[models.ExecRecorded], true,
			"subagent_context_execution_since is absent, as Kandev ships it (its table is created execution-aware from the start). "+
				"The execution ids of %s are trusted as real because the observed table shape is execution_aware (agent_execution_id in a three-column unique key); "+
				"a reader applying AC-24b literally, which trusts ids only after execution_since, would discard them.",
			rows(sa.Identity[models.ExecRecorded]))
	}
	out = append(out, f.provenRules()...)
	out = append(out, f.healthRules()...)
	out = append(out, f.integrityRules()...)
	return append(out, f.rejectRules()...)
}

// provenRules disclose where completeness was not claimed although the
// capture boundary alone would have allowed it, and what cannot be placed.
func (f Facts) provenRules() []Disclosure {
	var out []Disclosure
	sa, tu, se := f.Subagent, f.Turns, f.Sessions
	if tu.Shortfall+se.Shortfall > 0 {
		out = append(out, Disclosure{Rule: "writer_shortfall_turns", Severity: "warning", Count: tu.Shortfall, HasCount: true,
			Text: fmt.Sprintf("%s and %s started after capture_since have subagent-task messages whose tool call has no subagent row (the writer-health shortfall): "+
				"they are lower_bound, not complete, with writer_shortfall giving the missing count and fanout_lower_bound the tool calls known from rows and messages. "+
				"writer_shortfall_turns lists the missing tool_call_ids.", turns(tu.Shortfall), sessions(se.Shortfall))})
	}
	if tu.MessagesOnly > 0 {
		out = append(out, Disclosure{Rule: "messages_lower_bound", Severity: "info", Count: tu.MessagesOnly, HasCount: true,
			Text: fmt.Sprintf("%s (%s) %s subagent-task messages but no subagent row: their fan-out is a lower bound from the messages (messages_expected, fanout_lower_bound), not unknown and not zero. "+
				"Messages can be deleted too, so they never prove an exact count.", turns(tu.MessagesOnly), sessions(se.MessagesOnly), agree(tu.MessagesOnly, "has", "have"))})
	}
	if n := sa.NullTurn + sa.MissingTurn; n > 0 {
		out = append(out, Disclosure{Rule: "unattributed_rows", Severity: "warning", Count: n, HasCount: true,
			Text: fmt.Sprintf("%s cannot be placed in a turn (%d with turn_id NULL, which is ordinary, AC-2a; %d naming a turn that is not in the snapshot): "+
				"they are kept and counted in their sessions (turn_attribution says which), but per-turn views cannot place them, so the turns of their sessions that would otherwise be complete (%d) are at most lower_bound "+
				"(unattributed_session_rows gives the count per turn).", counted(n, "subagent row", "subagent rows"), sa.NullTurn, sa.MissingTurn, tu.Unplaceable)})
	}
	if tu.Overlap+se.Overlap > 0 {
		out = append(out, Disclosure{Rule: "live_backfill_overlap", Severity: "warning", Count: tu.Overlap, HasCount: true,
			Text: fmt.Sprintf("%s (%s) %s a live row and a backfill row for the same tool call (AC-22's DO NOTHING cannot catch a live row with a real execution id): "+
				"subagents_observed counts rows, distinct_tool_calls counts tool calls, live_backfill_overlap the tool calls with both, and an exact fanout counts each such tool call once.", turns(tu.Overlap), sessions(se.Overlap), agree(tu.Overlap, "has", "have"))})
	}
	if tu.RowsBeyond+se.RowsBeyond > 0 {
		out = append(out, Disclosure{Rule: "rows_beyond_tool_calls", Severity: "warning", Count: tu.RowsBeyond, HasCount: true,
			Text: fmt.Sprintf("%s (%s) %s more subagent rows than distinct tool calls, beyond a backfill row duplicating a live one: "+
				"a tool call with rows of two executions (a cross-execution collision, AC-32: one invocation seen twice, or two sharing an id) or a row whose tool_call_id is empty or unreadable (AC-2 writes none). "+
				"The rows cannot say how many invocations they are, so the fan-out is lower_bound, never complete: fanout_lower_bound counts the distinct tool calls, subagents_observed the rows.", turns(tu.RowsBeyond), sessions(se.RowsBeyond), agree(tu.RowsBeyond, "holds", "hold"))})
	}
	if tu.Ambiguous+se.Ambiguous > 0 {
		out = append(out, Disclosure{Rule: "capture_boundary_ambiguous_activity", Severity: "info", Count: tu.Ambiguous, HasCount: true,
			Text: fmt.Sprintf("%s and %s started inside the second after a second-precise capture_since, where the true boundary lies: they are lower_bound and flagged capture_boundary_ambiguous.", turns(tu.Ambiguous), sessions(se.Ambiguous))})
	}
	if sa.SentinelVariants > 0 {
		out = append(out, Disclosure{Rule: "sentinel_variants", Severity: "warning", Count: sa.SentinelVariants, HasCount: true,
			Text: fmt.Sprintf("%s %s an agent_execution_id that is empty, blank, or differs from the 'unknown' sentinel only by case or whitespace (AC-31 allows only 'unknown'): "+
				"they are classified as unrecorded with execution_id NULL, never counted as executions, and each is flagged in rejects.", rows(sa.SentinelVariants), agree(sa.SentinelVariants, "has", "have"))})
	}
	return out
}

// integrityRules disclose rows the store's own constraints should have
// prevented. They are kept (never dropped) and flagged in rejects.
func (f Facts) integrityRules() []Disclosure {
	var out []Disclosure
	sa := f.Subagent
	if n := sa.Orphans + f.Turns.Orphans; n > 0 {
		out = append(out, Disclosure{Rule: "orphan_rows", Severity: "warning", Count: n, HasCount: true,
			Text: fmt.Sprintf("%s %s a session that is not in task_sessions (%s, %s; Kandev's foreign key would have deleted them with the session). "+
				"They are kept and counted, and flagged in rejects (action 'flagged'); an inner join to dim_session drops them, so join with LEFT JOIN to see them.",
				rows(n), agree(n, "references", "reference"), counted(sa.Orphans, "subagent row", "subagent rows"), turns(f.Turns.Orphans))})
	}
	dims := f.Tasks.DuplicateIDs + f.Workflows.DuplicateIDs + f.Steps.DuplicateIDs
	if n := sa.DuplicateIDs + sa.DuplicateKeys + f.Sessions.DuplicateIDs + f.Turns.DuplicateIDs + dims; n > 0 {
		text := fmt.Sprintf("The store holds rows its own constraints should have prevented: %d subagent rows share an id and %d share the unique key "+
			"(task_session_id, agent_execution_id, tool_call_id); %d sessions and %d turns share an id",
			sa.DuplicateIDs, sa.DuplicateKeys, f.Sessions.DuplicateIDs, f.Turns.DuplicateIDs)
		if dims > 0 {
			text += fmt.Sprintf("; so do %d tasks, %d workflows and %d workflow steps (a join to those dimensions repeats the rows it matches)",
				f.Tasks.DuplicateIDs, f.Workflows.DuplicateIDs, f.Steps.DuplicateIDs)
		}
		out = append(out, Disclosure{Rule: "duplicate_keys", Severity: "warning", Count: n, HasCount: true,
			Text: text + ". Every one is kept (which copy is right is not knowable) " +
				"and flagged in rejects: counts over them may include the same invocation twice."})
	}
	return out
}

func (f Facts) healthRules() []Disclosure {
	h := f.Health
	if h.Status == "" || h.Status == models.HealthFeatureAbsent {
		return nil
	}
	sev := "warning"
	if h.Status == models.HealthHealthy {
		sev = "info"
	}
	d := Disclosure{Rule: "writer_health", Severity: sev,
		Text: "Writer health: " + string(h.Status) + ": " + h.Reason + "."}
	if h.Evaluated {
		d.Count, d.HasCount = h.Counts.Shortfall, true
	}
	if h.Counts.LastObserved != nil {
		d.Instant = *h.Counts.LastObserved
	}
	return []Disclosure{d}
}

func (f Facts) rejectRules() []Disclosure {
	if f.Rejected == 0 {
		return nil
	}
	return []Disclosure{{Rule: "rejects", Severity: "warning", Count: f.Rejected, HasCount: true,
		Text: fmt.Sprintf("%s in the rejects view: %s quarantined (not in the fact tables) and %s set to NULL, repaired or flagged with the row kept. "+
			"Each is listed with its table, row id, column, raw value, reason and action.",
			counted(f.Rejected, "entry", "entries"), counted(f.RejRows, "whole row", "whole rows"), counted(f.Rejected-f.RejRows, "value", "values"))}}
}

// DisclosureSchema is the disclosures table.
var DisclosureSchema = models.MustTable(models.TableDisclosures).Schema()

// WriteDisclosures appends the rules to b.
func WriteDisclosures(ctx *Context, b *Builder, ds []Disclosure) error {
	t := models.MustTable(models.TableDisclosures)
	rule, severity, text, instant, count := t.Col("rule"), t.Col("severity"), t.Col("text"), t.Col("instant"), t.Col("count")
	for _, d := range ds {
		ctx.lead(b)
		b.Str(rule, d.Rule)
		b.Str(severity, d.Severity)
		b.Str(text, d.Text)
		b.Time(instant, d.Instant, !d.Instant.IsZero())
		b.Int(count, d.Count, d.HasCount)
		if err := b.EndRow(); err != nil {
			return err
		}
	}
	return nil
}

// InstallationSchema is fact_installation_state: one row per installation
// per run.
var InstallationSchema = models.MustTable(models.TableInstallation).Schema()

// InstallationRow is the content of fact_installation_state for one run.
type InstallationRow struct {
	SnapshotAt       time.Time
	Dialect          models.Dialect
	Location         string
	ExtractorVersion string
	Facts            Facts
}

// WriteInstallation appends the installation state row to b.
func WriteInstallation(ctx *Context, b *Builder, r InstallationRow) error {
	t := models.MustTable(models.TableInstallation)
	c := t.Col
	st := r.Facts.State
	ctx.lead(b)
	b.Time(c("snapshot_at"), r.SnapshotAt, true)
	b.Str(c("source_dialect"), string(r.Dialect))
	b.Str(c("source_location"), r.Location)
	version, ok := deref(st.KandevVersion)
	b.OptStr(c("kandev_version"), version, ok)
	for _, k := range []struct {
		name string
		key  models.ActivationKey
	}{{"capture_since", st.CaptureSince}, {"backfill_through", st.BackfillThrough}, {"execution_since", st.ExecutionSince}} {
		raw, ok := deref(k.key.Raw)
		b.OptStr(c(k.name+"_raw"), raw, ok)
		b.Time(c(k.name), k.key.At, k.key.Valid())
		b.OptStr(c(k.name+"_precision"), string(k.key.Precision), k.key.Precision != models.PrecisionNone)
		b.Str(c(k.name+"_state"), string(k.key.State))
	}
	b.Str(c("subagent_table_shape"), string(st.Shape))
	b.Str(c("activation_state"), string(st.Activation))
	sa := r.Facts.Subagent
	// No table means no count at all: NULL, never a zero that reads as
	// "no subagents".
	hasTable := st.Shape != models.ShapeAbsent
	b.Int(c("subagent_rows"), sa.Rows, hasTable)
	b.Int(c("subagent_rows_live"), sa.Live, hasTable)
	b.Int(c("subagent_rows_backfill"), sa.Backfill, hasTable)
	b.Int(c("session_rows"), r.Facts.Sessions.Rows, true)
	b.Int(c("turn_rows"), r.Facts.Turns.Rows, true)
	b.Int(c("rejected_values"), r.Facts.Rejected, true)
	b.Str(c("extractor_version"), r.ExtractorVersion)
	return b.EndRow()
}

func deref(s *string) (string, bool) {
	if s == nil {
		return "", false
	}
	return *s, true
}

// counted renders a count with its noun, singular for one: "1 turn",
// "2 turns", "0 turns".
func counted(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// agree is the verb form that agrees with a count: agree(1, "has", "have").
func agree(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func turns(n int64) string    { return counted(n, "turn", "turns") }
func sessions(n int64) string { return counted(n, "session", "sessions") }
func rows(n int64) string     { return counted(n, "row", "rows") }
