-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW data_time_range AS
WITH turns AS (
		SELECT installation_id, min(started_at) AS first_turn_started_at, max(started_at) AS last_turn_started_at, count(*) AS turns
		FROM dim_turn GROUP BY ALL),
	subagents AS (
		SELECT installation_id, min(observed_at) AS first_subagent_observed_at, max(observed_at) AS last_subagent_observed_at
		FROM fact_subagent_context GROUP BY ALL)
	SELECT i.installation_id, i.run_id, i.snapshot_at,
		t.first_turn_started_at, t.last_turn_started_at, coalesce(t.turns, 0) AS turns,
		s.first_subagent_observed_at, s.last_subagent_observed_at
	FROM fact_installation_state i
	LEFT JOIN turns t USING (installation_id)
	LEFT JOIN subagents s USING (installation_id)
	ORDER BY i.installation_id;

COMMENT ON VIEW data_time_range IS 'The time range the current data covers, per installation: the first and last turn start, the first and last subagent row, and the snapshot instant. A period outside this range has no data, which is not the same as zero activity; the *_by_period views only list periods inside it.';
COMMENT ON COLUMN data_time_range.snapshot_at IS 'When the run''s snapshot of the source was taken: nothing after it can be in the data.';
COMMENT ON COLUMN data_time_range.first_turn_started_at IS 'Earliest turn start in the current data; NULL when the installation has no turn.';
COMMENT ON COLUMN data_time_range.last_turn_started_at IS 'Latest turn start in the current data; NULL when the installation has no turn.';
COMMENT ON COLUMN data_time_range.first_subagent_observed_at IS 'Earliest subagent row; NULL when there is none (or no subagent table).';
COMMENT ON COLUMN data_time_range.last_subagent_observed_at IS 'Latest subagent row; NULL when there is none (or no subagent table).';
COMMENT ON COLUMN data_time_range.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN data_time_range.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN data_time_range.turns IS 'Turns in the current data.';
