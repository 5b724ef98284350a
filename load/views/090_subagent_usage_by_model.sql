-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_usage_by_model AS
SELECT installation_id, run_id, model, source,
		count(*) AS subagents,
		count(*) FILTER (WHERE is_measured) AS measured_rows,
		count(*) FILTER (WHERE NOT is_measured) AS unmeasured_rows,
		count(total_tokens) AS rows_with_tokens, avg(total_tokens) AS avg_total_tokens, sum(total_tokens)::BIGINT AS sum_total_tokens,
		count(tool_use_count) AS rows_with_tool_use_count, avg(tool_use_count) AS avg_tool_use_count,
		count(duration_ms) AS rows_with_duration, avg(duration_ms) AS avg_duration_ms
	FROM fact_subagent_context GROUP BY ALL ORDER BY installation_id, model NULLS LAST, source;

COMMENT ON VIEW subagent_usage_by_model IS 'Usage by child model and source. Same rules as subagent_usage.';
