package inspect

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// maxSessionsShown bounds the sessions an installation's tree lists (the
// JSON has them all).
const maxSessionsShown = 20

// meanings maps each reason code to its meaning.
var meanings = func() map[string]string {
	m := map[string]string{}
	for _, r := range append(append([]models.Reason{}, models.CompletenessReasonList...), models.ExecutionReasonList...) {
		m[string(r.Code)] = strings.ReplaceAll(r.Meaning, "`", "")
	}
	return m
}()

// Render writes the document as a tree. safe escapes text from the
// warehouse for the terminal.
func Render(w io.Writer, d *Document, safe func(string) string) error {
	p := &printer{w: w, safe: safe}
	in := d.Installation
	p.line(0, "installation %s", p.s(in.InstallationID))
	p.line(1, "run %s · snapshot %s · %s store · Kandev %s · extractor %s", p.s(in.RunID), ts(&in.SnapshotAt), in.SourceDialect, p.opt(in.KandevVersion), p.s(in.ExtractorVersion))
	p.line(1, "activation %s · subagent table %s", in.ActivationState, in.SubagentTableShape)
	for _, k := range []struct {
		name string
		key  Key
	}{{"capture_since", in.CaptureSince}, {"backfill_through", in.BackfillThrough}, {"execution_since", in.ExecutionSince}} {
		p.line(1, "%-16s raw %s · parsed %s · precision %s · %s", k.name, p.quoted(k.key.Raw), ts(k.key.Parsed), p.opt(k.key.Precision), k.key.State)
	}
	sv := in.Served
	p.line(1, "served: latest attempt %s (%s)%s · data %s h old%s", p.opt(sv.LatestAttemptRunID), p.opt(sv.LatestAttemptStatus),
		yes(sv.LatestAttemptFailed, " FAILED: an older run is served"), hours(sv.DataAgeHours), yes(sv.IsStale, " · STALE"))
	p.line(1, "rows: %s subagent · %d session · %d turn · %d rejected values", count(in.SubagentRows), in.SessionRows, in.TurnRows, in.RejectedValues)
	p.line(1, "turns: %d complete · %d lower_bound · %d unknown", in.TurnsByCompleteness["complete"], in.TurnsByCompleteness["lower_bound"], in.TurnsByCompleteness["unknown"])
	if in.TurnsByReason != nil {
		for _, r := range models.CompletenessReasonList {
			if n := in.TurnsByReason[string(r.Code)]; n > 0 {
				p.line(2, "%-28s %s", r.Code, plural(n, "turn", "turns"))
			}
		}
	}
	for _, dc := range in.Disclosures {
		p.line(1, "disclosure %s (%s)%s", dc.Rule, dc.Severity, countSuffix(dc.Count))
	}
	if len(in.Disclosures) > 0 {
		p.line(2, "(the count is the rule's own: rows, turns or keys; its text is in the disclosures view)")
	}
	for i, s := range d.Sessions {
		if d.Query.Kind == KindInstallation && i == maxSessionsShown {
			p.line(1, "… %d more sessions (--json lists them all)", len(d.Sessions)-i)
			break
		}
		p.session(&s, d.Query.Kind != KindInstallation)
	}
	return p.err
}

type printer struct {
	w    io.Writer
	safe func(string) string
	err  error
}

func (p *printer) line(depth int, format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, "%s%s\n", strings.Repeat("  ", depth), fmt.Sprintf(format, args...))
}

func (p *printer) s(v string) string { return p.safe(v) }

func (p *printer) opt(v *string) string {
	if v == nil {
		return "NULL"
	}
	return p.safe(*v)
}

func (p *printer) quoted(v *string) string {
	if v == nil {
		return "absent"
	}
	return "'" + p.safe(*v) + "'"
}

func (p *printer) session(s *Session, expanded bool) {
	p.line(1, "session %s · task %s · state %s · started %s", p.s(s.SessionID), p.s(s.TaskID), p.opt(s.State), ts(s.StartedAt))
	p.claim(2, &s.Claim, &s.Evidence)
	if !expanded {
		return
	}
	p.evidence(2, &s.Evidence)
	for i := range s.Turns {
		t := &s.Turns[i]
		p.line(2, "turn %s · started %s · step %s", p.s(t.TurnID), ts(t.StartedAt), p.opt(t.WorkflowStep))
		p.claim(3, &t.Claim, &t.Evidence)
		p.evidence(3, &t.Evidence)
		for j := range t.Subagents {
			p.subagent(3, &t.Subagents[j])
		}
	}
	if len(s.Unattributed) > 0 {
		p.line(2, "rows of the session that name no turn of the snapshot:")
		for j := range s.Unattributed {
			p.subagent(3, &s.Unattributed[j])
		}
	}
}

