-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_health_by_period AS
WITH grains(grain, step) AS (VALUES ('day', INTERVAL 1 DAY), ('week', INTERVAL 7 DAY), ('month', INTERVAL 1 MONTH)),
	h AS (
		SELECT installation_id, timezone('UTC', evaluated_at) AS evaluated_utc, status, evaluated, shortfall, excess, collisions
		FROM fact_writer_health_history WHERE evaluated_at IS NOT NULL),
	span AS (SELECT installation_id, min(evaluated_utc) AS first_at, max(evaluated_utc) AS last_at FROM h GROUP BY ALL),
	periods AS (
		SELECT s.installation_id, g.grain, g.step,
			unnest(generate_series(date_trunc(g.grain, s.first_at), date_trunc(g.grain, s.last_at), g.step)) AS period_start
		FROM span s CROSS JOIN grains g)
	SELECT p.installation_id, p.grain, p.period_start::DATE AS period_start, (p.period_start + p.step)::DATE AS period_end,
		count(h.evaluated_utc) AS runs,
		count(h.evaluated_utc) FILTER (WHERE h.evaluated) AS evaluations,
		arg_max(h.status, h.evaluated_utc) AS last_status,
		max(h.shortfall) AS max_shortfall,
		arg_max(h.shortfall, h.evaluated_utc) AS last_shortfall,
		arg_max(h.excess, h.evaluated_utc) AS last_excess,
		max(h.collisions) AS max_collisions
	FROM periods p
	LEFT JOIN h ON h.installation_id = p.installation_id AND date_trunc(p.grain, h.evaluated_utc) = p.period_start
	GROUP BY ALL
	ORDER BY p.installation_id, p.grain, period_start;

COMMENT ON VIEW writer_health_by_period IS 'Writer health over retained runs per UTC day, ISO week and month, from the first to the last run: the last status of each period, the worst shortfall and the last shortfall and excess. A period with runs = 0 had no run (no evidence either way), not a healthy writer. Counts are NULL when no run of the period could evaluate health.';
COMMENT ON COLUMN writer_health_by_period.grain IS 'day | week | month (UTC; weeks start on Monday). Filter on one grain.';
COMMENT ON COLUMN writer_health_by_period.runs IS 'Retained runs evaluated in the period; 0 = no run, no evidence.';
COMMENT ON COLUMN writer_health_by_period.evaluations IS 'Runs of the period that could compare messages with subagent rows (capture_since valid).';
COMMENT ON COLUMN writer_health_by_period.last_status IS 'Status at the period''s last run; NULL when it had no run.';
COMMENT ON COLUMN writer_health_by_period.max_shortfall IS 'Largest shortfall of the period''s runs; NULL when none evaluated. Non-zero is the alarm.';
COMMENT ON COLUMN writer_health_by_period.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN writer_health_by_period.period_start IS 'First day of the period (UTC).';
COMMENT ON COLUMN writer_health_by_period.period_end IS 'First day after the period (UTC).';
COMMENT ON COLUMN writer_health_by_period.last_shortfall IS 'Shortfall at the period''s last run that evaluated health; NULL when no run of the period evaluated (not 0).';
COMMENT ON COLUMN writer_health_by_period.last_excess IS 'Excess at the period''s last run that evaluated health (attributed, not an alarm); NULL when no run of the period evaluated.';
COMMENT ON COLUMN writer_health_by_period.max_collisions IS 'Largest collision count of the period''s runs; NULL when none evaluated.';
