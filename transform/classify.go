package transform

import (
	"slices"
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
	lookup := func(key string) *string {
		for _, e := range meta {
			if e.Key == key {
				v := e.Value
				return &v
			}
		}
		return nil
	}
	st := models.InstallationState{
		CaptureSince:    ReadKey(models.KeyCaptureSince, lookup(models.KeyCaptureSince), false),
		BackfillThrough: ReadKey(models.KeyBackfillThrough, lookup(models.KeyBackfillThrough), true),
		ExecutionSince:  ReadKey(models.KeyExecutionSince, lookup(models.KeyExecutionSince), false),
		Shape:           shape,
		KandevVersion:   lookup(models.KeyKandevVersion),
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
	sentinel := !execValid || executionID == "" || executionID == models.ExecutionSentinel
	exec := c.State.ExecutionSince
	switch {
	case c.State.Shape == models.ShapePreAmendment:
		rc.Identity = models.ExecNotRecorded
	case !sentinel:
		// A real id is real on either side of execution_since (AC-25 rev 4).
		rc.Identity, rc.ExecutionID = models.ExecRecorded, executionID
	case source == models.SourceBackfill:
		rc.Identity = models.ExecUnrecordedBackfill
	case exec.Valid() && observed.Before(exec.At):
		rc.Identity = models.ExecUnrecordedPreAmendment
	default:
		rc.Identity = models.ExecUnrecordedLive
	}
	rc.Terminal = IsTerminal(toolStatus, toolValid)
	return rc
}

// Fanout decides the completeness of a turn's or session's subagent count n
// (AC-25): complete only for activity that started at or after
// capture_since; otherwise a non-zero count is a lower bound and a zero is
// unknown, never zero. fanout is returned only when complete.
func (c Classifier) Fanout(started time.Time, startedValid bool, n int64) (models.FanoutCompleteness, int64, bool) {
	capture := c.State.CaptureSince
	if c.State.Shape != models.ShapeAbsent && capture.Valid() && startedValid && !started.Before(capture.At) {
		return models.FanoutComplete, n, true
	}
	if n > 0 {
		return models.FanoutLowerBound, 0, false
	}
	return models.FanoutUnknown, 0, false
}
