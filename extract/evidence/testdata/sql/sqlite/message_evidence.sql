WITH msg AS MATERIALIZED (
	SELECT turn_id, task_session_id, task_id, tcid, created FROM (
		SELECT CASE WHEN octet_length(m.turn_id) <= 1048576 THEN m.turn_id END AS turn_id,
			CASE WHEN octet_length(m.task_session_id) <= 1048576 THEN m.task_session_id END AS task_session_id,
			CASE WHEN octet_length(m.task_id) <= 1048576 THEN m.task_id END AS task_id,
			json_extract(m.metadata, '$.tool_call_id') AS tcid,
			kx_instant(CASE WHEN octet_length(m.created_at) <= 64 THEN m.created_at END) AS created
		FROM task_session_messages m
		WHERE m.metadata IS NOT NULL AND octet_length(m.metadata) <= 1048576 AND m.metadata NOT IN ('', 'null')
			AND (instr(m.metadata, 'subagent_task') > 0 OR instr(m.metadata, '\') > 0)
			AND json_valid(m.metadata) AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task'
		LIMIT -1 OFFSET 0)
	WHERE typeof(tcid) = 'text' AND tcid <> ''
),
sub AS (<rows: the subagent rows' bounded ids>),
missing AS (
	SELECT DISTINCT msg.turn_id, msg.task_session_id, msg.tcid FROM msg
	WHERE msg.created >= ?1 AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND NOT EXISTS (SELECT 1 FROM <found: a row observed at or after ?1>)
)
SELECT 'turn_expected', turn_id, NULL, NULL, COUNT(DISTINCT tcid) FROM msg GROUP BY turn_id
UNION ALL
SELECT 'session_expected', task_session_id, NULL, NULL, COUNT(DISTINCT tcid) FROM msg GROUP BY task_session_id
UNION ALL
SELECT 'turn_union', k, NULL, NULL, COUNT(DISTINCT tcid) FROM (
	SELECT turn_id AS k, tcid FROM msg
	UNION SELECT turn_id, tool_call_id FROM sub WHERE turn_id IN (SELECT turn_id FROM msg)) u GROUP BY k
UNION ALL
SELECT 'session_union', k, NULL, NULL, COUNT(DISTINCT tcid) FROM (
	SELECT task_session_id AS k, tcid FROM msg
	UNION SELECT task_session_id, tool_call_id FROM sub WHERE task_session_id IN (SELECT task_session_id FROM msg)) u GROUP BY k
UNION ALL
SELECT 'missing', turn_id, task_session_id, tcid, 1 FROM missing
UNION ALL
SELECT 'messages', NULL, NULL, NULL, (SELECT COUNT(*) FROM task_session_messages)
