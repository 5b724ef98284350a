-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_health AS
SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
		expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
	FROM fact_writer_health;

COMMENT ON VIEW writer_health IS 'Writer health (spec AC-28/29) at each installation''s latest run: shortfall (the alarm) and excess (attributed) are separate directed set differences over distinct (session, tool_call_id) keys since capture_since, never netted. last_observed_at NULL means nothing produced since activation, never healthy. Counts are NULL when the comparison was not run (capture_since absent or unparseable).';
COMMENT ON COLUMN writer_health.excess IS 'Distinct subagent keys since capture_since with no subagent-task message. Attributed, not an alarm. NULL when not evaluated.';
COMMENT ON COLUMN writer_health.last_observed_at IS 'MAX(observed_at) at or after capture_since; NULL = the writer has produced nothing since activation.';
COMMENT ON COLUMN writer_health.shortfall IS 'Distinct subagent-task message keys since capture_since with no subagent row. Non-zero is the alarm. NULL when not evaluated (never 0).';
COMMENT ON COLUMN writer_health.status IS 'healthy | shortfall | nothing_since_activation | not_activated | capture_key_unparseable | feature_absent.';
COMMENT ON COLUMN writer_health.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN writer_health.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN writer_health.evaluated_at IS 'When the evaluation ran (inside the run''s snapshot).';
COMMENT ON COLUMN writer_health.evaluated IS 'True when the comparison ran; false when it could not (capture_since absent or unparseable, or no subagent table).';
COMMENT ON COLUMN writer_health.capture_since IS 'The boundary the comparison was scoped to; NULL when not evaluated.';
COMMENT ON COLUMN writer_health.expected_keys IS 'Distinct (session, tool_call_id) keys of subagent-task messages since capture_since; NULL when not evaluated.';
COMMENT ON COLUMN writer_health.observed_keys IS 'Distinct (session, tool_call_id) keys of subagent rows since capture_since; NULL when not evaluated.';
COMMENT ON COLUMN writer_health.collisions IS 'Rows minus distinct (task_session_id, tool_call_id) since capture_since (cross-execution collisions); NULL when not evaluated.';
COMMENT ON COLUMN writer_health.malformed_metadata IS 'Messages since capture_since whose metadata is not JSON (skipped); NULL when not evaluated.';
COMMENT ON COLUMN writer_health.reason IS 'The verdict in plain words, with its counts and instants.';
