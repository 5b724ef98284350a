-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_usage_by_model_period AS
WITH grains(grain, step) AS (VALUES ('day', INTERVAL 1 DAY), ('week', INTERVAL 7 DAY), ('month', INTERVAL 1 MONTH)),
	f AS (
		SELECT installation_id, timezone('UTC', observed_at) AS observed_utc, model, source, is_measured,
			total_tokens, tool_use_count, duration_ms
		FROM fact_subagent_context WHERE observed_at IS NOT NULL)
	SELECT f.installation_id, g.grain, date_trunc(g.grain, f.observed_utc)::DATE AS period_start,
		(date_trunc(g.grain, f.observed_utc) + g.step)::DATE AS period_end, f.model, f.source,
		count(*) AS subagents,
		count(*) FILTER (WHERE f.is_measured) AS measured_rows,
		count(*) FILTER (WHERE NOT f.is_measured) AS unmeasured_rows,
		count(f.total_tokens) AS rows_with_tokens, avg(f.total_tokens) AS avg_total_tokens, sum(f.total_tokens)::BIGINT AS sum_total_tokens,
		count(f.tool_use_count) AS rows_with_tool_use_count, avg(f.tool_use_count) AS avg_tool_use_count,
		count(f.duration_ms) AS rows_with_duration, avg(f.duration_ms) AS avg_duration_ms
	FROM f CROSS JOIN grains g
	GROUP BY ALL
	ORDER BY f.installation_id, g.grain, period_start, f.model NULLS LAST, f.source;

COMMENT ON VIEW subagent_usage_by_model_period IS 'Usage by child model and source per UTC day, ISO week and month of observed_at. Same rules as subagent_usage: averages and sums over rows that reported the metric only, with measured and unmeasured counts; unreported metrics are never 0. Only periods with rows are listed; see data_time_range for the span the data covers.';
COMMENT ON COLUMN subagent_usage_by_model_period.grain IS 'day | week | month (UTC; weeks start on Monday). Filter on one grain.';
COMMENT ON COLUMN subagent_usage_by_model_period.period_start IS 'First day of the period (UTC).';
COMMENT ON COLUMN subagent_usage_by_model_period.sum_total_tokens IS 'Sum of reported total_tokens; NULL when none reported.';
COMMENT ON COLUMN subagent_usage_by_model_period.avg_total_tokens IS 'Average over rows_with_tokens rows only; NULL when none reported.';
COMMENT ON COLUMN subagent_usage_by_model_period.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_usage_by_model_period.period_end IS 'First day after the period (UTC).';
COMMENT ON COLUMN subagent_usage_by_model_period.model IS 'Child model as recorded; NULL when not recorded.';
COMMENT ON COLUMN subagent_usage_by_model_period.source IS 'live or backfill.';
COMMENT ON COLUMN subagent_usage_by_model_period.subagents IS 'Subagent rows in the group.';
COMMENT ON COLUMN subagent_usage_by_model_period.measured_rows IS 'Rows that reported at least one metric.';
COMMENT ON COLUMN subagent_usage_by_model_period.unmeasured_rows IS 'Rows that reported none of the three metrics.';
COMMENT ON COLUMN subagent_usage_by_model_period.rows_with_tokens IS 'Rows that reported total_tokens.';
COMMENT ON COLUMN subagent_usage_by_model_period.rows_with_tool_use_count IS 'Rows that reported tool_use_count.';
COMMENT ON COLUMN subagent_usage_by_model_period.avg_tool_use_count IS 'Average tool_use_count over rows_with_tool_use_count rows only; NULL when none reported.';
COMMENT ON COLUMN subagent_usage_by_model_period.rows_with_duration IS 'Rows that reported duration_ms.';
COMMENT ON COLUMN subagent_usage_by_model_period.avg_duration_ms IS 'Average duration_ms over rows_with_duration rows only; NULL when none reported.';
