-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW installations_history AS
SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
	FROM fact_installation_state_history s JOIN runs r USING (installation_id, run_id)
	ORDER BY s.installation_id, s.snapshot_at;

COMMENT ON VIEW installations_history IS 'Installation state at every retained committed run: when a key appeared, changed state or precision, and how the row counts grew. Keys are never rewritten by Kandev (AC-24), so a changed raw value between runs is itself worth investigating.';
COMMENT ON COLUMN installations_history.activation_state IS 'activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent, at that run.';
COMMENT ON COLUMN installations_history.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN installations_history.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN installations_history.snapshot_at IS 'When the run''s consistent snapshot of the source was taken.';
COMMENT ON COLUMN installations_history.source_dialect IS 'sqlite or postgres.';
COMMENT ON COLUMN installations_history.source_location IS 'Source path or DSN with any password redacted.';
COMMENT ON COLUMN installations_history.kandev_version IS 'kandev_meta.kandev_version of the source; NULL when absent.';
COMMENT ON COLUMN installations_history.capture_since_raw IS 'subagent_context_capture_since verbatim from kandev_meta; NULL when the key is absent.';
COMMENT ON COLUMN installations_history.capture_since IS 'subagent_context_capture_since parsed (UTC, microseconds); NULL when absent or unparseable.';
COMMENT ON COLUMN installations_history.capture_since_precision IS 'Precision of the raw key (nanosecond, microsecond, second, ...); NULL when it does not parse.';
COMMENT ON COLUMN installations_history.capture_since_state IS 'present | absent | unparseable. An unparseable key is never treated as absent.';
COMMENT ON COLUMN installations_history.backfill_through_raw IS 'subagent_context_backfill_through verbatim from kandev_meta; NULL when the key is absent.';
COMMENT ON COLUMN installations_history.backfill_through IS 'subagent_context_backfill_through parsed (UTC); NULL when absent, '''' or unparseable.';
COMMENT ON COLUMN installations_history.backfill_through_precision IS 'Precision of the raw key (nanosecond, microsecond, second, ...); NULL when it does not parse.';
COMMENT ON COLUMN installations_history.backfill_through_state IS 'present | absent | unparseable | none_matched ('''': the backfill matched nothing, AC-24f).';
COMMENT ON COLUMN installations_history.execution_since_raw IS 'subagent_context_execution_since verbatim; NULL when absent.';
COMMENT ON COLUMN installations_history.execution_since IS 'subagent_context_execution_since parsed; NULL when absent (the shipped build never writes it) or unparseable.';
COMMENT ON COLUMN installations_history.execution_since_precision IS 'Precision of the raw key; NULL when it does not parse.';
COMMENT ON COLUMN installations_history.execution_since_state IS 'present | absent | unparseable.';
COMMENT ON COLUMN installations_history.subagent_table_shape IS 'execution_aware | pre_amendment | absent, observed from the live schema (AC-33b).';
COMMENT ON COLUMN installations_history.subagent_rows IS 'Subagent rows written in the run; NULL when the store has no subagent table (unknown, not zero).';
COMMENT ON COLUMN installations_history.subagent_rows_live IS 'Of which source = ''live'' (NULL without a subagent table).';
COMMENT ON COLUMN installations_history.subagent_rows_backfill IS 'Of which source = ''backfill'' (NULL without a subagent table).';
COMMENT ON COLUMN installations_history.session_rows IS 'Rows read from task_sessions.';
COMMENT ON COLUMN installations_history.turn_rows IS 'Rows read from task_session_turns.';
COMMENT ON COLUMN installations_history.rejected_values IS 'Source values refused in the run (see rejects).';
COMMENT ON COLUMN installations_history.extractor_version IS 'kandev-extract version that wrote the run.';
COMMENT ON COLUMN installations_history.run_started_at IS 'When the run started.';
COMMENT ON COLUMN installations_history.run_finished_at IS 'When the run finished.';
