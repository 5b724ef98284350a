-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_turn AS
SELECT installation_id, run_id, turn_id, session_id, task_id, workflow_step_id_at_start, started_at,
		subagents_observed, subagents_observed_live, subagents_observed_backfill,
		fanout, fanout_completeness,
		CASE WHEN completeness_reasons = '' THEN []::VARCHAR[] ELSE string_split(completeness_reasons, ',') END AS completeness_reasons,
		capture_window, distinct_tool_calls, live_backfill_overlap,
		messages_expected, fanout_lower_bound, writer_shortfall, capture_boundary_ambiguous, unattributed_session_rows
	FROM dim_turn;

COMMENT ON VIEW fanout_by_turn IS 'Subagent fan-out per turn. fanout is exact (and a true zero is 0) only when fanout_completeness = ''complete''; otherwise it is NULL and subagents_observed is a lower bound or, at 0, UNKNOWN rather than zero.';
COMMENT ON COLUMN fanout_by_turn.fanout IS 'Exact number of subagent invocations (a backfill row duplicating a live row''s tool call counts once); NULL unless fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_turn.fanout_lower_bound IS 'Distinct tool calls known from the turn''s rows and its subagent-task messages together: the turn had at least this many subagents. At 0 under unknown it is not a zero: there is no evidence.';
COMMENT ON COLUMN fanout_by_turn.messages_expected IS 'Distinct tool calls named by the turn''s subagent-task messages (messages can be deleted: a lower bound).';
COMMENT ON COLUMN fanout_by_turn.writer_shortfall IS 'Tool calls of the turn''s messages at or after capture_since with no subagent row (writer health''s shortfall, placed here); NULL when not measured.';
COMMENT ON COLUMN fanout_by_turn.unattributed_session_rows IS 'Rows of the turn''s session that name no turn of the snapshot: any may belong to this turn, so it is at most lower_bound.';
COMMENT ON COLUMN fanout_by_turn.completeness_reasons IS 'Every rule that decided fanout_completeness, as stable codes in a fixed order (docs/warehouse.md, Reason codes): empty exactly when complete; no_evidence among them exactly when unknown. NULL for a run written before the codes existed.';
COMMENT ON COLUMN fanout_by_turn.fanout_completeness IS 'complete (proven: started at/after capture_since outside its ambiguous second, no writer shortfall, no more rows than tool calls beyond the live/backfill overlap, no unplaced row in the session) | lower_bound (rows or messages exist: at least fanout_lower_bound) | unknown (no evidence: not zero).';
COMMENT ON COLUMN fanout_by_turn.subagents_observed IS 'Rows observed for this turn: always given, but only a lower bound unless complete.';
COMMENT ON COLUMN fanout_by_turn.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_by_turn.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN fanout_by_turn.turn_id IS 'Turn id (task_session_turns.id).';
COMMENT ON COLUMN fanout_by_turn.session_id IS 'Session id (task_sessions.id).';
COMMENT ON COLUMN fanout_by_turn.task_id IS 'Task (card) id.';
COMMENT ON COLUMN fanout_by_turn.workflow_step_id_at_start IS 'The workflow step when the turn started (metadata.workflow_step_id_at_start); NULL when the metadata carries none.';
COMMENT ON COLUMN fanout_by_turn.started_at IS 'When the turn started (UTC); compared with capture_since at extraction for completeness. NULL when the source has none or it does not parse (see rejects): then capture_window is no_boundary and fanout_completeness is never complete.';
COMMENT ON COLUMN fanout_by_turn.subagents_observed_live IS 'Of subagents_observed, rows with source = ''live''.';
COMMENT ON COLUMN fanout_by_turn.subagents_observed_backfill IS 'Of subagents_observed, rows with source = ''backfill''.';
COMMENT ON COLUMN fanout_by_turn.capture_window IS 'Where the turn''s started_at falls against capture_since: after_capture | before_capture | no_boundary (no valid capture_since, or no started_at).';
COMMENT ON COLUMN fanout_by_turn.distinct_tool_calls IS 'Distinct tool calls among the turn''s rows (execution-agnostic): two rows for one tool call count once.';
COMMENT ON COLUMN fanout_by_turn.live_backfill_overlap IS 'Tool calls that have both a live and a backfill row (AC-22''s DO NOTHING cannot catch a live row with a real execution id): one invocation, counted once in an exact fanout.';
COMMENT ON COLUMN fanout_by_turn.capture_boundary_ambiguous IS 'True when the turn started inside the second after a second-precise capture_since, where the true boundary lies: then it is lower_bound, never complete.';
