SELECT CASE WHEN octet_length(turn_id) <= 1048576 THEN turn_id END,
	CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END,
	CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END,
	CASE WHEN octet_length(observed_at) <= 64 THEN observed_at END
FROM task_session_subagents
