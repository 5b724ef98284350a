-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_period AS
WITH grains(grain, step) AS (VALUES ('day', INTERVAL 1 DAY), ('week', INTERVAL 7 DAY), ('month', INTERVAL 1 MONTH)),
	t AS (
		SELECT installation_id, timezone('UTC', started_at) AS started_utc, fanout, fanout_completeness, completeness_reasons,
			subagents_observed, subagents_observed_live, subagents_observed_backfill
		FROM dim_turn WHERE started_at IS NOT NULL),
	span AS (
		SELECT r.installation_id, min(t.started_utc) AS data_from, max(t.started_utc) AS data_to, timezone('UTC', any_value(r.snapshot_at)) AS snapshot_utc
		FROM fact_installation_state r JOIN t USING (installation_id) GROUP BY ALL),
	periods AS (
		SELECT s.installation_id, g.grain, g.step, s.data_from, s.snapshot_utc,
			unnest(generate_series(date_trunc(g.grain, s.data_from), date_trunc(g.grain, s.data_to), g.step)) AS period_start
		FROM span s CROSS JOIN grains g),
	agg AS (
		SELECT p.installation_id, p.grain, p.period_start::DATE AS period_start, (p.period_start + p.step)::DATE AS period_end,
			p.period_start < p.data_from OR p.period_start + p.step > p.snapshot_utc AS period_is_partial,
			count(t.started_utc) AS turns,
			count(t.started_utc) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
			count(t.started_utc) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
			count(t.started_utc) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
			coalesce(sum(t.subagents_observed), 0)::BIGINT AS subagents_observed,
			coalesce(sum(t.subagents_observed_live), 0)::BIGINT AS subagents_observed_live,
			coalesce(sum(t.subagents_observed_backfill), 0)::BIGINT AS subagents_observed_backfill,
			sum(t.fanout)::BIGINT AS subagents_in_complete_turns,
			avg(t.fanout) AS avg_fanout_complete,
			count(t.completeness_reasons) AS turns_with_reasons
		FROM periods p
		LEFT JOIN t ON t.installation_id = p.installation_id AND date_trunc(p.grain, t.started_utc) = p.period_start
		GROUP BY ALL),
	reasons AS (
		SELECT p.installation_id, p.grain, p.period_start::DATE AS period_start, histogram(u.code)::MAP(VARCHAR, BIGINT) AS per_code
		FROM periods p JOIN (SELECT installation_id, started_utc, unnest(string_split(completeness_reasons, ',')) AS code
				FROM t WHERE completeness_reasons <> '') u
			ON u.installation_id = p.installation_id AND date_trunc(p.grain, u.started_utc) = p.period_start
		GROUP BY ALL)
SELECT a.* EXCLUDE (turns_with_reasons),
		CASE WHEN a.turns_with_reasons = a.turns THEN coalesce(r.per_code, MAP {}::MAP(VARCHAR, BIGINT)) END AS completeness_reasons
	FROM agg a LEFT JOIN reasons r USING (installation_id, grain, period_start)
	ORDER BY a.installation_id, a.grain, a.period_start;

COMMENT ON VIEW fanout_by_period IS 'Turn fan-out per UTC day, ISO week (from Monday) and month, by the period each turn started in, for every period from the first to the last turn of the current data (a period without turns is listed with 0 turns). Only complete turns give an exact fan-out: avg_fanout_complete and subagents_in_complete_turns are over them only (NULL when a period has none); subagents_observed is a lower bound unless turns_complete = turns. Periods after the last turn are not listed: see data_time_range.';
COMMENT ON COLUMN fanout_by_period.grain IS 'day | week | month (UTC; weeks start on Monday). Filter on one grain.';
COMMENT ON COLUMN fanout_by_period.period_start IS 'First day of the period (UTC).';
COMMENT ON COLUMN fanout_by_period.period_end IS 'First day after the period (UTC).';
COMMENT ON COLUMN fanout_by_period.period_is_partial IS 'True when the data begins inside the period or the snapshot was taken before it ended: its counts cover part of it only.';
COMMENT ON COLUMN fanout_by_period.turns IS 'Turns started in the period (an exact count: every turn of the store is read).';
COMMENT ON COLUMN fanout_by_period.subagents_observed IS 'Subagent rows of the period''s turns: a lower bound unless every turn of the period is complete.';
COMMENT ON COLUMN fanout_by_period.subagents_in_complete_turns IS 'Exact subagents of the complete turns only; NULL when the period has no complete turn (never 0 for unknown).';
COMMENT ON COLUMN fanout_by_period.completeness_reasons IS 'Turns of the period per reason code (docs/warehouse.md, Reason codes): how many each rule kept from complete. A turn can have several codes; complete turns have none. NULL when a turn of the period was written before the codes existed.';
COMMENT ON COLUMN fanout_by_period.avg_fanout_complete IS 'Average exact fan-out over complete turns only; NULL when none is complete.';
COMMENT ON COLUMN fanout_by_period.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_by_period.turns_complete IS 'Turns with fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_period.turns_lower_bound IS 'Turns with fanout_completeness = ''lower_bound''.';
COMMENT ON COLUMN fanout_by_period.turns_unknown IS 'Turns with fanout_completeness = ''unknown'': fan-out unknown, not zero.';
COMMENT ON COLUMN fanout_by_period.subagents_observed_live IS 'Of subagents_observed, rows with source = ''live''.';
COMMENT ON COLUMN fanout_by_period.subagents_observed_backfill IS 'Of subagents_observed, rows with source = ''backfill''.';
