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
