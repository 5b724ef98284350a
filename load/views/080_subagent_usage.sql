-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_usage AS
SELECT installation_id, run_id, subagent_type, source,
		count(*) AS subagents,
		count(*) FILTER (WHERE is_measured) AS measured_rows,
		count(*) FILTER (WHERE NOT is_measured) AS unmeasured_rows,
		count(total_tokens) AS rows_with_tokens, avg(total_tokens) AS avg_total_tokens, sum(total_tokens)::BIGINT AS sum_total_tokens,
		count(tool_use_count) AS rows_with_tool_use_count, avg(tool_use_count) AS avg_tool_use_count,
		count(duration_ms) AS rows_with_duration, avg(duration_ms) AS avg_duration_ms
	FROM fact_subagent_context GROUP BY ALL ORDER BY installation_id, subagent_type NULLS LAST, source;

COMMENT ON VIEW subagent_usage IS 'Usage by subagent type and source (live/backfill split). Averages are over measured rows only; measured and unmeasured counts are given; unreported metrics are never counted as 0.';
COMMENT ON COLUMN subagent_usage.avg_total_tokens IS 'Average over rows_with_tokens rows only (rows that reported tokens).';
COMMENT ON COLUMN subagent_usage.unmeasured_rows IS 'Rows that reported none of the three metrics (e.g. async_launched).';
