-- The floor of `make bench` for a SQLite store (docs/benchmarks.md): the source reads a
-- run needs, done naively by the sqlite3 C CLI with output discarded — plain SELECTs of the
-- needed columns of every table read, then the spec's two writer-health anti-joins (AC-28)
-- with json_extract and a lexical created_at comparison. internal/bench replaces
-- {{capture_since}} with the store's subagent_context_capture_since in Kandev's stored form
-- (UTC, microseconds) and runs one line at a time with `.timer on`.
-- The floor for the performance check: the source reads kandev-extract must do, run by the
-- sqlite3 C CLI with output discarded.
SELECT * FROM kandev_meta;
SELECT * FROM task_session_subagents;
SELECT id, workspace_id, workflow_id, workflow_step_id, state, priority, created_at, updated_at, archived_at FROM tasks;
SELECT id, task_id, state, started_at, completed_at, updated_at, agent_profile_id, executor_id, is_primary, cost_subcents, tokens_in, tokens_out FROM task_sessions;
SELECT id, task_session_id, task_id, started_at, completed_at FROM task_session_turns;
SELECT * FROM workflows; SELECT * FROM workflow_steps;
WITH msg AS (SELECT m.task_session_id, m.task_id, m.created_at, (CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' THEN '{}' ELSE m.metadata END) AS meta FROM task_session_messages m)
SELECT COUNT(*) FROM (SELECT msg.task_session_id, json_extract(msg.meta,'$.tool_call_id') AS tool_call_id FROM msg WHERE json_extract(msg.meta,'$.normalized.kind') = 'subagent_task' AND msg.created_at >= '{{capture_since}}' AND COALESCE(msg.task_session_id,'') <> '' AND COALESCE(msg.task_id,'') <> '' AND COALESCE(json_extract(msg.meta,'$.tool_call_id'),'') <> '' GROUP BY 1, 2 EXCEPT SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= '{{capture_since}}') AS shortfall;
WITH msg AS (SELECT m.task_session_id, m.created_at, (CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' THEN '{}' ELSE m.metadata END) AS meta FROM task_session_messages m)
SELECT COUNT(*) FROM (SELECT s.task_session_id, s.tool_call_id FROM task_session_subagents s WHERE s.observed_at >= '{{capture_since}}' GROUP BY 1, 2 EXCEPT SELECT msg.task_session_id, json_extract(msg.meta,'$.tool_call_id') FROM msg WHERE json_extract(msg.meta,'$.normalized.kind') = 'subagent_task' AND msg.created_at >= '{{capture_since}}') AS excess;
