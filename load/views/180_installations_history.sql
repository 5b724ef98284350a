-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW installations_history AS
SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
	FROM fact_installation_state_history s JOIN runs r USING (installation_id, run_id)
	ORDER BY s.installation_id, s.snapshot_at;

COMMENT ON VIEW installations_history IS 'Installation state at every retained committed run: when a key appeared, changed state or precision, and how the row counts grew. Keys are never rewritten by Kandev (AC-24), so a changed raw value between runs is itself worth investigating.';
COMMENT ON COLUMN installations_history.activation_state IS 'activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent, at that run.';
