SELECT m.turn_id, m.task_session_id, m.task_id, m.created_at >= $1::timestamp,
	x.meta #>> '{normalized,kind}' = 'subagent_task', x.meta #>> '{tool_call_id}', jsonb_typeof(x.meta -> 'tool_call_id'),
	octet_length(m.metadata) > 1048576
FROM task_session_messages m
CROSS JOIN LATERAL (SELECT CASE
		WHEN m.metadata IS NULL OR octet_length(m.metadata) > 1048576 OR m.metadata IN ('', 'null') THEN NULL
		WHEN m.created_at >= $1::timestamp OR strpos(m.metadata, 'subagent_task') > 0 OR strpos(m.metadata, '\') > 0 THEN m.metadata::jsonb
	END AS meta OFFSET 0) x
WHERE (x.meta #>> '{normalized,kind}' = 'subagent_task' OR (octet_length(m.metadata) > 1048576 AND m.created_at >= $1::timestamp)) <exclusion of messages whose metadata is not JSON, after a failed first try>
