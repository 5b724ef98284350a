-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_step AS
SELECT t.installation_id, t.run_id, t.workflow_step_id_at_start AS workflow_step_id,
		ws.name AS workflow_step_name, ws.position AS workflow_step_position,
		count(DISTINCT t.task_id) AS cards,
		count(*) AS turns,
		count(*) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
		count(*) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
		count(*) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
		sum(t.subagents_observed)::BIGINT AS subagents_observed,
		sum(t.subagents_observed_live)::BIGINT AS subagents_observed_live,
		sum(t.subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
		avg(t.fanout) AS avg_fanout_complete,
		max(t.fanout) AS max_fanout_complete,
		count(*) FILTER (WHERE t.fanout >= 2) AS turns_fanned_out_complete
	FROM dim_turn t
	LEFT JOIN dim_workflow_step ws ON ws.installation_id = t.installation_id AND ws.step_id = t.workflow_step_id_at_start
	GROUP BY ALL ORDER BY t.installation_id, ws.position NULLS LAST, workflow_step_id;

COMMENT ON VIEW fanout_by_step IS 'Subagent fan-out per workflow step, by the step each turn started in (metadata.workflow_step_id_at_start; NULL when the turn recorded none). avg_fanout_complete and max_fanout_complete are over complete turns only (NULL when a step has none); subagents_observed counts every observed row and is a lower bound unless every turn is complete. Answers ''which steps fan out most''.';
COMMENT ON COLUMN fanout_by_step.avg_fanout_complete IS 'Average exact fan-out over turns_complete turns only; NULL when none is complete (never 0 in place of unknown).';
COMMENT ON COLUMN fanout_by_step.cards IS 'Distinct tasks (cards) with a turn started in this step.';
COMMENT ON COLUMN fanout_by_step.max_fanout_complete IS 'Largest exact fan-out among complete turns; NULL when none is complete.';
COMMENT ON COLUMN fanout_by_step.subagents_observed IS 'Every subagent row observed in the step''s turns (live + backfill); a lower bound unless turns_complete = turns.';
COMMENT ON COLUMN fanout_by_step.turns_fanned_out_complete IS 'Complete turns with an exact fan-out of 2 or more.';
COMMENT ON COLUMN fanout_by_step.turns_unknown IS 'Turns started before capture_since (or with no boundary) without rows: fan-out unknown, not zero.';
COMMENT ON COLUMN fanout_by_step.workflow_step_id IS 'The step the turn started in (dim_turn.workflow_step_id_at_start); NULL when the turn''s metadata carries none.';
COMMENT ON COLUMN fanout_by_step.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_by_step.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN fanout_by_step.workflow_step_name IS 'Step name (dim_workflow_step.name); NULL when the step is not in the warehouse.';
COMMENT ON COLUMN fanout_by_step.workflow_step_position IS 'Step position; NULL when the step is not in the warehouse.';
COMMENT ON COLUMN fanout_by_step.turns IS 'Turns started in the step.';
COMMENT ON COLUMN fanout_by_step.turns_complete IS 'Turns with fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_step.turns_lower_bound IS 'Turns with fanout_completeness = ''lower_bound''.';
COMMENT ON COLUMN fanout_by_step.subagents_observed_live IS 'Of subagents_observed, rows with source = ''live''.';
COMMENT ON COLUMN fanout_by_step.subagents_observed_backfill IS 'Of subagents_observed, rows with source = ''backfill''.';
