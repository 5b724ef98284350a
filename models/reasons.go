package models

import "strings"

// Reason codes say why a classified value is what it is: every rule that
// applied, in a fixed order, as stable codes. A fan-out's list is empty
// exactly when it is complete; an execution identity's exactly when it is
// recorded. The warehouse stores a list as its codes joined by ReasonSep
// (the Parquet column is text, which every reader takes); the DuckDB views
// give it as a VARCHAR[].

// ReasonSep separates the codes of a stored list.
const ReasonSep = ","

// ReasonCode is one stable reason code.
type ReasonCode string

// The reason codes: the fan-out's first, then the execution identity's.
const (
	CodeFeatureAbsent              ReasonCode = "feature_absent"
	CodeNoCaptureKey               ReasonCode = "no_capture_key"
	CodeCaptureKeyUnparseable      ReasonCode = "capture_key_unparseable"
	CodeNoStartTime                ReasonCode = "no_start_time"
	CodeStartedBeforeCapture       ReasonCode = "started_before_capture"
	CodeAmbiguousCaptureSecond     ReasonCode = "ambiguous_capture_second"
	CodeWriterShortfall            ReasonCode = "writer_shortfall"
	CodeRowsBeyondToolCalls        ReasonCode = "rows_beyond_tool_calls"
	CodeUnattributedRowsInSession  ReasonCode = "unattributed_rows_in_session"
	CodeMessagesWithoutRows        ReasonCode = "messages_without_rows"
	CodeNoEvidence                 ReasonCode = "no_evidence"
	CodeNoExecutionColumn          ReasonCode = "no_execution_column"
	CodeExecutionIDNull            ReasonCode = "execution_id_null"
	CodeExecutionIDSentinel        ReasonCode = "execution_id_sentinel"
	CodeExecutionIDSentinelVariant ReasonCode = "execution_id_sentinel_variant"
	CodeBackfillSource             ReasonCode = "backfill_source"
	CodeBeforeExecutionSince       ReasonCode = "before_execution_since"
	CodeNoExecutionSinceKey        ReasonCode = "no_execution_since_key"
)

// Reason is one reason code with its meaning (the data dictionary prints
// it).
type Reason struct {
	Code    ReasonCode
	Meaning string
}

// CompletenessReasons is the set of fan-out reasons of a turn or session
// (fanout_completeness), as bits in Order.
type CompletenessReasons uint16

// The fan-out reasons, in their fixed order.
const (
	ReasonFeatureAbsent CompletenessReasons = 1 << iota
	ReasonNoCaptureKey
	ReasonCaptureKeyUnparseable
	ReasonNoStartTime
	ReasonStartedBeforeCapture
	ReasonAmbiguousCaptureSecond
	ReasonWriterShortfall
	ReasonRowsBeyondToolCalls
	ReasonUnattributedRowsInSession
	ReasonMessagesWithoutRows
	ReasonNoEvidence
)

// CompletenessReasonList is every fan-out reason in its fixed order.
var CompletenessReasonList = []Reason{
	{CodeFeatureAbsent, "The store has no `task_session_subagents` table: nothing was ever captured."},
	{CodeNoCaptureKey, "`subagent_context_capture_since` is absent: no instant from which capture is complete."},
	{CodeCaptureKeyUnparseable, "`subagent_context_capture_since` holds text that is no instant (see `fact_installation_state.capture_since_raw`)."},
	{CodeNoStartTime, "The turn or session has no `started_at` (NULL, or it did not parse: see `rejects`), so it cannot be placed against `capture_since`."},
	{CodeStartedBeforeCapture, "It started before `capture_since`: subagents before capture may have gone unrecorded."},
	{CodeAmbiguousCaptureSecond, "It started inside the second after a second-precise `capture_since`, where the true boundary lies."},
	{CodeWriterShortfall, "Its subagent-task messages at or after `capture_since` name tool calls that have no subagent row (`writer_shortfall` > 0)."},
	{CodeRowsBeyondToolCalls, "It has more rows than tool calls beyond the live/backfill overlap: a tool call with rows of two executions (AC-32) or a row without a tool call; the rows cannot say how many invocations they are."},
	{CodeUnattributedRowsInSession, "Rows of its session name no turn of the snapshot (`unattributed_session_rows` > 0): any may belong to this turn (turns only)."},
	{CodeMessagesWithoutRows, "Its subagent-task messages name tool calls that no row of it has, so `fanout_lower_bound` exceeds `distinct_tool_calls` (given only when not complete)."},
	{CodeNoEvidence, "No row and no subagent-task message: the fan-out is unknown, never zero (exactly the `unknown` rows)."},
}

// ExecutionReasons is the set of reasons of a subagent row's
// execution_identity, as bits in Order.
type ExecutionReasons uint8

// The execution-identity reasons, in their fixed order.
const (
	ReasonNoExecutionColumn ExecutionReasons = 1 << iota
	ReasonExecutionIDNull
	ReasonExecutionIDSentinel
	ReasonExecutionIDSentinelVariant
	ReasonBackfillSource
	ReasonBeforeExecutionSince
	ReasonNoExecutionSinceKey
)

// ExecutionReasonList is every execution-identity reason in its fixed
// order.
var ExecutionReasonList = []Reason{
	{CodeNoExecutionColumn, "The table is pre-amendment (no `agent_execution_id` column or its three-column key): no execution was ever recorded."},
	{CodeExecutionIDNull, "`agent_execution_id` is NULL."},
	{CodeExecutionIDSentinel, "`agent_execution_id` is the sentinel `'unknown'` (AC-31): the frame carried no execution identity."},
	{CodeExecutionIDSentinelVariant, "`agent_execution_id` is empty, blank, or `'unknown'` in another case or with surrounding spaces: no identity either."},
	{CodeBackfillSource, "The row is a backfill row (`source = 'backfill'`): recovered from messages, which carry no execution."},
	{CodeBeforeExecutionSince, "The row was observed before `subagent_context_execution_since`: written before Kandev recorded executions."},
	{CodeNoExecutionSinceKey, "`subagent_context_execution_since` is absent or unparseable, so a live row without an identity cannot be placed before the amendment."},
}

// reasonTexts holds the stored text of every set, so a row's list costs
// no allocation.
var completenessTexts, executionTexts = reasonTexts(CompletenessReasonList), reasonTexts(ExecutionReasonList)

func reasonTexts(list []Reason) []string {
	out := make([]string, 1<<len(list))
	for set := range out {
		var codes []string
		for i, r := range list {
			if set&(1<<i) != 0 {
				codes = append(codes, string(r.Code))
			}
		}
		out[set] = strings.Join(codes, ReasonSep)
	}
	return out
}

// String is the stored list: the codes in order, joined by ReasonSep; ""
// for none.
func (r CompletenessReasons) String() string { return completenessTexts[r] }

// Codes is the list of codes in order.
func (r CompletenessReasons) Codes() []string { return SplitReasons(r.String()) }

// String is the stored list: the codes in order, joined by ReasonSep; ""
// for none.
func (r ExecutionReasons) String() string { return executionTexts[r] }

// Codes is the list of codes in order.
func (r ExecutionReasons) Codes() []string { return SplitReasons(r.String()) }

// SplitReasons reads a stored list (never nil: an empty list is empty).
func SplitReasons(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ReasonSep)
}
