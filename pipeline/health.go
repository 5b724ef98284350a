package pipeline

import (
	"context"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// HealthReport is a standalone writer-health evaluation of one source.
type HealthReport struct {
	Source     string                   `json:"source"` // redacted
	Dialect    models.Dialect           `json:"dialect"`
	SnapshotAt string                   `json:"snapshot_at"`
	Activation models.ActivationState   `json:"activation_state"`
	Status     models.HealthStatus      `json:"status"`
	Evaluated  bool                     `json:"evaluated"`
	Since      *string                  `json:"capture_since"`
	Counts     *models.HealthCounts     `json:"counts"` // null when not evaluated, never zeros
	Reason     string                   `json:"reason"`
	Health     models.Health            `json:"-"`
	State      models.InstallationState `json:"-"`
}

// CheckHealth opens one snapshot of a source and evaluates writer health
// in it, without writing anything anywhere.
func CheckHealth(ctx context.Context, source string) (HealthReport, error) {
	var r HealthReport
	src, err := extract.Open(ctx, source)
	if err != nil {
		return r, err
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return r, err
	}
	defer snap.Close()
	meta, err := snap.Meta(ctx)
	if err != nil {
		return r, err
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		return r, err
	}
	state := transform.Installation(meta, transform.Shape(schema))
	h, err := evaluateHealth(ctx, snap, state)
	if err != nil {
		return r, err
	}
	r = HealthReport{Source: src.Location(), Dialect: src.Dialect(), SnapshotAt: snap.At().Format("2006-01-02T15:04:05.999999Z07:00"),
		Activation: state.Activation, Status: h.Status, Evaluated: h.Evaluated, Reason: h.Reason, Health: h, State: state}
	if state.CaptureSince.Raw != nil {
		r.Since = state.CaptureSince.Raw
	}
	if h.Evaluated {
		c := h.Counts
		r.Counts = &c
	}
	return r, nil
}
