package models

import "time"

// HealthStatus is the verdict of the writer-health check (spec AC-28/28a/29).
type HealthStatus string

const (
	// HealthHealthy: no shortfall and rows observed since activation.
	// Excess may be non-zero: it is attributed, never an alarm.
	HealthHealthy HealthStatus = "healthy"
	// HealthShortfall: subagent-task messages since capture_since with no
	// subagent row. The alarm.
	HealthShortfall HealthStatus = "shortfall"
	// HealthNothingSinceActivation: no subagent row observed at or after
	// capture_since — "the writer has produced nothing since this
	// installation activated", never "healthy".
	HealthNothingSinceActivation HealthStatus = "nothing_since_activation"
	// HealthNotActivated: capture_since is absent, so the comparison is not
	// run (AC-28a): the missing key is the signal.
	HealthNotActivated HealthStatus = "not_activated"
	// HealthKeyUnparseable: capture_since is present but not an instant; the
	// comparison cannot be scoped and is not run.
	HealthKeyUnparseable HealthStatus = "capture_key_unparseable"
	// HealthFeatureAbsent: the store has no task_session_subagents table.
	HealthFeatureAbsent HealthStatus = "feature_absent"
	// HealthStale: otherwise healthy, but the newest subagent row is older
	// than the staleness threshold: nothing proves the writer still works.
	HealthStale HealthStatus = "stale"
	// HealthKeyChanged: capture_since or backfill_through differs from the
	// last committed run's in the warehouse: a write-once key moved (AC-24),
	// so every boundary drawn from it is in doubt. Takes precedence.
	HealthKeyChanged HealthStatus = "activation_key_changed"
)

// HealthCounts are the measured sides of the check, all scoped to activity
// at or after capture_since.
type HealthCounts struct {
	// Shortfall: distinct (session, tool_call_id) of qualifying
	// subagent-task messages with no subagent row.
	Shortfall int64 `json:"shortfall"`
	// Excess: distinct subagent keys with no subagent-task message (the
	// message side not filtered by the identity predicates).
	Excess int64 `json:"excess"`
	// Expected and Observed: distinct keys on each side.
	Expected int64 `json:"expected_keys"`
	Observed int64 `json:"observed_keys"`
	// Collisions: rows minus distinct (session, tool_call_id).
	Collisions int64 `json:"collisions"`
	// LastObserved: MAX(observed_at) at or after capture_since; nil when
	// no row has been observed since activation.
	LastObserved *time.Time `json:"last_observed_at"`
	// MalformedMetadata: messages since capture_since whose metadata is
	// not JSON (they cannot be subagent-task messages and are skipped).
	MalformedMetadata int64 `json:"malformed_metadata"`
}

// Health is one evaluation.
type Health struct {
	Status       HealthStatus
	Evaluated    bool // false when the comparison was not run
	CaptureSince *time.Time
	Counts       HealthCounts
	Reason       string // plain words
}

// QuietWriter reports whether a writer measured healthy has produced
// nothing for longer than after: its newest subagent row is older than that
// at now, so nothing shows the writer still works. health reports such a
// writer stale; status and the report say so beside "healthy".
func QuietWriter(status HealthStatus, newest *time.Time, now time.Time, after time.Duration) bool {
	return status == HealthHealthy && newest != nil && now.Sub(*newest) > after
}
