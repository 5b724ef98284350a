package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// HealthOptions say how to open the source and what to compare with.
type HealthOptions struct {
	Open extract.OpenOptions
	// Warehouse and Installation, when set, compare the activation keys
	// with the installation's last committed run there.
	Warehouse, Installation string
	// StaleAfter is how old the newest subagent row may be before a
	// healthy writer is reported stale (0 = load.DefaultStaleAfter).
	StaleAfter time.Duration
	// Now is the clock (tests pin it); nil is time.Now.
	Now func() time.Time
}

// HealthReport is a standalone writer-health evaluation of one source.
type HealthReport struct {
	Installation string                 `json:"installation,omitempty"`
	Source       string                 `json:"source"` // redacted
	Dialect      models.Dialect         `json:"dialect"`
	SnapshotAt   string                 `json:"snapshot_at"`
	Activation   models.ActivationState `json:"activation_state"`
	Status       models.HealthStatus    `json:"status"`
	Evaluated    bool                   `json:"evaluated"`
	Since        *string                `json:"capture_since"`
	Counts       *models.HealthCounts   `json:"counts"` // null when not evaluated, never zeros
	Reason       string                 `json:"reason"`
	// LastObservedAgeHours is the age of the newest subagent row at or
	// after capture_since when evaluated (null otherwise); StaleAfterHours
	// the threshold it was judged against.
	LastObservedAgeHours *float64 `json:"last_observed_age_hours"`
	StaleAfterHours      float64  `json:"stale_after_hours"`
	// KeyChanges lists the activation keys that differ from the
	// installation's last committed run in the warehouse.
	KeyChanges []string `json:"key_changes,omitempty"`
	// Unacknowledged are the key changes earlier runs recorded whose alarm
	// stands until run --acknowledge-key-change (also in KeyChanges).
	Unacknowledged []load.KeyChange         `json:"unacknowledged_key_changes,omitempty"`
	Health         models.Health            `json:"-"`
	State          models.InstallationState `json:"-"`
}

// CheckHealth opens one snapshot of a source and evaluates writer health
// in it, without writing anything anywhere.
func CheckHealth(ctx context.Context, source string, opts HealthOptions) (HealthReport, error) {
	var r HealthReport
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = load.DefaultStaleAfter
	}
	src, err := extract.OpenWith(ctx, source, opts.Open)
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
	if err := verifySnapshot(src); err != nil {
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
	r.Installation = opts.Installation
	r.StaleAfterHours = opts.StaleAfter.Hours()
	if h.Evaluated && h.Counts.LastObserved != nil {
		now := opts.Now()
		age := now.Sub(*h.Counts.LastObserved)
		hours := math.Round(age.Hours()*100) / 100
		r.LastObservedAgeHours = &hours
		if models.QuietWriter(r.Status, h.Counts.LastObserved, now, opts.StaleAfter) {
			r.Status = models.HealthStale
			r.Reason += fmt.Sprintf("; but the newest subagent row is %.1f h old, older than %s: nothing shows the writer still works (is Kandev in use?)",
				hours, opts.StaleAfter)
		}
	}
	if opts.Warehouse != "" && opts.Installation != "" {
		changes, recorded, err := keyChanges(opts.Warehouse, opts.Installation, state)
		if err != nil {
			return r, err
		}
		r.Unacknowledged = recorded
		if len(changes) > 0 {
			r.KeyChanges = changes
			r.Status = models.HealthKeyChanged
			r.Reason = strings.Join(changes, "; ") + ". Kandev writes these keys once (AC-24): the store was edited, restored or replaced. " + r.Reason
		}
	}
	return r, nil
}

// keyChanges compares the activation keys with the installation's last
// committed run in the warehouse (none when it has none), and adds the
// changes earlier runs recorded that are not acknowledged: a run that saw a
// change compares equal with the store afterwards, but the alarm stands.
func keyChanges(warehouse, installation string, state models.InstallationState) ([]string, []load.KeyChange, error) {
	ms, err := load.ReadManifests(warehouse)
	if err != nil {
		return nil, nil, err
	}
	b, err := load.ReadBinding(warehouse, installation)
	if err != nil {
		return nil, nil, err
	}
	var last *models.Manifest
	for i := range ms {
		if ms[i].InstallationID == installation && ms[i].Status == models.RunCommitted && ms[i].Provenance != nil {
			last = &ms[i]
		}
	}
	show := func(v *string) string {
		if v == nil {
			return "absent"
		}
		return fmt.Sprintf("%q", *v)
	}
	var out []string
	recorded := b.Unacknowledged()
	for _, c := range recorded {
		out = append(out, fmt.Sprintf("%s changed from %s (run %s) to %s, first seen by run %s at %s, and is not acknowledged (%s)",
			c.Key, show(c.Before), c.PreviousRun, show(c.After), c.SeenByRun, c.SeenAt.Format(time.RFC3339), AcknowledgeHint(installation)))
	}
	if last == nil {
		return out, recorded, nil
	}
	for _, k := range []struct {
		name string
		now  *string
	}{{models.KeyCaptureSince, state.CaptureSince.Raw}, {models.KeyBackfillThrough, state.BackfillThrough.Raw}} {
		if before, had := last.Provenance.RawKeys[k.name]; had && !equalRaw(before, k.now) {
			out = append(out, fmt.Sprintf("%s was %s at run %s and is %s now", k.name, show(before), last.RunID, show(k.now)))
		}
	}
	return out, recorded, nil
}

// evaluateHealth runs the writer-health comparison inside the snapshot, or
// returns the verdict that stands when it must not run.
func evaluateHealth(ctx context.Context, snap models.Snapshot, state models.InstallationState) (models.Health, error) {
	runIt, verdict := transform.HealthPlan(state)
	if !runIt {
		return verdict, nil
	}
	// The run's own message pass: one implementation of the comparison.
	at := state.CaptureSince.At
	_, counts, err := evidence.ReadMessages(ctx, snap, &at, true, &at)
	if err == nil && counts == nil {
		err = errors.New("writer health: the message pass measured nothing")
	}
	if err != nil {
		return verdict, err
	}
	return transform.HealthVerdict(state, *counts), nil
}
