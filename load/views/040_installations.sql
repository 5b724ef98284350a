-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW installations AS
SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
	FROM fact_installation_state s JOIN runs r USING (installation_id, run_id);

COMMENT ON VIEW installations IS 'Installation state per installation at its latest committed run: each activation key raw, parsed and classified, the subagent table shape and the activation state.';
COMMENT ON COLUMN installations.activation_state IS 'activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent.';
COMMENT ON COLUMN installations.backfill_through_state IS 'present | absent | unparseable | none_matched ('''' : the backfill matched nothing, AC-24f).';
COMMENT ON COLUMN installations.subagent_table_shape IS 'execution_aware | pre_amendment | absent, observed from the live schema.';
