-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW fanout_by_session AS
SELECT installation_id, run_id, session_id, task_id, state, started_at,
		subagents_observed, subagents_observed_live, subagents_observed_backfill,
		fanout, fanout_completeness,
		CASE WHEN completeness_reasons = '' THEN []::VARCHAR[] ELSE string_split(completeness_reasons, ',') END AS completeness_reasons,
		capture_window, distinct_tool_calls, live_backfill_overlap,
		messages_expected, fanout_lower_bound, writer_shortfall, capture_boundary_ambiguous
	FROM dim_session;

COMMENT ON VIEW fanout_by_session IS 'Subagent fan-out per session (task_sessions). Same completeness rules as fanout_by_turn.';
COMMENT ON COLUMN fanout_by_session.fanout IS 'Exact number of subagents; NULL unless fanout_completeness = ''complete''.';
COMMENT ON COLUMN fanout_by_session.completeness_reasons IS 'Every rule that decided fanout_completeness, as stable codes in a fixed order (docs/warehouse.md, Reason codes): empty exactly when complete; no_evidence among them exactly when unknown. NULL for a run written before the codes existed.';
COMMENT ON COLUMN fanout_by_session.fanout_completeness IS 'complete | lower_bound | unknown (never read an unknown as zero).';
COMMENT ON COLUMN fanout_by_session.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN fanout_by_session.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN fanout_by_session.session_id IS 'Session id (task_sessions.id).';
COMMENT ON COLUMN fanout_by_session.task_id IS 'Task (card) id.';
COMMENT ON COLUMN fanout_by_session.state IS 'Session state as stored (CREATED, RUNNING, ...).';
COMMENT ON COLUMN fanout_by_session.started_at IS 'When the session started (UTC); compared with capture_since at extraction for completeness. NULL when the source has none or it does not parse (see rejects): then capture_window is no_boundary and fanout_completeness is never complete.';
COMMENT ON COLUMN fanout_by_session.subagents_observed IS 'Subagent rows observed: always given, but only a lower bound unless fanout_completeness = ''complete''; at 0 under unknown it is not a zero.';
COMMENT ON COLUMN fanout_by_session.subagents_observed_live IS 'Of subagents_observed, rows with source = ''live''.';
COMMENT ON COLUMN fanout_by_session.subagents_observed_backfill IS 'Of subagents_observed, rows with source = ''backfill''.';
COMMENT ON COLUMN fanout_by_session.capture_window IS 'Where the session''s started_at falls against capture_since: after_capture | before_capture | no_boundary (no valid capture_since, or no started_at).';
COMMENT ON COLUMN fanout_by_session.distinct_tool_calls IS 'Distinct tool calls among the session''s rows (execution-agnostic): two rows for one tool call count once.';
COMMENT ON COLUMN fanout_by_session.live_backfill_overlap IS 'Tool calls that have both a live and a backfill row (AC-22''s DO NOTHING cannot catch a live row with a real execution id): one invocation, counted once in an exact fanout.';
COMMENT ON COLUMN fanout_by_session.messages_expected IS 'Distinct non-empty tool calls named by the session''s subagent-task messages (the health check''s rule). Messages can be deleted too: a lower bound, never exact.';
COMMENT ON COLUMN fanout_by_session.fanout_lower_bound IS 'Distinct tool calls of the session''s rows and messages together: it had at least this many subagents, whatever its completeness. At 0 under unknown it is not a zero: there is no evidence.';
COMMENT ON COLUMN fanout_by_session.writer_shortfall IS 'Tool calls of the session''s messages at or after capture_since with no subagent row observed at or after it: writer health''s shortfall, placed here (non-zero makes it lower_bound). NULL when not measured (no valid capture_since, or no subagent table).';
COMMENT ON COLUMN fanout_by_session.capture_boundary_ambiguous IS 'True when the session started inside the second after a second-precise capture_since, where the true boundary lies: then it is lower_bound, never complete.';
