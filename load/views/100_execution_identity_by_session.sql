-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW execution_identity_by_session AS
SELECT installation_id, run_id, task_session_id AS session_id,
		count(*) AS subagent_rows,
		CASE WHEN count(execution_id) = 0 THEN NULL ELSE count(DISTINCT execution_id) END AS recorded_executions,
		CASE WHEN count(execution_id) = 0 THEN 'unknown'
		     WHEN count(execution_id) < count(*) THEN 'lower_bound' ELSE 'exact' END AS executions_completeness,
		count(execution_id) AS rows_recorded,
		count(*) FILTER (WHERE execution_identity = 'unrecorded_backfill') AS rows_unrecorded_backfill,
		count(*) FILTER (WHERE execution_identity = 'unrecorded_pre_amendment') AS rows_unrecorded_pre_amendment,
		count(*) FILTER (WHERE execution_identity = 'unrecorded_live') AS rows_unrecorded_live,
		count(*) FILTER (WHERE execution_identity = 'not_recorded') AS rows_not_recorded
	FROM fact_subagent_context GROUP BY ALL;

COMMENT ON VIEW execution_identity_by_session IS 'Distinct recorded executions per session. The ''unknown'' sentinel is never an execution: sentinel rows are counted separately, and recorded_executions is NULL (unknown) when no row of the session has a recorded execution.';
COMMENT ON COLUMN execution_identity_by_session.executions_completeness IS 'exact (every row recorded) | lower_bound (some rows unrecorded) | unknown (none recorded).';
COMMENT ON COLUMN execution_identity_by_session.recorded_executions IS 'COUNT(DISTINCT execution_id) over recorded rows; NULL when none is recorded.';
COMMENT ON COLUMN execution_identity_by_session.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN execution_identity_by_session.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN execution_identity_by_session.session_id IS 'Session id (task_sessions.id).';
COMMENT ON COLUMN execution_identity_by_session.subagent_rows IS 'Subagent rows of the session.';
COMMENT ON COLUMN execution_identity_by_session.rows_recorded IS 'Rows with a recorded execution.';
COMMENT ON COLUMN execution_identity_by_session.rows_unrecorded_backfill IS 'Sentinel rows from the backfill.';
COMMENT ON COLUMN execution_identity_by_session.rows_unrecorded_pre_amendment IS 'Sentinel live rows before execution_since.';
COMMENT ON COLUMN execution_identity_by_session.rows_unrecorded_live IS 'Sentinel live rows: frames that arrived without an execution id.';
COMMENT ON COLUMN execution_identity_by_session.rows_not_recorded IS 'Rows of a pre-amendment table (no execution dimension).';
