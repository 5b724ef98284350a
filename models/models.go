// Package models holds the domain vocabulary shared by every stage of the
// pipeline: the classification enums of the data contract (docs/design.md §3), the
// rows the extractor hands to the transformer, and the Source interface that
// each source dialect implements.
package models

import "time"

// Activation keys in kandev_meta (spec AC-24).
const (
	KeyCaptureSince    = "subagent_context_capture_since"
	KeyBackfillThrough = "subagent_context_backfill_through"
	KeyExecutionSince  = "subagent_context_execution_since"
	KeyKandevVersion   = "kandev_version"
	// KeySchemaInitializedAt is written once when Kandev creates the store:
	// the store's own fingerprint, which binds an installation name to it.
	KeySchemaInitializedAt = "schema_initialized_at"
)

// ExecutionSentinel is the reserved agent_execution_id Kandev stores when a
// frame carried no execution identity (spec AC-31). It is never an execution.
const ExecutionSentinel = "unknown"

// Dialect names the kind of Kandev store.
type Dialect string

const (
	DialectSQLite   Dialect = "sqlite"
	DialectPostgres Dialect = "postgres"
)

// KeyState is what the extractor found for one activation key.
type KeyState string

const (
	KeyPresent     KeyState = "present"
	KeyAbsent      KeyState = "absent"
	KeyUnparseable KeyState = "unparseable"
	// KeyNoneMatched is backfill_through = '': the backfill matched nothing
	// (AC-24f). It is a sentinel, not an instant.
	KeyNoneMatched KeyState = "none_matched"
)

// Precision is the resolution a stored instant was written at, judged from
// the fractional digits present (trailing zeros are trimmed by the writers,
// so this is the precision the text proves, never more).
type Precision string

const (
	PrecisionNone        Precision = ""
	PrecisionSecond      Precision = "second"
	PrecisionMillisecond Precision = "millisecond"
	PrecisionMicrosecond Precision = "microsecond"
	PrecisionNanosecond  Precision = "nanosecond"
)

// TableShape is the observed shape of task_session_subagents (AC-33b's
// principle: observed from the live schema, never inferred).
type TableShape string

const (
	ShapeExecutionAware TableShape = "execution_aware"
	ShapePreAmendment   TableShape = "pre_amendment"
	ShapeAbsent         TableShape = "absent"
)

// ActivationState summarises the key pair for an installation.
type ActivationState string

const (
	// Activated: capture_since and backfill_through both present and valid
	// ('' counts as valid: the backfill matched nothing).
	Activated ActivationState = "activated"
	// CaptureOnlyPartialPair: capture_since present, backfill_through absent.
	CaptureOnlyPartialPair ActivationState = "capture_only_partial_pair"
	// BackfillKeyUnparseable: capture_since valid, backfill_through holds text
	// that is not an instant. capture_since still bounds completeness.
	BackfillKeyUnparseable ActivationState = "backfill_key_unparseable"
	// NotActivated: capture_since absent or unparseable, whatever B is.
	NotActivated ActivationState = "not_activated"
	// FeatureAbsent: the store has no task_session_subagents table.
	FeatureAbsent ActivationState = "feature_absent"
)

// CaptureWindow places a subagent row against capture_since.
type CaptureWindow string

const (
	AfterCapture  CaptureWindow = "after_capture"
	BeforeCapture CaptureWindow = "before_capture"
	NoBoundary    CaptureWindow = "no_boundary"
)

// ExecutionIdentity classifies agent_execution_id (AC-25, AC-31).
type ExecutionIdentity string

const (
	ExecRecorded               ExecutionIdentity = "recorded"
	ExecUnrecordedBackfill     ExecutionIdentity = "unrecorded_backfill"
	ExecUnrecordedPreAmendment ExecutionIdentity = "unrecorded_pre_amendment"
	ExecUnrecordedLive         ExecutionIdentity = "unrecorded_live"
	ExecNotRecorded            ExecutionIdentity = "not_recorded"
)

// FanoutCompleteness says how far a per-turn or per-session subagent count
// can be trusted (AC-25).
type FanoutCompleteness string

const (
	FanoutComplete   FanoutCompleteness = "complete"
	FanoutLowerBound FanoutCompleteness = "lower_bound"
	FanoutUnknown    FanoutCompleteness = "unknown"
)

// Row sources in task_session_subagents.source.
const (
	SourceLive     = "live"
	SourceBackfill = "backfill"
)

// ActivationKey is one kandev_meta key as found and as parsed.
type ActivationKey struct {
	Name string
	// Raw is the stored text verbatim; nil when the row is absent.
	Raw       *string
	State     KeyState
	At        time.Time // zero unless State == KeyPresent
	Precision Precision
	// Problem explains an unparseable key, for the disclosure.
	Problem string
}

// Valid reports whether the key holds a usable instant.
func (k ActivationKey) Valid() bool { return k.State == KeyPresent }

// InstallationState is the per-run, per-installation classification input.
type InstallationState struct {
	CaptureSince    ActivationKey
	BackfillThrough ActivationKey
	ExecutionSince  ActivationKey
	Shape           TableShape
	Activation      ActivationState
	KandevVersion   *string
}
