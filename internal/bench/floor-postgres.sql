-- The floor of `make bench` for a PostgreSQL store (docs/benchmarks.md): `\copy … TO
-- '/dev/null'` of the columns a run needs from every table it reads, then the spec's two
-- writer-health anti-joins (AC-28) with jsonb, through psql with output discarded.
-- internal/bench replaces {{capture_since}} with the store's subagent_context_capture_since
-- (UTC, microseconds).
\copy (SELECT * FROM kandev_meta) TO '/dev/null'
\copy (SELECT * FROM task_session_subagents) TO '/dev/null'
\copy (SELECT id, workspace_id, workflow_id, workflow_step_id, state, priority, created_at, updated_at, archived_at FROM tasks) TO '/dev/null'
\copy (SELECT id, task_id, state, started_at, completed_at, updated_at, agent_profile_id, executor_id, is_primary FROM task_sessions) TO '/dev/null'
\copy (SELECT id, task_session_id, task_id, started_at, completed_at FROM task_session_turns) TO '/dev/null'
\copy (SELECT * FROM workflows) TO '/dev/null'
\copy (SELECT * FROM workflow_steps) TO '/dev/null'
WITH msg AS (SELECT m.task_session_id, m.task_id, m.created_at, (CASE WHEN m.metadata IS NULL OR m.metadata::text IN ('', 'null') THEN '{}' ELSE m.metadata::text END)::jsonb AS meta FROM task_session_messages m)
SELECT COUNT(*) FROM (SELECT msg.task_session_id, msg.meta->>'tool_call_id' FROM msg WHERE msg.meta->'normalized'->>'kind' = 'subagent_task' AND msg.created_at >= '{{capture_since}}' AND COALESCE(msg.task_session_id,'') <> '' AND COALESCE(msg.task_id,'') <> '' AND COALESCE(msg.meta->>'tool_call_id','') <> '' GROUP BY 1, 2 EXCEPT SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= '{{capture_since}}') AS shortfall;
WITH msg AS (SELECT m.task_session_id, m.created_at, (CASE WHEN m.metadata IS NULL OR m.metadata::text IN ('', 'null') THEN '{}' ELSE m.metadata::text END)::jsonb AS meta FROM task_session_messages m)
SELECT COUNT(*) FROM (SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= '{{capture_since}}' GROUP BY 1, 2 EXCEPT SELECT msg.task_session_id, msg.meta->>'tool_call_id' FROM msg WHERE msg.meta->'normalized'->>'kind' = 'subagent_task' AND msg.created_at >= '{{capture_since}}') AS excess;
