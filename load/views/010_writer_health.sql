-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_health AS
SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
		expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
	FROM fact_writer_health;

COMMENT ON VIEW writer_health IS 'Writer health (spec AC-28/29) at each installation''s latest run: shortfall (the alarm) and excess (attributed) are separate directed set differences over distinct (session, tool_call_id) keys since capture_since, never netted. last_observed_at NULL means nothing produced since activation, never healthy. Counts are NULL when the comparison was not run (capture_since absent or unparseable).';
COMMENT ON COLUMN writer_health.excess IS 'Distinct subagent keys since capture_since with no subagent-task message. Attributed, not an alarm.';
COMMENT ON COLUMN writer_health.last_observed_at IS 'MAX(observed_at) at or after capture_since; NULL = the writer has produced nothing since activation.';
COMMENT ON COLUMN writer_health.shortfall IS 'Distinct subagent-task message keys since capture_since with no subagent row. Non-zero is the alarm.';
COMMENT ON COLUMN writer_health.status IS 'healthy | shortfall | nothing_since_activation | not_activated | capture_key_unparseable | feature_absent.';
