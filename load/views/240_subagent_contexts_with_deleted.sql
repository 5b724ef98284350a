-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_contexts_with_deleted AS
SELECT *, false AS is_deleted, NULL::VARCHAR AS deleted_detected_run_id, NULL::VARCHAR AS last_seen_run_id,
		NULL::TIMESTAMPTZ AS last_seen_snapshot_at
	FROM fact_subagent_context
	UNION ALL BY NAME
	SELECT *, true AS is_deleted FROM archive_subagent_context;

COMMENT ON VIEW subagent_contexts_with_deleted IS 'ARCHIVE-INCLUSIVE: the current subagent rows plus every row deleted from the source since the installation''s first run (is_deleted = true), each flagged with the run that detected the deletion and the run that last saw it. Use it to count what ever existed; use subagent_contexts for the source as it is now.';
COMMENT ON COLUMN subagent_contexts_with_deleted.is_deleted IS 'True for a row the source no longer has (from archive_subagent_context).';
COMMENT ON COLUMN subagent_contexts_with_deleted.deleted_detected_run_id IS 'The run that first found the row missing; NULL for current rows.';
COMMENT ON COLUMN subagent_contexts_with_deleted.last_seen_run_id IS 'The last run whose snapshot still had the row; NULL for current rows.';
COMMENT ON COLUMN subagent_contexts_with_deleted.last_seen_snapshot_at IS 'That run''s snapshot instant: the row was deleted after it.';
