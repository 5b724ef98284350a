-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_turn AS
SELECT installation_id, run_id, turn_id, session_id, task_id, workflow_step_id_at_start, started_at,
		subagents_observed, subagents_observed_live, subagents_observed_backfill,
		fanout, fanout_completeness, capture_window
	FROM dim_turn;

COMMENT ON VIEW fanout_by_turn IS 'Subagent fan-out per turn. fanout is exact (and a true zero is 0) only when fanout_completeness = ''complete''; otherwise it is NULL and subagents_observed is a lower bound or, at 0, UNKNOWN rather than zero.';
COMMENT ON COLUMN fanout_by_turn.fanout IS 'Exact number of subagents; NULL unless fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_turn.fanout_completeness IS 'complete (started at/after capture_since) | lower_bound (before, rows exist) | unknown (before or no boundary, no rows: not zero).';
COMMENT ON COLUMN fanout_by_turn.subagents_observed IS 'Rows observed for this turn: always given, but only a lower bound unless complete.';
