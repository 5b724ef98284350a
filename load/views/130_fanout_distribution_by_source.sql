-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_distribution_by_source AS
SELECT installation_id, run_id, fanout_completeness, subagents_observed,
		count(*) AS turns,
		count(*) FILTER (WHERE subagents_observed > 0 AND subagents_observed_backfill = 0) AS turns_live_only,
		count(*) FILTER (WHERE subagents_observed > 0 AND subagents_observed_live = 0) AS turns_backfill_only,
		count(*) FILTER (WHERE subagents_observed_live > 0 AND subagents_observed_backfill > 0) AS turns_mixed,
		sum(subagents_observed_live)::BIGINT AS subagents_live,
		sum(subagents_observed_backfill)::BIGINT AS subagents_backfill
	FROM dim_turn GROUP BY ALL
	ORDER BY installation_id, fanout_completeness, subagents_observed;

COMMENT ON VIEW fanout_distribution_by_source IS 'Turns by number of subagents observed, split by fan-out completeness and by the source of their rows (live/backfill). Only fanout_completeness = ''complete'' rows form an exact distribution; under ''unknown'' a 0 means no row was observed, not zero subagents; under ''lower_bound'' the true count may be higher. Backfill rows are not like-for-like with live rows (AC-25).';
COMMENT ON COLUMN fanout_distribution_by_source.fanout_completeness IS 'complete | lower_bound | unknown (an unknown 0 is not a zero).';
COMMENT ON COLUMN fanout_distribution_by_source.subagents_observed IS 'Subagent rows observed for the turn (the bucket). Exact only when fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_distribution_by_source.turns IS 'Turns in this bucket.';
COMMENT ON COLUMN fanout_distribution_by_source.turns_backfill_only IS 'Turns in the bucket whose observed subagents all came from the backfill.';
COMMENT ON COLUMN fanout_distribution_by_source.turns_live_only IS 'Turns in the bucket whose observed subagents are all live rows.';
COMMENT ON COLUMN fanout_distribution_by_source.turns_mixed IS 'Turns in the bucket with both live and backfill rows.';
COMMENT ON COLUMN fanout_distribution_by_source.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_distribution_by_source.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN fanout_distribution_by_source.subagents_live IS 'Live subagent rows in the bucket''s turns.';
COMMENT ON COLUMN fanout_distribution_by_source.subagents_backfill IS 'Backfill subagent rows in the bucket''s turns.';
