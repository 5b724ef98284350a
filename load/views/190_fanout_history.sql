-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_history AS
WITH runs AS (
		SELECT t.installation_id, t.run_id, i.snapshot_at,
			count(*) AS turns,
			count(*) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
			count(*) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
			count(*) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
			sum(t.subagents_observed)::BIGINT AS subagents_observed,
			sum(t.subagents_observed_live)::BIGINT AS subagents_observed_live,
			sum(t.subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
			avg(t.fanout) AS avg_fanout_complete,
			count(*) FILTER (WHERE t.fanout >= 2) AS turns_fanned_out_complete,
			count(t.completeness_reasons) AS turns_with_reasons
		FROM dim_turn_history t JOIN fact_installation_state_history i USING (installation_id, run_id)
		GROUP BY ALL),
	reasons AS (
		SELECT installation_id, run_id, histogram(code)::MAP(VARCHAR, BIGINT) AS per_code
		FROM (SELECT installation_id, run_id, unnest(string_split(completeness_reasons, ',')) AS code
			FROM dim_turn_history WHERE completeness_reasons <> '')
		GROUP BY ALL)
SELECT r.* EXCLUDE (turns_with_reasons),
		CASE WHEN r.turns_with_reasons = r.turns THEN coalesce(c.per_code, MAP {}::MAP(VARCHAR, BIGINT)) END AS completeness_reasons
	FROM runs r LEFT JOIN reasons c USING (installation_id, run_id)
	ORDER BY r.installation_id, r.snapshot_at;

COMMENT ON VIEW fanout_history IS 'Turn fan-out at every retained committed run, to follow the trend across nightly runs. avg_fanout_complete is over complete turns only (NULL when none). Each run is a full snapshot, so counts are cumulative, not per-night increments.';
COMMENT ON COLUMN fanout_history.avg_fanout_complete IS 'Average exact fan-out over turns_complete turns only; NULL when none is complete.';
COMMENT ON COLUMN fanout_history.snapshot_at IS 'The instant the run''s consistent snapshot of the source was taken.';
COMMENT ON COLUMN fanout_history.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_history.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN fanout_history.turns IS 'Turns in the run''s snapshot.';
COMMENT ON COLUMN fanout_history.turns_complete IS 'Turns with fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_history.turns_lower_bound IS 'Turns with fanout_completeness = ''lower_bound''.';
COMMENT ON COLUMN fanout_history.turns_unknown IS 'Turns with fanout_completeness = ''unknown'': fan-out unknown, not zero.';
COMMENT ON COLUMN fanout_history.subagents_observed IS 'Subagent rows observed in the run''s turns: a lower bound unless turns_complete = turns (a 0 over unknown turns is not a zero).';
COMMENT ON COLUMN fanout_history.subagents_observed_live IS 'Of subagents_observed, rows with source = ''live''.';
COMMENT ON COLUMN fanout_history.subagents_observed_backfill IS 'Of subagents_observed, rows with source = ''backfill''.';
COMMENT ON COLUMN fanout_history.completeness_reasons IS 'Turns per reason code (docs/warehouse.md, Reason codes): how many of the run''s turns each rule kept from complete. A turn can have several codes; complete turns have none. NULL when a turn of the run was written before the codes existed.';
COMMENT ON COLUMN fanout_history.turns_fanned_out_complete IS 'Complete turns with an exact fan-out of 2 or more.';
