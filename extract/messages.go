package extract

import (
	"github.com/kandev/kandev-extract/models"
)

// Messages are an independent lower bound on fan-out: every subagent Kandev
// dispatches leaves a subagent-task message with its tool_call_id (the
// health check's own rule, AC-28). MessageEvidence reads, inside the
// snapshot, per turn and per session: the distinct tool calls the messages
// name, the distinct tool calls of rows and messages together, and the
// message keys at or after capture_since that have no row observed at or
// after it — the writer health shortfall itself, placed in its turns.
// Identifiers only: no message content is read into the process.

// MessageEvidence is what the messages of a snapshot say about fan-out.
type MessageEvidence struct {
	// Turns and Sessions map a turn or session id to its counts (only
	// those with subagent-task messages).
	Turns, Sessions map[string]models.MessageCounts
	// Missing are the shortfall's keys, with the turn of their message.
	Missing []models.MissingRow
	// Fanout is the per-turn and per-session fan-out, when the pass
	// counted it (ReadMessagesAndFanout), else nil.
	Fanout *Fanout
	// MessagesRead is how many task_session_messages rows the snapshot
	// holds (every one is examined); Malformed those whose metadata is not
	// JSON (skipped).
	MessagesRead, Malformed int64
}

// sourceOf is the snapshot's printable store location, for errors.
func sourceOf(snap models.Snapshot) string {
	switch s := snap.(type) {
	case *sqliteSnapshot:
		return s.src.Path
	case *pgSnapshot:
		return s.src.location
	}
	return ""
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

func num(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	return 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
