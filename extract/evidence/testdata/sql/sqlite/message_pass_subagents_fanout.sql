SELECT CASE WHEN octet_length(turn_id) <= 1048576 THEN turn_id END,
	CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END,
	CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END,
	CASE WHEN octet_length(observed_at) <= 64 THEN observed_at END,
	CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'live' THEN 1 WHEN source = 'backfill' THEN 2 ELSE 0 END
FROM task_session_subagents
