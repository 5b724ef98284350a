-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW installations AS
SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
	FROM fact_installation_state s JOIN runs r USING (installation_id, run_id);

COMMENT ON VIEW installations IS 'Installation state per installation at its latest committed run: each activation key raw, parsed and classified, the subagent table shape and the activation state.';
COMMENT ON COLUMN installations.activation_state IS 'activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent.';
COMMENT ON COLUMN installations.backfill_through_state IS 'present | absent | unparseable | none_matched ('''' : the backfill matched nothing, AC-24f).';
COMMENT ON COLUMN installations.subagent_table_shape IS 'execution_aware | pre_amendment | absent, observed from the live schema.';
COMMENT ON COLUMN installations.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN installations.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN installations.snapshot_at IS 'When the run''s consistent snapshot of the source was taken.';
COMMENT ON COLUMN installations.source_dialect IS 'sqlite or postgres.';
COMMENT ON COLUMN installations.source_location IS 'Source path or DSN with any password redacted.';
COMMENT ON COLUMN installations.kandev_version IS 'kandev_meta.kandev_version of the source; NULL when absent.';
COMMENT ON COLUMN installations.capture_since_raw IS 'subagent_context_capture_since verbatim from kandev_meta; NULL when the key is absent.';
COMMENT ON COLUMN installations.capture_since IS 'subagent_context_capture_since parsed (UTC, microseconds); NULL when absent or unparseable.';
COMMENT ON COLUMN installations.capture_since_precision IS 'Precision of the raw key (nanosecond, microsecond, second, ...); NULL when it does not parse.';
COMMENT ON COLUMN installations.capture_since_state IS 'present | absent | unparseable. An unparseable key is never treated as absent.';
COMMENT ON COLUMN installations.backfill_through_raw IS 'subagent_context_backfill_through verbatim from kandev_meta; NULL when the key is absent.';
COMMENT ON COLUMN installations.backfill_through IS 'subagent_context_backfill_through parsed (UTC); NULL when absent, '''' or unparseable.';
COMMENT ON COLUMN installations.backfill_through_precision IS 'Precision of the raw key (nanosecond, microsecond, second, ...); NULL when it does not parse.';
COMMENT ON COLUMN installations.execution_since_raw IS 'subagent_context_execution_since verbatim; NULL when absent.';
COMMENT ON COLUMN installations.execution_since IS 'subagent_context_execution_since parsed; NULL when absent (the shipped build never writes it) or unparseable.';
COMMENT ON COLUMN installations.execution_since_precision IS 'Precision of the raw key; NULL when it does not parse.';
COMMENT ON COLUMN installations.execution_since_state IS 'present | absent | unparseable.';
COMMENT ON COLUMN installations.subagent_rows IS 'Subagent rows written in the run; NULL when the store has no subagent table (unknown, not zero).';
COMMENT ON COLUMN installations.subagent_rows_live IS 'Of which source = ''live'' (NULL without a subagent table).';
COMMENT ON COLUMN installations.subagent_rows_backfill IS 'Of which source = ''backfill'' (NULL without a subagent table).';
COMMENT ON COLUMN installations.session_rows IS 'Rows read from task_sessions.';
COMMENT ON COLUMN installations.turn_rows IS 'Rows read from task_session_turns.';
COMMENT ON COLUMN installations.rejected_values IS 'Source values refused in the run (see rejects).';
COMMENT ON COLUMN installations.extractor_version IS 'kandev-extract version that wrote the run.';
COMMENT ON COLUMN installations.run_started_at IS 'When the run started.';
COMMENT ON COLUMN installations.run_finished_at IS 'When the run finished.';
