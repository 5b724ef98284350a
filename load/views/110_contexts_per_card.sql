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
