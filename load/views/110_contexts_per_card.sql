-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW contexts_per_card AS
WITH s AS (
		SELECT installation_id, task_id, count(*) AS sessions,
			sum(subagents_observed)::BIGINT AS subagents_observed,
			sum(subagents_observed_live)::BIGINT AS subagents_observed_live,
			sum(subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
			bool_and(fanout_completeness = 'complete') AS all_complete
		FROM dim_session GROUP BY ALL)
	SELECT t.installation_id, t.run_id, t.task_id, t.identifier, t.workflow_step_id,
		ws.name AS workflow_step_name, ws.position AS workflow_step_position,
		coalesce(s.sessions, 0) AS sessions,
		coalesce(s.subagents_observed, 0) AS subagent_contexts_observed,
		coalesce(s.subagents_observed_live, 0) AS subagent_contexts_live,
		coalesce(s.subagents_observed_backfill, 0) AS subagent_contexts_backfill,
		CASE WHEN s.sessions IS NULL OR s.all_complete THEN coalesce(s.sessions, 0) + coalesce(s.subagents_observed, 0) END AS contexts,
		coalesce(s.sessions, 0) + coalesce(s.subagents_observed, 0) AS contexts_observed,
		CASE WHEN s.sessions IS NULL OR s.all_complete THEN 'complete'
		     WHEN s.subagents_observed > 0 THEN 'lower_bound' ELSE 'unknown' END AS contexts_completeness
	FROM dim_task t
	LEFT JOIN s USING (installation_id, task_id)
	LEFT JOIN dim_workflow_step ws ON ws.installation_id = t.installation_id AND ws.step_id = t.workflow_step_id;

COMMENT ON VIEW contexts_per_card IS 'Contexts per card (task): sessions (task_sessions rows, exactly as dim_session) plus subagent contexts. contexts is exact only when every session''s fan-out is complete; otherwise NULL, with contexts_observed as a lower bound.';
COMMENT ON COLUMN contexts_per_card.contexts IS 'sessions + subagent contexts; NULL unless contexts_completeness = ''complete''.';
COMMENT ON COLUMN contexts_per_card.contexts_completeness IS 'complete | lower_bound | unknown (subagent part unknown, not zero).';
COMMENT ON COLUMN contexts_per_card.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN contexts_per_card.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN contexts_per_card.task_id IS 'Task (card) id.';
COMMENT ON COLUMN contexts_per_card.identifier IS 'The card''s human identifier (e.g. KAN-12), no title or description.';
COMMENT ON COLUMN contexts_per_card.workflow_step_id IS 'The card''s current workflow step.';
COMMENT ON COLUMN contexts_per_card.workflow_step_name IS 'Step name (dim_workflow_step.name); NULL when the step is not in the warehouse.';
COMMENT ON COLUMN contexts_per_card.workflow_step_position IS 'Step position; NULL when the step is not in the warehouse.';
COMMENT ON COLUMN contexts_per_card.sessions IS 'task_sessions rows of the card (exactly dim_session; subagents are not sessions).';
COMMENT ON COLUMN contexts_per_card.subagent_contexts_observed IS 'Subagent rows observed across the card''s sessions (live + backfill).';
COMMENT ON COLUMN contexts_per_card.subagent_contexts_live IS 'Of subagent_contexts_observed, rows with source = ''live''.';
COMMENT ON COLUMN contexts_per_card.subagent_contexts_backfill IS 'Of subagent_contexts_observed, rows with source = ''backfill''.';
COMMENT ON COLUMN contexts_per_card.contexts_observed IS 'sessions + subagent_contexts_observed: a lower bound unless complete.';
