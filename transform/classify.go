package transform

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// terminalToolStatuses is Kandev's isTerminalToolStatus set (AC-11). Only
// tool_status decides terminality; agent_status never does.
var terminalToolStatuses = map[string]bool{
	"complete": true, "completed": true, "success": true,
	"error": true, "failed": true, "cancelled": true,
}

// IsTerminal reports whether an ACP tool status is terminal (AC-11).
func IsTerminal(toolStatus string, valid bool) bool {
	return valid && terminalToolStatuses[toolStatus]
}

// Shape classifies task_session_subagents from its observed schema:
// execution-aware means an agent_execution_id column, the three-column
// unique key and no two-column key.
func Shape(s models.SubagentSchema) models.TableShape {
	if !s.Exists {
		return models.ShapeAbsent
	}
	three := []string{"task_session_id", "agent_execution_id", "tool_call_id"}
	two := []string{"task_session_id", "tool_call_id"}
	hasThree, hasTwo := false, false
	for _, k := range s.UniqueKeys {
		switch {
		case sameSet(k, three):
			hasThree = true
		case sameSet(k, two):
			hasTwo = true
		}
	}
	if slices.Contains(s.Columns, "agent_execution_id") && hasThree && !hasTwo {
		return models.ShapeExecutionAware
	}
	return models.ShapePreAmendment
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Installation builds the installation state from kandev_meta and the
// observed table shape.
func Installation(meta []models.MetaEntry, shape models.TableShape) models.InstallationState {
	entry := func(key string) *models.MetaEntry {
		for i := range meta {
			if meta[i].Key == key {
				return &meta[i]
			}
		}
		return nil
	}
	// A key over the cap is unparseable whatever its prefix says (a cut
	// could leave a valid instant behind); its raw value is the prefix.
	key := func(name string, allowEmpty bool) models.ActivationKey {
		e := entry(name)
		if e == nil {
			return ReadKey(name, nil, allowEmpty)
		}
		v := e.Value
		k := ReadKey(name, &v, allowEmpty)
		if e.Truncated() {
			k.State, k.At, k.Precision = models.KeyUnparseable, time.Time{}, models.PrecisionNone
			k.Problem = fmt.Sprintf("the value is %d bytes, over the %d-byte cap, so it is no instant; only its first %d bytes were read",
				e.Bytes, models.MaxLabelBytes, len(e.Value))
			if !e.HasPrefix {
				k.Problem = fmt.Sprintf("the value is %d bytes, over the %d-byte cap, so it is no instant; it was too long to read at all",
					e.Bytes, models.MaxLabelBytes)
			}
		}
		return k
	}
	var version *string
	if e := entry(models.KeyKandevVersion); e != nil && (!e.Truncated() || e.HasPrefix) {
		v := e.Value
		version = &v
	}
	st := models.InstallationState{
		CaptureSince:    key(models.KeyCaptureSince, false),
		BackfillThrough: key(models.KeyBackfillThrough, true),
		ExecutionSince:  key(models.KeyExecutionSince, false),
		Shape:           shape,
		KandevVersion:   version,
	}
	switch {
	case shape == models.ShapeAbsent:
		st.Activation = models.FeatureAbsent
	case !st.CaptureSince.Valid():
		st.Activation = models.NotActivated
	case st.BackfillThrough.State == models.KeyAbsent:
		st.Activation = models.CaptureOnlyPartialPair
	case st.BackfillThrough.State == models.KeyUnparseable:
		st.Activation = models.BackfillKeyUnparseable
	default:
		st.Activation = models.Activated
	}
	return st
}

// RowClass is the classification of one subagent row.
type RowClass struct {
	Window            models.CaptureWindow
	Identity          models.ExecutionIdentity
	ExecutionID       string // set only when Identity is recorded
	Terminal          bool
	BoundaryAmbiguous bool
	// IdentityReasons: every rule that applied to Identity (none exactly
	// when it is recorded).
	IdentityReasons models.ExecutionReasons
}

// Classifier classifies rows of one installation.
type Classifier struct {
	State models.InstallationState
}

// Row classifies one subagent row on its exact observed_at instant.
// executionID is the stored agent_execution_id (valid=false when the column
// is absent or NULL).
func (c Classifier) Row(observed time.Time, source string, executionID string, execValid bool, toolStatus string, toolValid bool) RowClass {
	var rc RowClass
	capture := c.State.CaptureSince
	switch {
	case !capture.Valid():
		rc.Window = models.NoBoundary
	case !observed.Before(capture.At): // equality lands on the after side (AC-24)
		rc.Window = models.AfterCapture
	default:
		rc.Window = models.BeforeCapture
	}
	// A second-precision key truncates the true instant, which lies in
	// [C, C+1s): rows in that second may precede the real boundary.
	if capture.Valid() && capture.Precision == models.PrecisionSecond &&
		!observed.Before(capture.At) && observed.Before(capture.At.Add(time.Second)) {
		rc.BoundaryAmbiguous = true
	}
	sentinel := !execValid || IsSentinelVariant(executionID)
	exec := c.State.ExecutionSince
	before := exec.Valid() && observed.Before(exec.At)
	switch {
	case c.State.Shape == models.ShapePreAmendment:
		rc.Identity, rc.IdentityReasons = models.ExecNotRecorded, models.ReasonNoExecutionColumn
	case !sentinel:
		// A real id is real on either side of execution_since (AC-25 rev 4).
		rc.Identity, rc.ExecutionID = models.ExecRecorded, executionID
	case source == models.SourceBackfill:
		rc.Identity = models.ExecUnrecordedBackfill
	case before:
		rc.Identity = models.ExecUnrecordedPreAmendment
	default:
		rc.Identity = models.ExecUnrecordedLive
	}
	if sentinel && c.State.Shape != models.ShapePreAmendment {
		rc.IdentityReasons = sentinelReason(executionID, execValid)
		if source == models.SourceBackfill {
			rc.IdentityReasons |= models.ReasonBackfillSource
		} else if !exec.Valid() {
			rc.IdentityReasons |= models.ReasonNoExecutionSinceKey
		}
		if before {
			rc.IdentityReasons |= models.ReasonBeforeExecutionSince
		}
	}
	rc.Terminal = IsTerminal(toolStatus, toolValid)
	return rc
}

// FanoutInput is what a turn's or session's completeness is decided on.
type FanoutInput struct {
	Started   time.Time
	StartedOK bool
	// Rows observed; Overlap of them backfill rows duplicating a live row's
	// tool call; Distinct tool calls among them.
	Rows, Overlap, Distinct int64
	// Messages is what its subagent-task messages say.
	Messages models.MessageCounts
	// Unattributed rows of the turn's session that name no turn of the
	// snapshot (turns only): any of them may belong to this turn.
	Unattributed int64
}

// FanoutResult is a turn's or session's classified fan-out.
type FanoutResult struct {
	Completeness models.FanoutCompleteness
	// Fanout is exact only when Exact (Completeness complete).
	Fanout int64
	Exact  bool
	// LowerBound: distinct tool calls of its rows and messages together.
	LowerBound int64
	// Ambiguous: started inside the second after a second-precision
	// capture_since.
	Ambiguous bool
	// Reasons: every rule that kept it from complete (none exactly when
	// complete), and no_evidence exactly when unknown.
	Reasons models.CompletenessReasons
}

// Fanout decides the completeness of a turn's or session's fan-out (AC-25),
// claiming "complete" only where the snapshot proves it: the activity
// started at or after capture_since (outside the ambiguous second of a
// second-precision key), its messages name no tool call that has no row
// (writer shortfall), and (turns) no row of its session is unplaced. Rows
// before capture_since and messages are evidence: with any, the count is a
// lower bound; with none, unknown — never zero. The exact fan-out counts a
// backfill row that duplicates a live row's tool call once; any further
// excess of rows over distinct tool calls (a collision, a row without a
// tool call) makes the count a lower bound.
func (c Classifier) Fanout(in FanoutInput) FanoutResult {
	r := FanoutResult{LowerBound: max(in.Messages.LowerBound, in.Distinct)}
	capture := c.State.CaptureSince
	evidence := in.Rows > 0 || in.Messages.Expected > 0
	r.Ambiguous = capture.Valid() && in.StartedOK && capture.Precision == models.PrecisionSecond &&
		!in.Started.Before(capture.At) && in.Started.Before(capture.At.Add(time.Second))
	// More rows than tool calls, beyond what a backfill row duplicating a
	// live one explains: a tool call with rows of two executions (AC-32:
	// one invocation seen twice, or two sharing an id) or a row without a
	// usable tool_call_id (AC-2 writes none). Such rows cannot say how many
	// invocations they are, so no count of them is proven exact.
	beyond := in.Rows-in.Overlap > in.Distinct
	// Each rule that applies is a reason; complete is exactly none.
	rules := []struct {
		applies bool
		reason  models.CompletenessReasons
	}{
		{c.State.Shape == models.ShapeAbsent, models.ReasonFeatureAbsent},
		{capture.State == models.KeyAbsent, models.ReasonNoCaptureKey},
		{capture.State != models.KeyAbsent && !capture.Valid(), models.ReasonCaptureKeyUnparseable},
		{!in.StartedOK, models.ReasonNoStartTime},
		{capture.Valid() && in.StartedOK && in.Started.Before(capture.At), models.ReasonStartedBeforeCapture},
		{r.Ambiguous, models.ReasonAmbiguousCaptureSecond},
		{in.Messages.Shortfall > 0, models.ReasonWriterShortfall},
		{beyond, models.ReasonRowsBeyondToolCalls},
		{in.Unattributed > 0, models.ReasonUnattributedRowsInSession},
	}
	for _, rule := range rules {
		if rule.applies {
			r.Reasons |= rule.reason
		}
	}
	switch {
	case r.Reasons == 0:
		r.Completeness, r.Fanout, r.Exact = models.FanoutComplete, in.Rows-in.Overlap, true
		return r
	case evidence:
		r.Completeness = models.FanoutLowerBound
	default:
		r.Completeness = models.FanoutUnknown
		r.Reasons |= models.ReasonNoEvidence
	}
	if in.Messages.LowerBound > in.Distinct {
		r.Reasons |= models.ReasonMessagesWithoutRows
	}
	return r
}

// sentinelReason says which form of no identity an agent_execution_id
// has.
func sentinelReason(id string, valid bool) models.ExecutionReasons {
	switch {
	case !valid:
		return models.ReasonExecutionIDNull
	case id == models.ExecutionSentinel:
		return models.ReasonExecutionIDSentinel
	}
	return models.ReasonExecutionIDSentinelVariant
}

// IsSentinelVariant reports whether an agent_execution_id carries no
// execution identity: the sentinel 'unknown' (AC-31), or a value that is
// empty, blank, or differs from it only by case or surrounding whitespace.
func IsSentinelVariant(id string) bool {
	t := strings.TrimSpace(id)
	return t == "" || strings.EqualFold(t, models.ExecutionSentinel)
}
