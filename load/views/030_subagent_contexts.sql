-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_contexts AS
SELECT * FROM fact_subagent_context;

COMMENT ON VIEW subagent_contexts IS 'One row per subagent invocation (task_session_subagents), latest run per installation, classified at extraction. Metrics are NULL when the agent did not report them, never 0. execution_id is NULL unless execution_identity = ''recorded''.';
COMMENT ON COLUMN subagent_contexts.agent_execution_id IS 'The stored value verbatim, including the ''unknown'' sentinel. Do not count or group executions by it.';
COMMENT ON COLUMN subagent_contexts.capture_boundary_ambiguous IS 'True when capture_since is only second-precise and the row was observed within the second after it.';
COMMENT ON COLUMN subagent_contexts.capture_window IS 'after_capture (observed_at >= capture_since), before_capture, or no_boundary (no valid capture_since). Rows before capture are real and kept.';
COMMENT ON COLUMN subagent_contexts.duration_ms IS 'As reported; NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.execution_id IS 'The real execution id; NULL for every row whose agent_execution_id is the ''unknown'' sentinel, so COUNT(DISTINCT execution_id) never counts the sentinel.';
COMMENT ON COLUMN subagent_contexts.execution_identity IS 'recorded | unrecorded_backfill | unrecorded_pre_amendment | unrecorded_live | not_recorded (AC-25, AC-31).';
COMMENT ON COLUMN subagent_contexts.is_measured IS 'True when at least one of total_tokens, tool_use_count, duration_ms was reported.';
COMMENT ON COLUMN subagent_contexts.is_terminal IS 'From tool_status in {complete, completed, success, error, failed, cancelled}; never from agent_status (AC-11).';
COMMENT ON COLUMN subagent_contexts.source IS 'live or backfill; backfill rows are not like-for-like with live rows (AC-25).';
COMMENT ON COLUMN subagent_contexts.tool_use_count IS 'As reported; 0 is a real reported zero (AC-8); NULL when not reported.';
COMMENT ON COLUMN subagent_contexts.total_tokens IS 'As reported; NULL when not reported (never 0-filled, AC-7).';
