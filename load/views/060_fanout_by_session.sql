-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_session AS
SELECT installation_id, run_id, session_id, task_id, state, started_at,
		subagents_observed, subagents_observed_live, subagents_observed_backfill,
		fanout, fanout_completeness, capture_window, distinct_tool_calls, live_backfill_overlap,
		messages_expected, fanout_lower_bound, writer_shortfall, capture_boundary_ambiguous
	FROM dim_session;

COMMENT ON VIEW fanout_by_session IS 'Subagent fan-out per session (task_sessions). Same completeness rules as fanout_by_turn.';
COMMENT ON COLUMN fanout_by_session.fanout IS 'Exact number of subagents; NULL unless fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_session.fanout_completeness IS 'complete | lower_bound | unknown (never read an unknown as zero).';
