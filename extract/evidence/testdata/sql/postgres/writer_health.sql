WITH msg AS (
	SELECT m.task_session_id, m.task_id, octet_length(m.metadata) > 1048576 AS oversize,
		(CASE WHEN m.metadata IS NULL OR m.metadata = '' OR m.metadata = 'null' OR octet_length(m.metadata) > 1048576
			THEN '{}' ELSE m.metadata END)::jsonb AS meta
	FROM task_session_messages m
	WHERE m.created_at >= $1::timestamp <exclusion of messages whose metadata is not JSON, after a failed first try>
),
expected AS (
	SELECT msg.task_session_id, msg.meta #>> '{tool_call_id}' AS tool_call_id
	FROM msg
	WHERE msg.meta #>> '{normalized,kind}' = 'subagent_task'
		AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND COALESCE(msg.meta #>> '{tool_call_id}', '') <> ''
	GROUP BY 1, 2
),
accounted AS (
	SELECT msg.task_session_id, msg.meta #>> '{tool_call_id}' AS tool_call_id
	FROM msg WHERE msg.meta #>> '{normalized,kind}' = 'subagent_task'
),
since AS (
	SELECT s.task_session_id, s.tool_call_id, s.observed_at AS observed
	FROM task_session_subagents s WHERE s.observed_at >= $1::timestamp
)
SELECT
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM expected
		EXCEPT SELECT task_session_id, tool_call_id FROM since) AS shortfall),
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM since GROUP BY 1, 2
		EXCEPT SELECT task_session_id, tool_call_id FROM accounted) AS excess),
	(SELECT COUNT(*) FROM expected),
	(SELECT COUNT(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM since) AS observed),
	(SELECT COUNT(*) - COUNT(DISTINCT task_session_id || ':' || tool_call_id) FROM since),
	(SELECT MAX(observed) FROM since),
	(SELECT COUNT(*) FROM msg WHERE oversize)
