-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_shortfall_turns AS
SELECT s.installation_id, s.run_id, s.session_id, s.turn_id, t.started_at AS turn_started_at,
		list(s.tool_call_id ORDER BY s.tool_call_id) AS missing_tool_call_ids, count(*) AS missing
	FROM fact_writer_shortfall s
	LEFT JOIN dim_turn t ON t.installation_id = s.installation_id AND t.turn_id = s.turn_id
	GROUP BY ALL
	ORDER BY s.installation_id, turn_started_at, s.session_id;

COMMENT ON VIEW writer_shortfall_turns IS 'Where the writer-health shortfall is: per turn, the tool_call_ids of subagent-task messages at or after capture_since that have no subagent row. Identifiers only, no content. These turns are lower_bound in fanout_by_turn.';
COMMENT ON COLUMN writer_shortfall_turns.missing_tool_call_ids IS 'The tool calls with a message but no subagent row.';
COMMENT ON COLUMN writer_shortfall_turns.missing IS 'How many: the turn''s writer_shortfall.';
COMMENT ON COLUMN writer_shortfall_turns.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN writer_shortfall_turns.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN writer_shortfall_turns.session_id IS 'The session of the messages (task_sessions.id).';
COMMENT ON COLUMN writer_shortfall_turns.turn_id IS 'The turn of the messages; NULL for messages that name none (NULL or empty turn_id).';
COMMENT ON COLUMN writer_shortfall_turns.turn_started_at IS 'When the turn started; NULL when the turn is not in the snapshot.';
