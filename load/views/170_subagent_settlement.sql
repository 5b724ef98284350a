-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_settlement AS
WITH s AS (
		SELECT installation_id, run_id, source, is_async, settled_at, observed_at, is_terminal,
			CASE WHEN settled_at IS NOT NULL THEN date_diff('microsecond', observed_at, settled_at) / 1000.0 END AS settle_ms
		FROM fact_subagent_context)
	SELECT s.installation_id, s.run_id, s.source, s.is_async,
		count(*) AS subagents,
		count(s.settled_at) AS settled,
		count(*) FILTER (WHERE s.settled_at IS NULL) AS outstanding,
		count(*) FILTER (WHERE s.is_terminal AND s.settled_at IS NULL) AS terminal_without_settled_at,
		count(*) FILTER (WHERE NOT s.is_terminal AND s.settled_at IS NOT NULL) AS settled_without_terminal_status,
		count(*) FILTER (WHERE s.settle_ms >= 0) AS rows_with_settle_time,
		count(*) FILTER (WHERE s.settle_ms < 0) AS rows_settled_before_observed,
		avg(s.settle_ms) FILTER (WHERE s.settle_ms >= 0) AS avg_settle_ms,
		quantile_cont(s.settle_ms, 0.5) FILTER (WHERE s.settle_ms >= 0) AS median_settle_ms,
		quantile_cont(s.settle_ms, 0.9) FILTER (WHERE s.settle_ms >= 0) AS p90_settle_ms,
		max(s.settle_ms) FILTER (WHERE s.settle_ms >= 0) AS max_settle_ms,
		min(s.observed_at) FILTER (WHERE s.settled_at IS NULL) AS oldest_outstanding_observed_at,
		max(date_diff('microsecond', s.observed_at, i.snapshot_at) / 1000.0) FILTER (WHERE s.settled_at IS NULL) AS max_outstanding_age_ms
	FROM s JOIN fact_installation_state i USING (installation_id, run_id)
	GROUP BY ALL ORDER BY s.installation_id, s.source, s.is_async;

COMMENT ON VIEW subagent_settlement IS 'Settlement per installation, source and is_async: settled (settled_at set when tool_status first became terminal, AC-11) vs outstanding (settled_at NULL: never observed terminal, AC-10). Time to settle = settled_at - observed_at over settled rows only; outstanding rows have no time to settle and are never counted as 0. Backfill rows take observed_at and settled_at from message timestamps, so their times are not comparable with live rows. Async dispatches (is_async) settle when dispatched, not when the child finishes.';
COMMENT ON COLUMN subagent_settlement.avg_settle_ms IS 'Average milliseconds from observed_at to settled_at over rows_with_settle_time rows; NULL when there are none.';
COMMENT ON COLUMN subagent_settlement.max_outstanding_age_ms IS 'Milliseconds from the oldest outstanding row''s observed_at to the run''s snapshot; NULL when none is outstanding.';
COMMENT ON COLUMN subagent_settlement.max_settle_ms IS 'Longest time to settle; NULL when there are none.';
COMMENT ON COLUMN subagent_settlement.median_settle_ms IS 'Median of the same (interpolated); NULL when there are none.';
COMMENT ON COLUMN subagent_settlement.oldest_outstanding_observed_at IS 'observed_at of the oldest outstanding row; NULL when none is outstanding.';
COMMENT ON COLUMN subagent_settlement.outstanding IS 'Rows with settled_at NULL at the snapshot: not (yet) observed terminal.';
COMMENT ON COLUMN subagent_settlement.p90_settle_ms IS '90th percentile of the same (interpolated); NULL when there are none.';
COMMENT ON COLUMN subagent_settlement.rows_settled_before_observed IS 'Settled rows with settled_at < observed_at, excluded from the statistics and counted here.';
COMMENT ON COLUMN subagent_settlement.rows_with_settle_time IS 'Settled rows with settled_at >= observed_at: the rows the settle-time statistics are over.';
COMMENT ON COLUMN subagent_settlement.settled IS 'Rows with settled_at set.';
COMMENT ON COLUMN subagent_settlement.settled_without_terminal_status IS 'Rows with settled_at set but a non-terminal tool_status (expected 0).';
COMMENT ON COLUMN subagent_settlement.terminal_without_settled_at IS 'Rows whose tool_status is terminal but settled_at is NULL (a writer inconsistency; expected 0).';
COMMENT ON COLUMN subagent_settlement.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_settlement.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_settlement.source IS 'live or backfill (recovered from message metadata; not like-for-like with live rows, AC-25).';
COMMENT ON COLUMN subagent_settlement.is_async IS 'True for asynchronous launches, which settle when dispatched; synchronous ones settle when the child finishes.';
COMMENT ON COLUMN subagent_settlement.subagents IS 'Rows in the group.';
