package models

// MessageCounts is what the subagent-task messages of one turn or session
// say about its fan-out (docs/design.md §3, "Completeness is claimed only
// where it is proven").
type MessageCounts struct {
	// Expected: distinct non-empty tool_call_ids among its subagent-task
	// messages. Messages can be deleted too: a lower bound, never exact.
	Expected int64
	// LowerBound: distinct tool_call_ids of its rows and messages together.
	LowerBound int64
	// Shortfall: distinct tool_call_ids of its messages at or after
	// capture_since with no row observed at or after it (writer health's
	// shortfall, placed where it happened).
	Shortfall int64
}

// MissingRow is one key of the writer-health shortfall: a subagent-task
// message with no subagent row. Identifiers only.
type MissingRow struct {
	TurnID, SessionID, ToolCallID string
}

// TurnAttribution places a subagent row in its turn.
type TurnAttribution string

const (
	// Attributed: turn_id names a turn of the snapshot.
	Attributed TurnAttribution = "attributed"
	// NullTurn: turn_id is NULL or empty (ordinary, AC-2a).
	NullTurn TurnAttribution = "null_turn"
	// MissingTurn: turn_id names no turn of the snapshot.
	MissingTurn TurnAttribution = "missing_turn"
)
