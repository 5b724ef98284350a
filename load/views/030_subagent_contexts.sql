-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_contexts AS
SELECT * REPLACE (CASE WHEN execution_identity_reasons = '' THEN []::VARCHAR[] ELSE string_split(execution_identity_reasons, ',') END AS execution_identity_reasons)
	FROM fact_subagent_context;

COMMENT ON VIEW subagent_contexts IS 'One row per subagent invocation (task_session_subagents), latest run per installation, classified at extraction. Metrics are NULL when the agent did not report them, never 0. execution_id is NULL unless execution_identity = ''recorded''.';
COMMENT ON COLUMN subagent_contexts.agent_execution_id IS 'The stored value verbatim, including the ''unknown'' sentinel. Do not count or group executions by it.';
COMMENT ON COLUMN subagent_contexts.capture_boundary_ambiguous IS 'True when capture_since is only second-precise and the row was observed within the second after it.';
COMMENT ON COLUMN subagent_contexts.capture_window IS 'after_capture (observed_at >= capture_since), before_capture, or no_boundary (no valid capture_since). Rows before capture are real and kept.';
COMMENT ON COLUMN subagent_contexts.duration_ms IS 'As reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.execution_id IS 'The real execution id; NULL for every row whose agent_execution_id is the ''unknown'' sentinel, so COUNT(DISTINCT execution_id) never counts the sentinel.';
COMMENT ON COLUMN subagent_contexts.execution_identity_reasons IS 'Every rule that decided execution_identity, as stable codes in a fixed order (docs/warehouse.md, Reason codes): empty exactly when recorded. NULL for a run written before the codes existed.';
COMMENT ON COLUMN subagent_contexts.execution_identity IS 'recorded | unrecorded_backfill | unrecorded_pre_amendment | unrecorded_live | not_recorded (AC-25, AC-31).';
COMMENT ON COLUMN subagent_contexts.is_measured IS 'True when at least one of total_tokens, tool_use_count, duration_ms was reported.';
COMMENT ON COLUMN subagent_contexts.is_terminal IS 'From tool_status in {complete, completed, success, error, failed, cancelled}; never from agent_status (AC-11).';
COMMENT ON COLUMN subagent_contexts.source IS 'live or backfill; backfill rows are not like-for-like with live rows (AC-25).';
COMMENT ON COLUMN subagent_contexts.tool_use_count IS 'As reported; 0 is a real reported zero (AC-8); NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.total_tokens IS 'As reported; NULL when not reported (never 0-filled, AC-7).';
COMMENT ON COLUMN subagent_contexts.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_contexts.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_contexts.subagent_id IS 'Row id of the subagent (task_session_subagents.id).';
COMMENT ON COLUMN subagent_contexts.task_session_id IS 'Session (task_sessions.id) the subagent ran in.';
COMMENT ON COLUMN subagent_contexts.task_id IS 'Task (card) id.';
COMMENT ON COLUMN subagent_contexts.turn_id IS 'Turn id (task_session_turns.id); NULL when the row has none.';
COMMENT ON COLUMN subagent_contexts.tool_call_id IS 'Tool call that launched the subagent (unique per session and execution).';
COMMENT ON COLUMN subagent_contexts.parent_tool_call_id IS 'The spawning subagent''s tool call (AC-6); NULL for a subagent spawned by the session''s agent itself.';
COMMENT ON COLUMN subagent_contexts.is_nested IS 'True when parent_tool_call_id is set: spawned by another subagent (AC-6).';
COMMENT ON COLUMN subagent_contexts.subagent_type IS 'Subagent type as reported (e.g. Explore); NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.agent_id IS 'Child agent id as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.child_session_id IS 'Child session id as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.model IS 'Child model as reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.agent_status IS 'Agent status verbatim (open vocabulary, e.g. async_launched); never decides terminality (AC-11). NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.tool_status IS 'ACP status of the launching tool call, verbatim (an empty status stays '''', never terminal); decides terminality (AC-11). NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.is_async IS 'True when the subagent was launched asynchronously (sticky in Kandev).';
COMMENT ON COLUMN subagent_contexts.observed_at IS 'When Kandev first observed the subagent (UTC, microseconds; the source''s nanoseconds truncated).';
COMMENT ON COLUMN subagent_contexts.settled_at IS 'When a terminal tool_status was first observed (AC-11); NULL while outstanding (AC-10).';
COMMENT ON COLUMN subagent_contexts.updated_at IS 'Last update of the source row (UTC, microseconds).';
COMMENT ON COLUMN subagent_contexts.capture_since IS 'The installation''s capture_since at the run (same on every row); NULL when absent or unparseable.';
COMMENT ON COLUMN subagent_contexts.execution_since IS 'The installation''s execution_since at the run; NULL when absent.';
COMMENT ON COLUMN subagent_contexts.activation_state IS 'The installation''s activation state at the run (same on every row).';
COMMENT ON COLUMN subagent_contexts.turn_attribution IS 'attributed (turn_id names a turn of the snapshot), null_turn (turn_id NULL or empty: ordinary, AC-2a) or missing_turn (names no turn of the snapshot). Unplaced rows are counted in their session, never dropped.';
