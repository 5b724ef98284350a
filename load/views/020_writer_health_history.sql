-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_health_history AS
SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
		expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
	FROM fact_writer_health_history ORDER BY installation_id, evaluated_at;

COMMENT ON VIEW writer_health_history IS 'Writer health at every retained run, to see when a shortfall began.';
COMMENT ON COLUMN writer_health_history.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN writer_health_history.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN writer_health_history.evaluated_at IS 'When the evaluation ran (inside the run''s snapshot).';
COMMENT ON COLUMN writer_health_history.status IS 'healthy | shortfall | nothing_since_activation | not_activated | capture_key_unparseable | feature_absent.';
COMMENT ON COLUMN writer_health_history.evaluated IS 'True when the comparison ran; false when it could not (capture_since absent or unparseable, or no subagent table).';
COMMENT ON COLUMN writer_health_history.capture_since IS 'The boundary the comparison was scoped to; NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.shortfall IS 'Distinct subagent-task message keys since capture_since with no subagent row: the alarm. NULL when not evaluated (never 0).';
COMMENT ON COLUMN writer_health_history.excess IS 'Distinct subagent keys since capture_since with no subagent-task message: attributed, not an alarm, never netted against the shortfall. NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.expected_keys IS 'Distinct (session, tool_call_id) keys of subagent-task messages since capture_since; NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.observed_keys IS 'Distinct (session, tool_call_id) keys of subagent rows since capture_since; NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.collisions IS 'Rows minus distinct (task_session_id, tool_call_id) since capture_since (cross-execution collisions); NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.last_observed_at IS 'MAX(observed_at) at or after capture_since; NULL = nothing produced since activation (never "healthy").';
COMMENT ON COLUMN writer_health_history.malformed_metadata IS 'Messages since capture_since whose metadata is not JSON (skipped); NULL when not evaluated.';
COMMENT ON COLUMN writer_health_history.reason IS 'The verdict in plain words, with its counts and instants.';
