// Package evidence derives, inside one snapshot, what the messages of a
// Kandev store say about subagent fan-out: the message evidence per turn
// and per session, the writer-health counts (spec AC-28, AC-29) and the
// per-turn and per-session fan-out the scans of turns and sessions take
// (Fanout), in one streaming pass over task_session_messages and
// task_session_subagents (ReadMessages, ReadMessagesAndFanout), with the
// set logic done in the process on hashed keys. It reads a store only
// through the few operations Snapshot declares, which extract's snapshots
// implement; the SQL it is proven against is its tests' oracle.
package evidence

import (
	"context"

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

// Snapshot is a snapshot the pass reads: one of extract's (SQLite or
// PostgreSQL), with what the pass needs of it beyond models.Snapshot.
type Snapshot interface {
	models.Snapshot
	// Dialect is the store's: the pass's statements are written per
	// dialect.
	Dialect() models.Dialect
	// Location names the store in errors, as the snapshot's own errors do.
	Location() string
	// Stream runs q with args in the snapshot and calls fn with each row;
	// the slice is reused between rows. Cells are as the driver returns
	// them: on SQLite INTEGER int64, REAL float64, TEXT string, BLOB
	// []byte, NULL nil (the storage class kept: SQL compares a TEXT and a
	// BLOB as different values, and so does the pass); on PostgreSQL as
	// models.Snapshot.Query hands them. With borrow, a TEXT value may
	// point into the driver's memory and is valid only until fn returns:
	// fn copies what it keeps. fn's error is returned as it is; the
	// driver's unwrapped (a PostgreSQL SQLSTATE can be read), to be passed
	// through Wrap.
	Stream(ctx context.Context, q string, args []any, borrow bool, fn func(row []any) error) error
	// Wrap turns a driver error of op, on table ("" for none), into one
	// that names the store and says what to do, as the snapshot's own
	// errors do.
	Wrap(op, table string, err error) error
}

// PostgresSnapshot is a PostgreSQL Snapshot: a statement that fails on
// metadata that is not JSON aborts the transaction, so the pass runs it
// under a savepoint (Exec: SAVEPOINT, ROLLBACK TO, RELEASE; the driver's
// error unwrapped).
type PostgresSnapshot interface {
	Snapshot
	Exec(ctx context.Context, q string) error
}
