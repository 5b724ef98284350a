package transform

import (
	"fmt"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// rowLayout renders row instants at the warehouse's microsecond precision,
// so texts agree across dialects (PostgreSQL stores microseconds).
const rowLayout = "2006-01-02T15:04:05.999999Z07:00"

// HealthPlan says whether the writer-health comparison may run for this
// installation and, when it may not, the verdict that stands instead
// (AC-28a: with capture_since absent the comparison is not run and the
// missing key is the signal).
func HealthPlan(st models.InstallationState) (run bool, verdict models.Health) {
	switch {
	case st.Shape == models.ShapeAbsent:
		return false, models.Health{Status: models.HealthFeatureAbsent,
			Reason: "the store has no task_session_subagents table: this Kandev build does not record subagents"}
	case st.CaptureSince.State == models.KeyAbsent:
		return false, models.Health{Status: models.HealthNotActivated,
			Reason: "subagent_context_capture_since is absent, so the comparison is not run: the missing key is itself the signal (a failed or never-run activation)"}
	case st.CaptureSince.State == models.KeyUnparseable:
		return false, models.Health{Status: models.HealthKeyUnparseable,
			Reason: fmt.Sprintf("subagent_context_capture_since holds %q, which is not an instant, so the comparison cannot be scoped and is not run", *st.CaptureSince.Raw)}
	}
	at := st.CaptureSince.At
	return true, models.Health{CaptureSince: &at}
}

// HealthVerdict classifies measured counts. A shortfall is the alarm; no
// row since activation means the writer produced nothing, never healthy;
// excess is attributed and never netted against the shortfall.
func HealthVerdict(st models.InstallationState, c models.HealthCounts) models.Health {
	at := st.CaptureSince.At
	h := models.Health{Evaluated: true, CaptureSince: &at, Counts: c}
	since := at.Format(tsLayout)
	switch {
	case c.Shortfall > 0:
		h.Status = models.HealthShortfall
		h.Reason = fmt.Sprintf("%d subagent-task messages since %s have no subagent row: the writer is missing rows", c.Shortfall, since)
		if c.LastObserved == nil {
			h.Reason += ", and it has produced nothing since activation"
		} else {
			h.Reason += fmt.Sprintf(" (last row observed %s)", c.LastObserved.Format(rowLayout))
		}
	case c.LastObserved == nil:
		h.Status = models.HealthNothingSinceActivation
		h.Reason = fmt.Sprintf("no subagent row has been observed since activation (%s): the writer has produced nothing since this installation activated", since)
	default:
		h.Status = models.HealthHealthy
		h.Reason = fmt.Sprintf("every subagent-task message since %s has its subagent row; last row observed %s", since, c.LastObserved.Format(rowLayout))
	}
	if c.Excess > 0 {
		h.Reason += fmt.Sprintf("; %d subagent rows have no subagent-task message (excess: attributed, not an alarm, never offset against a shortfall)", c.Excess)
	}
	if c.MalformedMetadata > 0 {
		h.Reason += fmt.Sprintf("; %d messages since activation have metadata that is not JSON and were skipped", c.MalformedMetadata)
	}
	return h
}

// HealthSchema is fact_writer_health: one evaluation per installation per
// run. Counts are NULL when the comparison was not run — never 0.
var HealthSchema = models.MustTable(models.TableWriterHealth).Schema()

// ShortfallSchema is fact_writer_shortfall: the writer-health shortfall's
// keys, each with the turn of its message. Identifiers only.
var ShortfallSchema = models.MustTable(models.TableShortfall).Schema()

// WriteShortfall appends the shortfall's keys.
func WriteShortfall(ctx *Context, b *Builder, missing []models.MissingRow) error {
	t := models.MustTable(models.TableShortfall)
	session, turn, toolCall := t.Col("session_id"), t.Col("turn_id"), t.Col("tool_call_id")
	for _, m := range missing {
		ctx.lead(b)
		b.Str(session, m.SessionID)
		b.OptStr(turn, m.TurnID, m.TurnID != "")
		b.Str(toolCall, m.ToolCallID)
		if err := b.EndRow(); err != nil {
			return err
		}
	}
	return nil
}

// WriteHealth appends one evaluation.
func WriteHealth(ctx *Context, b *Builder, at time.Time, h models.Health) error {
	c := models.MustTable(models.TableWriterHealth).Col
	ctx.lead(b)
	b.Time(c("evaluated_at"), at, true)
	b.Str(c("status"), string(h.Status))
	b.Bool(c("evaluated"), h.Evaluated, true)
	var cs time.Time
	if h.CaptureSince != nil {
		cs = *h.CaptureSince
	}
	b.Time(c("capture_since"), cs, h.CaptureSince != nil)
	n := h.Counts
	for _, v := range []struct {
		col string
		n   int64
	}{{"shortfall", n.Shortfall}, {"excess", n.Excess}, {"expected_keys", n.Expected}, {"observed_keys", n.Observed}, {"collisions", n.Collisions},
		{"malformed_metadata", n.MalformedMetadata}} {
		b.Int(c(v.col), v.n, h.Evaluated)
	}
	var last time.Time
	if n.LastObserved != nil {
		last = *n.LastObserved
	}
	b.Time(c("last_observed_at"), last, n.LastObserved != nil)
	b.Str(c("reason"), h.Reason)
	return b.EndRow()
}
