SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id WHEN m.turn_id IS NOT NULL THEN X'6b782d6f7665726c6f6e672d69642e00' END,
	CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id WHEN m.task_session_id IS NOT NULL THEN X'6b782d6f7665726c6f6e672d69642e00' END,
	CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id WHEN m.task_id IS NOT NULL THEN X'6b782d6f7665726c6f6e672d69642e00' END,
	CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END,
	CASE WHEN octet_length(m.metadata) <= 1048576 THEN m.metadata END
FROM task_session_messages m WHERE m.metadata IS NOT NULL
