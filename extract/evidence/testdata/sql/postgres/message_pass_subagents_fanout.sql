SELECT turn_id, task_session_id, tool_call_id, observed_at >= $1::timestamp, observed_at,
	CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'live' THEN 1 WHEN source = 'backfill' THEN 2 ELSE 0 END,
	CASE WHEN octet_length(turn_id) > 1048576 THEN 1 ELSE 0 END + CASE WHEN octet_length(task_session_id) > 1048576 THEN 2 ELSE 0 END
		+ CASE WHEN octet_length(tool_call_id) > 1048576 THEN 4 ELSE 0 END
FROM task_session_subagents
