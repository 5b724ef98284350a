SELECT turn_id, task_session_id, task_id, over, created_at, ok,
	CASE WHEN ok THEN json_extract(meta, '$.tool_call_id') END
FROM (SELECT turn_id, task_session_id, task_id, over, created_at, cand,
		CASE WHEN sized IS NULL THEN NULL WHEN NOT sized THEN 0
			WHEN cand OR recent THEN json_valid(meta) END AS ok,
		CASE WHEN cand THEN meta END AS meta
	FROM (SELECT turn_id, task_session_id, task_id, over, created_at, sized, recent, meta,
			instr(meta, 'subagent_task') > 0 OR instr(meta, '\') > 0 AS cand
		FROM (SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id END AS turn_id,
				CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id END AS task_session_id,
				CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id END AS task_id,
				(octet_length(m.turn_id) > 1048576) | ((octet_length(m.task_session_id) > 1048576) << 1) | ((octet_length(m.task_id) > 1048576) << 2) AS over,
				CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END AS created_at,
				CASE WHEN octet_length(m.metadata) > 1048576 THEN 0 WHEN m.metadata IN ('', 'null') THEN NULL ELSE 1 END AS sized,
				m.created_at >= ?1 AS recent,
				CASE WHEN octet_length(m.metadata) <= 1048576 THEN m.metadata END AS meta
			FROM task_session_messages m WHERE m.metadata IS NOT NULL /*sessions*/ LIMIT -1 OFFSET 0)
		LIMIT -1 OFFSET 0)
	LIMIT -1 OFFSET 0)
WHERE ok = 0 OR (ok AND cand AND json_extract(meta, '$.normalized.kind') = 'subagent_task')
