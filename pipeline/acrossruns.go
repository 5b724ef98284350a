package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// What a nightly warehouse sees that one snapshot cannot: the store behind
// an installation name changed, and a write-once activation key moved.
// (Deletions between runs are in deletions.go.)

// acrossRuns is the comparison of a run with its installation's history.
type acrossRuns struct {
	// binding is saved when the run commits (nil: unchanged).
	binding *load.Binding
	// previous is the installation's latest committed run, if any.
	previous *models.Manifest
	// disclosures to add to the run's own.
	disclosures []transform.Disclosure
	// keysChanged is set when capture_since or backfill_through differ
	// from the previous run's.
	keysChanged bool
	// acknowledged counts the recorded key changes this run acknowledged.
	acknowledged int
	// reboundNow is set when this run rebinds the installation: the
	// previous run read another store (or the same one elsewhere), so
	// neither its keys nor its rows are compared with this run's.
	reboundNow bool
}

// comparesDeletions says whether the run's ids are compared with the
// previous run's (detectDeletions): only then are they remembered while
// the snapshot streams (16 bytes a row: ~24 MB for a 1M-row store).
func (a acrossRuns) comparesDeletions() bool { return a.previous != nil && !a.reboundNow }

// Alarm is the disclosure severity of a broken guarantee (a write-once key
// that changed): health fails on it.
const SeverityAlarm = "alarm"

// fingerprint is the store's kandev_meta.schema_initialized_at, raw.
func fingerprint(meta []models.MetaEntry) *string {
	for _, e := range meta {
		if e.Key == models.KeySchemaInitializedAt {
			v := e.Value
			return &v
		}
	}
	return nil
}

// compareAcrossRuns checks the run's source against the installation's
// binding (load.ErrSourceChanged when it differs and in.Rebind is not
// set) and compares its activation keys with the previous committed run.
func compareAcrossRuns(wh *load.Warehouse, in Installation, runID string, now time.Time, id load.SourceIdentity, state models.InstallationState) (acrossRuns, error) {
	var a acrossRuns
	b, err := wh.CheckBinding(in.Name, id, in.Rebind, runID, now)
	if err != nil {
		return a, err
	}
	a.binding = b
	if b == nil {
		if b, err = load.ReadBinding(wh.Dir, in.Name); err != nil {
			return a, err
		}
	}
	if b != nil && len(b.Rebinds) > 0 {
		var parts []string
		for _, r := range b.Rebinds {
			parts = append(parts, fmt.Sprintf("at %s (run %s) from %s to %s", r.At.Format(time.RFC3339), r.ByRun, r.From, r.To))
		}
		last := b.Rebinds[len(b.Rebinds)-1]
		a.disclosures = append(a.disclosures, transform.Disclosure{Rule: "source_rebound", Severity: "warning",
			Count: int64(len(b.Rebinds)), HasCount: true, Instant: last.At,
			Text: fmt.Sprintf("The installation name %s was explicitly rebound to another source %d time(s): %s. "+
				"History before a rebind describes another store (or the same store moved); compare across it with care.",
				in.Name, len(b.Rebinds), strings.Join(parts, "; "))})
	}
	ms, err := wh.Manifests()
	if err != nil {
		return a, err
	}
	for i := range ms {
		if ms[i].InstallationID == in.Name && ms[i].Status == models.RunCommitted && ms[i].Provenance != nil {
			a.previous = &ms[i]
		}
	}
	if a.binding != nil && len(a.binding.Rebinds) > 0 && a.binding.Rebinds[len(a.binding.Rebinds)-1].ByRun == runID {
		a.reboundNow = true
	}
	// The key changes recorded so far, acknowledged now when asked; then
	// this run's own (a change is never acknowledged by the run that sees
	// it: the operator must have been shown it first).
	base := a.binding
	if base == nil {
		base = b
	}
	var changes []load.KeyChange
	if base != nil {
		changes = append(changes, base.KeyChanges...)
	}
	touched := false
	if in.AcknowledgeKeyChange {
		for i := range changes {
			if changes[i].AcknowledgedByRun == "" {
				at := now.UTC()
				changes[i].AcknowledgedByRun, changes[i].AcknowledgedAt = runID, &at
				a.acknowledged++
				touched = true
			}
		}
	}
	if a.previous != nil && !a.reboundNow {
		for _, k := range []struct {
			name string
			now  *string
		}{
			{models.KeyCaptureSince, state.CaptureSince.Raw},
			{models.KeyBackfillThrough, state.BackfillThrough.Raw},
		} {
			before, had := a.previous.Provenance.RawKeys[k.name]
			if !had || equalRaw(before, k.now) {
				continue
			}
			a.keysChanged = true
			changes = append(changes, load.KeyChange{Key: k.name, Before: before, After: k.now,
				PreviousRun: a.previous.RunID, SeenByRun: runID, SeenAt: now.UTC()})
			touched = true
		}
	}
	if touched && base != nil {
		nb := *base
		nb.KeyChanges = changes
		a.binding = &nb
	}
	for _, c := range changes {
		a.disclosures = append(a.disclosures, keyChangeDisclosure(c, in.Name, runID, a.previous))
	}
	return a, nil
}

// AcknowledgeHint says how an operator acknowledges an installation's
// changed activation keys.
func AcknowledgeHint(installation string) string {
	return "run once with --acknowledge-key-change: kandev-extract run --acknowledge-key-change --installation " + installation +
		", with the run's usual --source or --config"
}

// keyChangeDisclosure states one recorded key change: an alarm while it
// is not acknowledged, a warning for ever after.
func keyChangeDisclosure(c load.KeyChange, installation, runID string, previous *models.Manifest) transform.Disclosure {
	raw := func(k *string) string {
		if k == nil {
			return "absent"
		}
		return fmt.Sprintf("%q", *k)
	}
	const why = "Kandev writes it once and never rewrites it (AC-24), so the store was edited, restored or replaced; " +
		"completeness before and after the change is classified against different boundaries and does not compare."
	if c.AcknowledgedByRun != "" {
		return transform.Disclosure{Rule: "activation_key_change_acknowledged", Severity: "warning", Instant: c.SeenAt,
			Text: fmt.Sprintf("%s changed from %s (run %s) to %s, first seen by run %s at %s, and the operator acknowledged it at run %s. %s",
				c.Key, raw(c.Before), c.PreviousRun, raw(c.After), c.SeenByRun, c.SeenAt.Format(time.RFC3339), c.AcknowledgedByRun, why)}
	}
	if c.SeenByRun == runID && previous != nil && previous.RunID == c.PreviousRun {
		return transform.Disclosure{Rule: "activation_key_changed", Severity: SeverityAlarm, Instant: previous.Provenance.SnapshotAt,
			Text: fmt.Sprintf("%s changed between runs: it was %s at run %s (snapshot %s) and is %s now. %s "+
				"The alarm stands at every run, in status and in health, until acknowledged: %s.",
				c.Key, raw(c.Before), previous.RunID, previous.Provenance.SnapshotAt.UTC().Format(time.RFC3339Nano), raw(c.After), why, AcknowledgeHint(installation))}
	}
	return transform.Disclosure{Rule: "activation_key_changed", Severity: SeverityAlarm, Instant: c.SeenAt,
		Text: fmt.Sprintf("%s changed: it was %s at run %s and was %s when run %s first saw it (%s); not acknowledged yet. %s "+
			"Once looked into, %s.",
			c.Key, raw(c.Before), c.PreviousRun, raw(c.After), c.SeenByRun, c.SeenAt.Format(time.RFC3339), why, AcknowledgeHint(installation))}
}

func equalRaw(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
