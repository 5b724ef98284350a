-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW writer_health_history AS
SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
		expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
	FROM fact_writer_health_history ORDER BY installation_id, evaluated_at;

COMMENT ON VIEW writer_health_history IS 'Writer health at every retained run, to see when a shortfall began.';
