// Package kandevwriter writes to a Kandev SQLite store the way Kandev
// does — WAL mode, one writer connection, short transactions, timestamps
// as mattn/go-sqlite3 renders them ("2006-01-02 15:04:05.999999999+00:00")
// — so that tests can read a store while another process writes it.
//
// Each transaction is one agent turn: sometimes a new task and session,
// then a turn, a user message, zero to three subagent-task tool-call
// messages each with its task_session_subagents row (written in the same
// transaction, as the live writer does), and the turn's completion. The
// store must already hold Kandev's schema (a copy of a testdata fixture).
package kandevwriter

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Options configure a writer.
type Options struct {
	// Path is the Kandev SQLite store to write.
	Path string
	// Pause is the time between two transactions (default 5ms).
	Pause time.Duration
	// Seed makes the generated fan-out reproducible.
	Seed uint64
	// OnCommit, when set, is called after each committed transaction with
	// the running totals.
	OnCommit func(Stats)
}

// Stats count what a writer committed.
type Stats struct {
	Transactions, Sessions, Turns, Messages, Subagents int64
}

// stampLayout is how mattn/go-sqlite3 writes a time.Time (Kandev's driver).
const stampLayout = "2006-01-02 15:04:05.999999999-07:00"

// DSN is the connection string Kandev's store uses: WAL journal, a busy
// timeout, foreign keys on.
func DSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
}

// Run writes turns until ctx is done and returns what it committed. A
// transaction in flight when ctx ends is rolled back, never half-written.
func Run(ctx context.Context, opts Options) (Stats, error) {
	var st Stats
	if opts.Pause <= 0 {
		opts.Pause = 5 * time.Millisecond
	}
	db, err := sql.Open("sqlite", DSN(opts.Path))
	if err != nil {
		return st, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		return st, fmt.Errorf("kandevwriter: %w", err)
	}
	if mode != "wal" {
		return st, fmt.Errorf("kandevwriter: journal_mode is %q, want wal", mode)
	}
	var step, workflow, workspace string
	if err := db.QueryRow(`SELECT id, workflow_id FROM workflow_steps ORDER BY position LIMIT 1`).Scan(&step, &workflow); err != nil {
		return st, fmt.Errorf("kandevwriter: a workflow step: %w", err)
	}
	if err := db.QueryRow(`SELECT workspace_id FROM workflows WHERE id = ?`, workflow).Scan(&workspace); err != nil {
		return st, fmt.Errorf("kandevwriter: the workflow: %w", err)
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0x6b616e646576))
	w := &writer{db: db, r: r, step: step, workflow: workflow, workspace: workspace}
	for n := int64(0); ; n++ {
		if ctx.Err() != nil {
			return st, nil
		}
		if err := w.turn(ctx, n, &st); err != nil {
			if ctx.Err() != nil {
				return st, nil
			}
			return st, err
		}
		if opts.OnCommit != nil {
			opts.OnCommit(st)
		}
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(opts.Pause):
		}
	}
}

type writer struct {
	db                        *sql.DB
	r                         *rand.Rand
	step, workflow, workspace string
	task, session             string
}

func (w *writer) id(kind string, n int64, i int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", w.r.Uint32(), n&0xffff, i&0xfff, len(kind)&0xfff, w.r.Uint64()&0xffffffffffff)
}

func now() string { return time.Now().UTC().Format(stampLayout) }

// turn commits one agent turn in one transaction.
func (w *writer) turn(ctx context.Context, n int64, st *Stats) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	newSession := w.session == "" || n%3 == 0
	if newSession {
		w.task, w.session = w.id("task", n, 0), w.id("session", n, 0)
		at := now()
		if err := exec(`INSERT INTO tasks (id, workspace_id, workflow_id, workflow_step_id, title, description, state, priority, identifier, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'IN_PROGRESS', 'medium', ?, ?, ?)`,
			w.task, w.workspace, w.workflow, w.step, fmt.Sprintf("Live task %d", n), "written while an extract runs", fmt.Sprintf("LIVE-%d", n), at, at); err != nil {
			return fmt.Errorf("kandevwriter: task: %w", err)
		}
		if err := exec(`INSERT INTO task_sessions (id, task_id, state, started_at, updated_at, is_primary) VALUES (?, ?, 'RUNNING', ?, ?, 1)`,
			w.session, w.task, at, at); err != nil {
			return fmt.Errorf("kandevwriter: session: %w", err)
		}
	}
	turn := w.id("turn", n, 1)
	started := now()
	if err := exec(`INSERT INTO task_session_turns (id, task_session_id, task_id, started_at, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		turn, w.session, w.task, started, `{"workflow_step_id_at_start":"`+w.step+`"}`, started, started); err != nil {
		return fmt.Errorf("kandevwriter: turn: %w", err)
	}
	if err := exec(`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'user', 'please fan out', 'message', '{}', ?, ?)`,
		w.id("message", n, 2), w.session, w.task, turn, started, started); err != nil {
		return fmt.Errorf("kandevwriter: message: %w", err)
	}
	// Counted into st only once committed: a transaction that ctx's end
	// rolls back must not be reported.
	messages, subagents := int64(1), int64(0)
	fan := int(w.r.UintN(4))
	for i := range fan {
		at := now()
		call := fmt.Sprintf("toolu_live_%d_%d", n, i)
		meta := fmt.Sprintf(`{"normalized":{"kind":"subagent_task","subagent_task":{"description":"live subagent","subagent_type":"general-purpose","status":"completed","total_tokens":%d}},"status":"completed","title":"live subagent","tool_call_id":%q}`,
			1000+i, call)
		if err := exec(`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
			VALUES (?, ?, ?, ?, 'agent', 'Task', 'tool_call', ?, ?, ?)`,
			w.id("toolmsg", n, 10+i), w.session, w.task, turn, meta, at, at); err != nil {
			return fmt.Errorf("kandevwriter: tool-call message: %w", err)
		}
		if err := exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
				subagent_type, description, agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms,
				source, observed_at, settled_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'general-purpose', 'live subagent', 'completed', 'completed', 0, ?, ?, ?, 'live', ?, ?, ?)`,
			w.id("subagent", n, 20+i), w.session, w.task, turn, call, w.id("execution", n, 0),
			1000+i, i, 50+i, at, at, at); err != nil {
			return fmt.Errorf("kandevwriter: subagent: %w", err)
		}
		messages++
		subagents++
	}
	done := now()
	if err := exec(`UPDATE task_session_turns SET completed_at = ?, updated_at = ? WHERE id = ?`, done, done, turn); err != nil {
		return fmt.Errorf("kandevwriter: complete turn: %w", err)
	}
	if err := exec(`UPDATE task_sessions SET updated_at = ? WHERE id = ?`, done, w.session); err != nil {
		return fmt.Errorf("kandevwriter: session updated_at: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	st.Transactions++
	st.Turns++
	st.Messages += messages
	st.Subagents += subagents
	if newSession {
		st.Sessions++
	}
	return nil
}
