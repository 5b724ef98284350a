package storegen

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

type writer struct {
	ctx context.Context
	tx  *sql.Tx
	o   *Options
	st  Stats
	g   *gen

	workspaceID, workflowID string
	backfillThrough         time.Time // newest subagent-task message before capture_since
	stmts                   map[string]*sql.Stmt
}

func (w *writer) exec(q string, args ...any) error {
	_, err := w.tx.ExecContext(w.ctx, q, args...)
	if err != nil {
		return fmt.Errorf("storegen: %w\n%s", err, firstLine(q))
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func (w *writer) insert(table string, args ...any) error {
	if _, err := w.stmts[table].ExecContext(w.ctx, args...); err != nil {
		return fmt.Errorf("storegen: insert into %s: %w", table, err)
	}
	w.st.Rows[table]++
	return nil
}

// nullStr maps "" to NULL (Kandev stores absent subagent TEXT values as NULL).
func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullTS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

var insertSQL = map[string]string{
	"tasks": `INSERT INTO tasks (id, workspace_id, workflow_id, workflow_step_id, title, description, state, priority,
		position, wip_admitted, queued_for_step_id, queued_at, metadata, is_ephemeral, parent_id, autopilot_enabled,
		archived_at, archived_by_cascade_id, created_at, updated_at, origin, project_id, labels, identifier)
		VALUES (?, ?, ?, ?, ?, '', ?, 'medium', ?, 1, '', NULL, '{}', 0, '', 0, NULL, '', ?, ?, 'manual', '', '[]', ?)`,
	"task_step_transitions": `INSERT INTO task_step_transitions (task_id, session_id, from_workflow_id, from_workflow_step_id,
		to_workflow_id, to_workflow_step_id, trigger, actor_kind, actor_id, contract_version, occurred_at)
		VALUES (?, NULL, NULL, NULL, ?, ?, 'task_created', 'system', NULL, 1, ?)`,
	"task_sessions": `INSERT INTO task_sessions (id, task_id, agent_profile_id, execution_profile_id, route_generation,
		route_state, route_reason, downstream_acp_session_id, executor_id, executor_profile_id, environment_id,
		repository_id, base_branch, agent_profile_snapshot, executor_snapshot, environment_snapshot,
		repository_snapshot, state, error_message, metadata, started_at, completed_at, updated_at, is_primary,
		is_passthrough, review_status, base_commit_sha, task_environment_id, cost_subcents, tokens_in,
		tokens_cached_in, tokens_out, workspace_path, name, last_read_message_id)
		VALUES (?, ?, ?, '', 0, '', '', '', '', '', '', '', '', ?, 'null', 'null', 'null', ?, '',
		'{"origin":"task_initial"}', ?, ?, ?, 1, 0, '', '', '', 0, 0, 0, 0, '', '', '')`,
	"task_session_turns": `INSERT INTO task_session_turns (id, task_session_id, task_id, started_at, completed_at,
		execution_profile_id, route_generation, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, '', 0, ?, ?, ?)`,
	"task_session_messages": `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type,
		author_id, content, requests_input, type, metadata, created_at, updated_at, prompt_seq)
		VALUES (?, ?, ?, ?, ?, '', ?, 0, ?, ?, ?, ?, ?)`,
	"task_session_subagents": `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id,
		agent_execution_id, parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model,
		agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms, source, observed_at,
		settled_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	"task_session_prompt_seq": `INSERT INTO task_session_prompt_seq (task_session_id, last_seq) VALUES (?, ?)`,
	"kandev_meta":             `INSERT INTO kandev_meta (key, value) VALUES (?, ?)`,
}

func (w *writer) run() error {
	o := w.o
	tables, indexes := schemaStatements(!o.BlankMetadataMessage)
	for _, q := range tables {
		if err := w.exec(q); err != nil {
			return err
		}
	}
	w.stmts = map[string]*sql.Stmt{}
	for name, q := range insertSQL {
		st, err := w.tx.PrepareContext(w.ctx, q)
		if err != nil {
			return fmt.Errorf("storegen: prepare %s: %w", name, err)
		}
		defer st.Close()
		w.stmts[name] = st
	}

	r := newRNG(o.Seed)
	w.g = &gen{r: r, capture: o.CaptureSince}
	if err := w.boot(); err != nil {
		return err
	}

	if o.Reference {
		if err := w.writeReference(); err != nil {
			return err
		}
	} else {
		p, err := newScaledPlanner(o, r)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			ss, err := p.next()
			if err != nil {
				return err
			}
			if ss == nil {
				break
			}
			out, err := w.g.materialize(ss)
			if err != nil {
				return err
			}
			if err := w.writeSession(out); err != nil {
				return err
			}
			if i%256 == 0 {
				if err := w.ctx.Err(); err != nil {
					return err
				}
			}
		}
	}

	if err := w.exec(`UPDATE workspaces SET task_sequence = ? WHERE id = ?`, w.g.taskSeq, w.workspaceID); err != nil {
		return err
	}
	if err := w.finishMeta(); err != nil {
		return err
	}
	for _, q := range indexes {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err := w.exec(q); err != nil {
			return err
		}
	}
	// Kandev's stores carry sqlite_stat1 (the driver's PRAGMA optimize);
	// a bounded ANALYZE produces the same table cheaply at any size.
	if err := w.exec(`PRAGMA analysis_limit=400`); err != nil {
		return err
	}
	return w.exec(`ANALYZE`)
}

// boot writes what Kandev's first boot writes: the settings tables' rows, the
// default workspace, the "Development" workflow and its four steps, and the
// boot-time kandev_meta keys.
func (w *writer) boot() error {
	o, r := w.o, w.g.r
	bootTS := ts(o.BootAt)
	for _, chunk := range strings.Split(bootSQL, "\n-- @row ")[1:] {
		table, stmt, _ := strings.Cut(chunk, "\n")
		if err := w.exec(strings.ReplaceAll(stmt, "'@BOOT@'", "'"+bootTS+"'")); err != nil {
			return err
		}
		w.st.Rows[table]++
	}
	w.workspaceID, w.workflowID = r.uuid(), r.uuid()
	for i := range w.g.stepIDs {
		w.g.stepIDs[i] = r.uuid()
	}
	if err := w.exec(`INSERT INTO workspaces (id, name, description, owner_id, default_executor_id, default_environment_id,
		default_agent_profile_id, default_config_agent_profile_id, created_at, updated_at, task_prefix, task_sequence, office_workflow_id)
		VALUES (?, 'Default Workspace', 'Default workspace', '', NULL, NULL, NULL, '', ?, ?, 'KAN', 0, '')`,
		w.workspaceID, bootTS, bootTS); err != nil {
		return err
	}
	w.st.Rows["workspaces"]++
	if err := w.exec(`INSERT INTO workflows (id, workspace_id, workflow_template_id, name, description, prompt, hidden,
		created_at, updated_at, sort_order, agent_profile_id, is_system, style, source, source_path)
		VALUES (?, ?, 'simple', 'Development', 'Default development workflow', '', 0, ?, ?, 0, '', 0, 'kanban', 'manual', '')`,
		w.workflowID, w.workspaceID, bootTS, bootTS); err != nil {
		return err
	}
	w.st.Rows["workflows"]++
	s := w.g.stepIDs
	stepTS := ts(o.BootAt.Add(20493415 * time.Nanosecond))
	steps := []struct {
		name, color, events           string
		start, panel, cancelCompletes int
	}{
		{"Backlog", "bg-neutral-400", `{"on_turn_start":[{"type":"move_to_next"}],"on_turn_complete":[{"type":"move_to_step","config":{"step_id":"` + s[2] + `"}}]}`, 0, 0, 1},
		{"In Progress", "bg-blue-500", `{"on_enter":[{"type":"auto_start_agent"}],"on_turn_complete":[{"type":"move_to_step","config":{"step_id":"` + s[2] + `"}}]}`, 1, 1, 1},
		{"Review", "bg-yellow-500", `{"on_turn_start":[{"type":"move_to_previous"}]}`, 0, 1, 0},
		{"Done", "bg-green-500", `{"on_turn_start":[{"type":"move_to_step","config":{"step_id":"` + s[1] + `"}}]}`, 0, 0, 0},
	}
	for i, st := range steps {
		if err := w.exec(`INSERT INTO workflow_steps (id, workflow_id, name, position, color, prompt, events,
			allow_manual_move, is_start_step, show_in_command_panel, auto_archive_after_hours, agent_profile_id,
			stage_type, auto_advance_requires_signal, cancel_triggers_turn_complete, created_at, updated_at,
			wip_limit, pull_from_step_id)
			VALUES (?, ?, ?, ?, ?, '', ?, 1, ?, ?, 0, '', 'custom', 0, ?, ?, ?, 0, '')`,
			s[i], w.workflowID, st.name, i, st.color, st.events, st.start, st.panel, st.cancelCompletes, stepTS, stepTS); err != nil {
			return err
		}
		w.st.Rows["workflow_steps"]++
	}
	if err := w.insert("kandev_meta", KeySchemaInit, o.BootAt.UTC().Truncate(time.Second).Format(time.RFC3339)); err != nil {
		return err
	}
	if err := w.insert("kandev_meta", KeyCommitCapture, keyText(o.BootAt.Add(5215349*time.Nanosecond))); err != nil {
		return err
	}
	return w.insert("kandev_meta", KeyKandevVersion, o.KandevVersion)
}

// finishMeta writes the activation keys the way Kandev's backfill migration
// does on an upgraded installation (capture_since, then backfill_through =
// created_at of the newest qualifying message, or ”), then applies overrides.
func (w *writer) finishMeta() error {
	o := w.o
	meta := map[string]string{
		KeySchemaInit:    o.BootAt.UTC().Truncate(time.Second).Format(time.RFC3339),
		KeyCommitCapture: keyText(o.BootAt.Add(5215349 * time.Nanosecond)),
		KeyKandevVersion: o.KandevVersion,
	}
	if !o.CaptureSince.IsZero() {
		bt := ""
		if !w.backfillThrough.IsZero() {
			bt = keyText(w.backfillThrough)
		}
		meta[KeyCaptureSince] = keyText(o.CaptureSince)
		meta[KeyBackfillThrough] = bt
		if err := w.insert("kandev_meta", KeyCaptureSince, meta[KeyCaptureSince]); err != nil {
			return err
		}
		if err := w.insert("kandev_meta", KeyBackfillThrough, bt); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.MetaOverrides)) {
		v := o.MetaOverrides[k]
		if _, ok := meta[k]; ok {
			if err := w.exec(`UPDATE kandev_meta SET value = ? WHERE key = ?`, v, k); err != nil {
				return err
			}
		} else if err := w.insert("kandev_meta", k, v); err != nil {
			return err
		}
		meta[k] = v
	}
	for _, k := range o.MetaDelete {
		if _, ok := meta[k]; !ok {
			continue
		}
		if err := w.exec(`DELETE FROM kandev_meta WHERE key = ?`, k); err != nil {
			return err
		}
		delete(meta, k)
		w.st.Rows["kandev_meta"]--
	}
	w.st.Meta = meta
	return nil
}

// writeReference materialises the reference plan, pinning the observed
// window's two ends to the spec's instants.
func (w *writer) writeReference() error {
	g := w.g
	dp := planDemo(g.r, w.o.NullMetadataMessage)
	for i, ss := range dp.specs {
		var anchor time.Time
		switch i {
		case dp.firstAnchor:
			anchor = demoFirstObserved
		case dp.lastAnchor:
			anchor = demoLastObserved
		}
		if !anchor.IsZero() {
			snap := g.snapshot()
			out, err := g.materialize(ss)
			if err != nil {
				return err
			}
			lo, hi := observedRange(out)
			cur := hi
			if i == dp.firstAnchor {
				cur = lo
			}
			ss.start = ss.start.Add(anchor.Sub(cur))
			g.restore(snap)
		}
		if w.o.BlankMetadataMessage && i == 0 {
			blank := ""
			ss.turns[0].openMeta = &blank
		}
		out, err := g.materialize(ss)
		if err != nil {
			return err
		}
		if err := w.writeSession(out); err != nil {
			return err
		}
	}
	return nil
}

func observedRange(out *sessionOut) (lo, hi time.Time) {
	for _, s := range out.subs {
		if lo.IsZero() || s.observed.Before(lo) {
			lo = s.observed
		}
		if s.observed.After(hi) {
			hi = s.observed
		}
	}
	return lo, hi
}

func (w *writer) writeSession(out *sessionOut) error {
	t, s := &out.task, &out.session
	if err := w.insert("tasks", t.id, w.workspaceID, w.workflowID, t.stepID, t.title, t.state, t.position,
		ts(t.created), ts(t.updated), t.identifier); err != nil {
		return err
	}
	if err := w.insert("task_step_transitions", t.id, w.workflowID, t.stepID, ts(t.created)); err != nil {
		return err
	}
	if err := w.insert("task_sessions", s.id, t.id, s.profileID, s.snapshot, s.state,
		ts(s.started), nullTS(s.completed), ts(s.updated)); err != nil {
		return err
	}
	turnMeta := `{"workflow_step_id_at_start":"` + out.stepID + `"}`
	for _, tr := range out.turns {
		if err := w.insert("task_session_turns", tr.id, s.id, t.id, ts(tr.started), nullTS(tr.completed),
			turnMeta, ts(tr.started), ts(tr.updated)); err != nil {
			return err
		}
	}
	c := w.o.CaptureSince
	for _, m := range out.msgs {
		if err := w.insert("task_session_messages", m.id, s.id, t.id, m.turnID, m.author, m.content, m.typ, m.meta,
			ts(m.created), ts(m.updated), m.promptSeq); err != nil {
			return err
		}
		if m.subagentTask && !c.IsZero() && m.created.Before(c) && m.created.After(w.backfillThrough) {
			w.backfillThrough = m.created
		}
	}
	for _, r := range out.subs {
		if err := w.insert("task_session_subagents", r.id, s.id, t.id, nullStr(r.turnID), r.toolCallID, r.execID,
			nullStr(r.parent), nullStr(r.stype), nullStr(r.desc), nullStr(r.agentID), nullStr(r.child),
			nullStr(r.model), nullStr(r.agentStatus), nullStr(r.toolStatus), r.isAsync,
			nullInt(r.totalTokens), nullInt(r.toolUses), nullInt(r.durationMs), r.source,
			ts(r.observed), nullTS(r.settled), ts(r.updated)); err != nil {
			return err
		}
		switch {
		case r.source == "backfill":
			w.st.BackfillRows++
		default:
			w.st.LiveRows++
			if r.execID == "unknown" {
				w.st.UnknownLiveRows++
			}
		}
	}
	w.st.CollisionRows += countCollisions(out.subs)
	return w.insert("task_session_prompt_seq", s.id, len(out.turns))
}

// countCollisions counts rows beyond the first per (session, tool_call_id)
// within one session's rows.
func countCollisions(rows []subRow) int64 {
	var n int64
	for i := range rows {
		for j := 0; j < i; j++ {
			if rows[j].toolCallID == rows[i].toolCallID {
				n++
				break
			}
		}
	}
	return n
}
