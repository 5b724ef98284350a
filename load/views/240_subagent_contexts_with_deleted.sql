-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_contexts_with_deleted AS
SELECT * REPLACE (CASE WHEN execution_identity_reasons = '' THEN []::VARCHAR[] ELSE string_split(execution_identity_reasons, ',') END AS execution_identity_reasons),
		false AS is_deleted, NULL::VARCHAR AS deleted_detected_run_id, NULL::VARCHAR AS last_seen_run_id,
		NULL::TIMESTAMPTZ AS last_seen_snapshot_at
	FROM fact_subagent_context
	UNION ALL BY NAME
	SELECT * REPLACE (CASE WHEN execution_identity_reasons = '' THEN []::VARCHAR[] ELSE string_split(execution_identity_reasons, ',') END AS execution_identity_reasons),
		true AS is_deleted FROM archive_subagent_context;

COMMENT ON VIEW subagent_contexts_with_deleted IS 'ARCHIVE-INCLUSIVE: the current subagent rows plus every row deleted from the source since the installation''s first run (is_deleted = true), each flagged with the run that detected the deletion and the run that last saw it. Use it to count what ever existed; use subagent_contexts for the source as it is now.';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_deleted IS 'True for a row the source no longer has (from archive_subagent_context).';
COMMENT ON COLUMN subagent_contexts_with_deleted.deleted_detected_run_id IS 'The run that first found the row missing; NULL for current rows.';
COMMENT ON COLUMN subagent_contexts_with_deleted.last_seen_run_id IS 'The last run whose snapshot still had the row; NULL for current rows.';
COMMENT ON COLUMN subagent_contexts_with_deleted.last_seen_snapshot_at IS 'That run''s snapshot instant: the row was deleted after it; NULL for current rows.';
COMMENT ON COLUMN subagent_contexts_with_deleted.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_contexts_with_deleted.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_contexts_with_deleted.subagent_id IS 'Row id of the subagent (task_session_subagents.id).';
COMMENT ON COLUMN subagent_contexts_with_deleted.task_session_id IS 'Session (task_sessions.id) the subagent ran in.';
COMMENT ON COLUMN subagent_contexts_with_deleted.task_id IS 'Task (card) id.';
COMMENT ON COLUMN subagent_contexts_with_deleted.turn_id IS 'Turn id (task_session_turns.id); NULL when the row has none.';
COMMENT ON COLUMN subagent_contexts_with_deleted.tool_call_id IS 'Tool call that launched the subagent (unique per session and execution).';
COMMENT ON COLUMN subagent_contexts_with_deleted.parent_tool_call_id IS 'The spawning subagent''s tool call (AC-6); NULL for a subagent spawned by the session''s agent itself.';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_nested IS 'True when parent_tool_call_id is set: spawned by another subagent (AC-6).';
COMMENT ON COLUMN subagent_contexts_with_deleted.agent_execution_id IS 'The stored agent_execution_id verbatim, including the ''unknown'' sentinel. Never count or group executions by it: use execution_id.';
COMMENT ON COLUMN subagent_contexts_with_deleted.execution_id IS 'The real execution id; NULL unless execution_identity = ''recorded'', so COUNT(DISTINCT execution_id) never counts the sentinel (AC-25).';
COMMENT ON COLUMN subagent_contexts_with_deleted.execution_identity_reasons IS 'Every rule that decided execution_identity, as stable codes in a fixed order (docs/warehouse.md, Reason codes): empty exactly when recorded. NULL for a run written before the codes existed.';
COMMENT ON COLUMN subagent_contexts_with_deleted.execution_identity IS 'recorded | unrecorded_backfill | unrecorded_pre_amendment | unrecorded_live | not_recorded (AC-25, AC-31).';
COMMENT ON COLUMN subagent_contexts_with_deleted.subagent_type IS 'Subagent type as reported (e.g. Explore); NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.agent_id IS 'Child agent id as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.child_session_id IS 'Child session id as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.model IS 'Child model as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.agent_status IS 'Agent status verbatim (open vocabulary, e.g. async_launched); never decides terminality (AC-11). NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.tool_status IS 'ACP status of the launching tool call, verbatim (an empty status stays '''', never terminal); decides terminality (AC-11). NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_terminal IS 'From tool_status in {complete, completed, success, error, failed, cancelled}; never from agent_status (AC-11).';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_async IS 'True when the subagent was launched asynchronously (sticky in Kandev).';
COMMENT ON COLUMN subagent_contexts_with_deleted.total_tokens IS 'As reported; NULL when not reported (never 0-filled, AC-7).';
COMMENT ON COLUMN subagent_contexts_with_deleted.tool_use_count IS 'As reported; 0 is a real reported zero (AC-8); NULL when not reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.duration_ms IS 'Duration as reported; NULL when not reported (never 0-filled, AC-7).';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_measured IS 'True when at least one of total_tokens, tool_use_count, duration_ms was reported.';
COMMENT ON COLUMN subagent_contexts_with_deleted.source IS 'live or backfill (recovered from message metadata; not like-for-like with live rows, AC-25).';
COMMENT ON COLUMN subagent_contexts_with_deleted.observed_at IS 'When Kandev first observed the subagent (UTC, microseconds; the source''s nanoseconds truncated).';
COMMENT ON COLUMN subagent_contexts_with_deleted.settled_at IS 'When a terminal tool_status was first observed (AC-11); NULL while outstanding (AC-10).';
COMMENT ON COLUMN subagent_contexts_with_deleted.updated_at IS 'Last update of the source row (UTC, microseconds).';
COMMENT ON COLUMN subagent_contexts_with_deleted.capture_window IS 'after_capture (at or after capture_since), before_capture, or no_boundary (no valid capture_since). Rows before capture are real and kept.';
COMMENT ON COLUMN subagent_contexts_with_deleted.capture_boundary_ambiguous IS 'True when capture_since is only second-precise and the row was observed within the second after it (AC-24 point 5).';
COMMENT ON COLUMN subagent_contexts_with_deleted.capture_since IS 'The installation''s capture_since at the run (same on every row); NULL when absent or unparseable.';
COMMENT ON COLUMN subagent_contexts_with_deleted.execution_since IS 'The installation''s execution_since at the run; NULL when absent.';
COMMENT ON COLUMN subagent_contexts_with_deleted.activation_state IS 'The installation''s activation state at the run (same on every row).';
COMMENT ON COLUMN subagent_contexts_with_deleted.turn_attribution IS 'attributed (turn_id names a turn of the snapshot), null_turn (turn_id NULL or empty: ordinary, AC-2a) or missing_turn (names no turn of the snapshot). Unplaced rows are counted in their session, never dropped.';
