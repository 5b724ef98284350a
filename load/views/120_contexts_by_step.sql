-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW contexts_by_step AS
SELECT installation_id, workflow_step_id, workflow_step_name, workflow_step_position,
		count(*) AS cards,
		avg(sessions) AS sessions_per_card,
		count(*) FILTER (WHERE contexts_completeness = 'complete') AS cards_complete,
		count(*) FILTER (WHERE contexts_completeness = 'lower_bound') AS cards_lower_bound,
		count(*) FILTER (WHERE contexts_completeness = 'unknown') AS cards_unknown,
		avg(contexts) AS contexts_per_card_complete,
		avg(contexts_observed) AS contexts_per_card_observed,
		sum(subagent_contexts_live)::BIGINT AS subagent_contexts_live,
		sum(subagent_contexts_backfill)::BIGINT AS subagent_contexts_backfill
	FROM contexts_per_card GROUP BY ALL ORDER BY installation_id, workflow_step_position;

COMMENT ON VIEW contexts_by_step IS 'Per workflow step (the card''s current step): sessions per card and contexts per card. contexts_per_card_complete averages complete cards only; contexts_per_card_observed is a lower bound over all cards. For the step a turn started in, see fanout_by_step.';
COMMENT ON COLUMN contexts_by_step.cards_unknown IS 'Cards whose subagent part is unknown (not zero).';
COMMENT ON COLUMN contexts_by_step.contexts_per_card_complete IS 'Average contexts over cards whose count is complete only; NULL when no card of the step is complete.';
COMMENT ON COLUMN contexts_by_step.contexts_per_card_observed IS 'Average observed contexts over all cards: a lower bound where cards are incomplete.';
COMMENT ON COLUMN contexts_by_step.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN contexts_by_step.workflow_step_id IS 'The cards'' current workflow step; NULL for cards without one.';
COMMENT ON COLUMN contexts_by_step.workflow_step_name IS 'Step name (dim_workflow_step.name); NULL when the step is not in the warehouse.';
COMMENT ON COLUMN contexts_by_step.workflow_step_position IS 'Step position; NULL when the step is not in the warehouse.';
COMMENT ON COLUMN contexts_by_step.cards IS 'Cards currently in the step.';
COMMENT ON COLUMN contexts_by_step.sessions_per_card IS 'Average task_sessions rows per card (the historical series, unchanged in meaning).';
COMMENT ON COLUMN contexts_by_step.cards_complete IS 'Cards whose contexts_completeness = ''complete''.';
COMMENT ON COLUMN contexts_by_step.cards_lower_bound IS 'Cards whose subagent part is a lower bound.';
COMMENT ON COLUMN contexts_by_step.subagent_contexts_live IS 'Live subagent rows of the step''s cards.';
COMMENT ON COLUMN contexts_by_step.subagent_contexts_backfill IS 'Backfill subagent rows of the step''s cards.';
