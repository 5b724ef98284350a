WITH msg AS (
	SELECT turn_id, task_session_id, task_id, meta #>> '{tool_call_id}' AS tcid, created_at AS created
	FROM (SELECT m.turn_id, m.task_session_id, m.task_id, m.created_at, m.metadata::jsonb AS meta
		FROM task_session_messages m
		WHERE m.metadata IS NOT NULL AND octet_length(m.metadata) <= 1048576 AND m.metadata NOT IN ('', 'null')
			AND (strpos(m.metadata, 'subagent_task') > 0 OR strpos(m.metadata, '\') > 0) <exclusion of messages whose metadata is not JSON, after a failed first try>) x
	WHERE meta #>> '{normalized,kind}' = 'subagent_task' AND jsonb_typeof(meta -> 'tool_call_id') = 'string'
		AND meta #>> '{tool_call_id}' <> ''
),
sub AS (<rows: the subagent rows' ids>),
missing AS (
	SELECT DISTINCT msg.turn_id, msg.task_session_id, msg.tcid FROM msg
	WHERE msg.created >= $1::timestamp AND COALESCE(msg.task_session_id, '') <> '' AND COALESCE(msg.task_id, '') <> ''
		AND NOT EXISTS (SELECT 1 FROM <found: a row observed at or after $1>)
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
