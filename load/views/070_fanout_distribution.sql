-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_distribution AS
SELECT installation_id, fanout_completeness, subagents_observed, count(*) AS turns,
		count(*) FILTER (WHERE subagents_observed_backfill > 0) AS turns_with_backfill_rows,
		count(*) FILTER (WHERE subagents_observed_live > 0) AS turns_with_live_rows
	FROM dim_turn GROUP BY installation_id, fanout_completeness, subagents_observed
	ORDER BY installation_id, fanout_completeness, subagents_observed;

COMMENT ON VIEW fanout_distribution IS 'Turns by number of subagents observed, split by completeness: only the ''complete'' rows are an exact distribution; a 0 under ''unknown'' is not a zero. turns_with_backfill_rows / turns_with_live_rows carry the provenance split.';
COMMENT ON COLUMN fanout_distribution.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_distribution.fanout_completeness IS 'The turns'' completeness: complete only where proven (see fanout_by_turn), otherwise lower_bound when rows or messages exist, or unknown (no evidence: NOT zero).';
COMMENT ON COLUMN fanout_distribution.subagents_observed IS 'Bucket: subagent rows observed per turn (exact only under complete; a 0 under unknown is not a zero).';
COMMENT ON COLUMN fanout_distribution.turns IS 'Turns in the bucket.';
COMMENT ON COLUMN fanout_distribution.turns_with_backfill_rows IS 'Turns in the bucket with at least one backfill row (not like-for-like with live).';
COMMENT ON COLUMN fanout_distribution.turns_with_live_rows IS 'Turns in the bucket with at least one live row.';
