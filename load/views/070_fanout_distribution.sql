-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_distribution AS
SELECT installation_id, fanout_completeness, subagents_observed, count(*) AS turns,
		count(*) FILTER (WHERE subagents_observed_backfill > 0) AS turns_with_backfill_rows,
		count(*) FILTER (WHERE subagents_observed_live > 0) AS turns_with_live_rows
	FROM dim_turn GROUP BY installation_id, fanout_completeness, subagents_observed
	ORDER BY installation_id, fanout_completeness, subagents_observed;

COMMENT ON VIEW fanout_distribution IS 'Turns by number of subagents observed, split by completeness: only the ''complete'' rows are an exact distribution; a 0 under ''unknown'' is not a zero. turns_with_backfill_rows / turns_with_live_rows carry the provenance split.';
