WITH scan AS MATERIALIZED (
	SELECT m.task_session_id, m.task_id,
		CASE WHEN octet_length(m.metadata) > 1048576 THEN 0 ELSE json_valid(m.metadata) END AS ok,
		CASE WHEN octet_length(m.metadata) <= 1048576 AND json_valid(m.metadata) THEN json_extract(m.metadata, '$.tool_call_id') END AS tool_call_id
	FROM task_session_messages m
	WHERE m.metadata IS NOT NULL
		AND kx_instant(CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END) >= ?1
		AND (octet_length(m.metadata) > 1048576 OR (m.metadata NOT IN ('', 'null')
			AND (NOT json_valid(m.metadata)
				OR ((instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\') > 0)
					AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task'))))
),
accounted AS (
	SELECT task_session_id, tool_call_id FROM scan WHERE ok
),
expected AS (
	SELECT task_session_id, tool_call_id
	FROM scan
	WHERE ok AND COALESCE(task_session_id, '') <> '' AND COALESCE(task_id, '') <> ''
		AND COALESCE(tool_call_id, '') <> ''
	GROUP BY 1, 2
),
since AS MATERIALIZED (
	SELECT s.task_session_id, s.tool_call_id, kx_instant(s.observed_at) AS observed
	-- Bounded reads: a huge id or instant is measured, never loaded (a
	-- value over the cap matches nothing), and the unflattened subquery
	-- keeps SQLite from copying whole values into its sorter.
	FROM (SELECT CASE WHEN octet_length(task_session_id) <= 1048576 THEN task_session_id END AS task_session_id,
			CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END AS tool_call_id,
			CASE WHEN octet_length(observed_at) <= 64 THEN observed_at END AS observed_at
		FROM task_session_subagents LIMIT -1 OFFSET 0) s
	WHERE kx_instant(s.observed_at) >= ?1
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
	(SELECT COUNT(*) FROM scan WHERE NOT ok)