func (p *printer) claim(depth int, c *Claim, e *Evidence) {
	fanout := "NULL (not proven)"
	if c.Fanout != nil {
		fanout = fmt.Sprint(*c.Fanout)
	}
	p.line(depth, "claim: %s · fanout %s · observed %d rows · at least %d", c.Completeness, fanout, c.SubagentsObserved, c.LowerBound)
	switch {
	case c.Reasons == nil:
		p.line(depth+1, "reasons: not recorded (the run predates reason codes)")
	case len(c.Reasons) == 0:
		p.line(depth+1, "rule: every condition of complete holds")
	default:
		for _, r := range c.Reasons {
			p.line(depth+1, "because %s: %s", r, meanings[r])
		}
	}
	shortfall := "not measured"
	if e.WriterShortfall != nil {
		shortfall = fmt.Sprint(*e.WriterShortfall)
	}
	extra := ""
	if e.UnattributedSessionRows != nil {
		extra = fmt.Sprintf(" · unplaced rows in session %d", *e.UnattributedSessionRows)
	}
	p.line(depth+1, "evidence: %s%s · %d distinct tool calls · %d live/backfill overlap · messages name %d · writer shortfall %s%s",
		e.CaptureWindow, map[bool]string{true: " (ambiguous second)"}[e.CaptureBoundaryAmbiguous], e.DistinctToolCalls, e.LiveBackfillOverlap,
		e.MessagesExpected, shortfall, extra)
}

func (p *printer) evidence(depth int, e *Evidence) {
	d := depth + 1
	p.line(d, "tool calls with rows: %s", p.ids(e.ToolCallsWithRows))
	if e.MessageToolCallsWithoutRows != nil {
		p.line(d, "message tool calls without rows: %s", p.ids(*e.MessageToolCallsWithoutRows))
	}
	if e.Collisions != nil {
		for _, c := range *e.Collisions {
			p.line(d, "collision: tool call %s has %d rows: %s", p.s(c.ToolCallID), len(c.SubagentIDs), p.join(c.SubagentIDs))
		}
	}
	if e.DeletedRows != nil {
		for _, r := range *e.DeletedRows {
			p.line(d, "deleted row %s (tool call %s): last seen by run %s (%s), gone by run %s", p.s(r.SubagentID), p.s(r.ToolCallID),
				p.opt(r.LastSeenRunID), ts(r.LastSeenSnapshotAt), p.opt(r.DeletedDetectedRunID))
		}
	}
}

func (p *printer) subagent(depth int, r *Subagent) {
	ident := r.ExecutionIdentity
	if r.ExecutionID != nil {
		ident += " " + p.s(*r.ExecutionID)
	}
	if len(r.ExecutionIdentityReasons) > 0 {
		ident += " (" + strings.Join(r.ExecutionIdentityReasons, ", ") + ")"
	}
	metrics := "not measured"
	if r.IsMeasured {
		metrics = fmt.Sprintf("tokens %s · tool uses %s · duration %s ms", count(r.TotalTokens), count(r.ToolUseCount), count(r.DurationMs))
	}
	p.line(depth, "subagent %s · tool call %s · %s · %s%s · %s", p.s(r.SubagentID), p.s(r.ToolCallID), r.Source, r.CaptureWindow,
		map[bool]string{true: " (ambiguous second)"}[r.CaptureBoundaryAmbiguous], ident)
	p.line(depth+1, "status %s%s · observed %s · settled %s · %s", p.opt(r.ToolStatus), map[bool]string{true: " (terminal)"}[r.IsTerminal],
		ts(&r.ObservedAt), ts(r.SettledAt), metrics)
}

// ids is a counted list of ids ("none" when empty).
func (p *printer) ids(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(ids), p.join(ids))
}

func (p *printer) join(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = p.safe(id)
	}
	return strings.Join(out, ", ")
}

func ts(t *time.Time) string {
	if t == nil {
		return "NULL"
	}
	return t.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
}

func count(n *int64) string {
	if n == nil {
		return "NULL"
	}
	return fmt.Sprint(*n)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func countSuffix(n *int64) string {
	if n == nil {
		return ""
	}
	return fmt.Sprintf(": %d", *n)
}

func hours(h *float64) string {
	if h == nil {
		return "NULL"
	}
	return fmt.Sprintf("%.1f", *h)
}

func yes(b *bool, text string) string {
	if b != nil && *b {
		return text
	}
	return ""
}
