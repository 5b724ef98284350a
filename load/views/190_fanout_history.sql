-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_history AS
SELECT t.installation_id, t.run_id, i.snapshot_at,
		count(*) AS turns,
		count(*) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
		count(*) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
		count(*) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
		sum(t.subagents_observed)::BIGINT AS subagents_observed,
		sum(t.subagents_observed_live)::BIGINT AS subagents_observed_live,
		sum(t.subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
		avg(t.fanout) AS avg_fanout_complete,
		count(*) FILTER (WHERE t.fanout >= 2) AS turns_fanned_out_complete
	FROM dim_turn_history t JOIN fact_installation_state_history i USING (installation_id, run_id)
	GROUP BY ALL ORDER BY t.installation_id, i.snapshot_at;

COMMENT ON VIEW fanout_history IS 'Turn fan-out at every retained committed run, to follow the trend across nightly runs. avg_fanout_complete is over complete turns only (NULL when none). Each run is a full snapshot, so counts are cumulative, not per-night increments.';
COMMENT ON COLUMN fanout_history.avg_fanout_complete IS 'Average exact fan-out over turns_complete turns only; NULL when none is complete.';
COMMENT ON COLUMN fanout_history.snapshot_at IS 'The instant the run''s consistent snapshot of the source was taken.';
