-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW deletions AS
WITH d AS (
		SELECT installation_id, deleted_detected_run_id, last_seen_run_id, last_seen_snapshot_at, 1 AS subagent_rows, 0 AS sessions, 0 AS turns
		FROM archive_subagent_context
		UNION ALL
		SELECT installation_id, deleted_detected_run_id, last_seen_run_id, last_seen_snapshot_at, 0, 1, 0 FROM archive_session
		UNION ALL
		SELECT installation_id, deleted_detected_run_id, last_seen_run_id, last_seen_snapshot_at, 0, 0, 1 FROM archive_turn)
	SELECT installation_id, deleted_detected_run_id, any_value(last_seen_run_id) AS last_seen_run_id,
		max(last_seen_snapshot_at) AS last_seen_snapshot_at,
		sum(sessions)::BIGINT AS sessions_deleted, sum(turns)::BIGINT AS turns_deleted, sum(subagent_rows)::BIGINT AS subagent_rows_deleted
	FROM d GROUP BY installation_id, deleted_detected_run_id
	ORDER BY installation_id, last_seen_snapshot_at;

COMMENT ON VIEW deletions IS 'What was deleted from the source between runs, per installation and per run that detected it: sessions, turns and subagent rows the previous run had and that run had not. The rows themselves are in the archive_* tables.';
COMMENT ON COLUMN deletions.deleted_detected_run_id IS 'The run that found the rows missing.';
COMMENT ON COLUMN deletions.last_seen_run_id IS 'The run before it, which last saw them.';
COMMENT ON COLUMN deletions.last_seen_snapshot_at IS 'That run''s snapshot: the rows were deleted after it and before the detecting run''s snapshot.';
COMMENT ON COLUMN deletions.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN deletions.sessions_deleted IS 'Sessions deleted.';
COMMENT ON COLUMN deletions.turns_deleted IS 'Turns deleted.';
COMMENT ON COLUMN deletions.subagent_rows_deleted IS 'Subagent rows deleted.';
