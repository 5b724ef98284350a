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
COMMENT ON COLUMN subagent_usage_by_model.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_usage_by_model.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_usage_by_model.model IS 'Child model; NULL groups rows that reported none.';
COMMENT ON COLUMN subagent_usage_by_model.source IS 'live or backfill (recovered from message metadata; not like-for-like with live rows, AC-25).';
COMMENT ON COLUMN subagent_usage_by_model.subagents IS 'Subagent rows in the group (live and backfill as the group says).';
COMMENT ON COLUMN subagent_usage_by_model.measured_rows IS 'Rows that reported at least one metric.';
COMMENT ON COLUMN subagent_usage_by_model.unmeasured_rows IS 'Rows that reported none of the three metrics (e.g. async_launched): never counted as zero usage.';
COMMENT ON COLUMN subagent_usage_by_model.rows_with_tokens IS 'Rows that reported total_tokens: the rows avg_total_tokens is over.';
COMMENT ON COLUMN subagent_usage_by_model.avg_total_tokens IS 'Average total_tokens over the rows_with_tokens rows that reported it; NULL when none did (never 0).';
COMMENT ON COLUMN subagent_usage_by_model.sum_total_tokens IS 'Sum of reported total_tokens; NULL when none reported.';
COMMENT ON COLUMN subagent_usage_by_model.rows_with_tool_use_count IS 'Rows that reported tool_use_count.';
COMMENT ON COLUMN subagent_usage_by_model.avg_tool_use_count IS 'Average tool_use_count over the rows_with_tool_use_count rows that reported it (a reported 0 counts); NULL when none did.';
COMMENT ON COLUMN subagent_usage_by_model.rows_with_duration IS 'Rows that reported duration_ms.';
COMMENT ON COLUMN subagent_usage_by_model.avg_duration_ms IS 'Average duration_ms over the rows_with_duration rows that reported it; NULL when none did (never 0).';
