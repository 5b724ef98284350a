package load

// Analyst views (issue 6): nesting, settlement, fan-out by the step a turn
// started in, the fan-out distribution with its live/backfill split, and
// history views where a trend over retained runs matters. Each follows the
// same rules as views.go: metrics and averages over measured rows only,
// NULL (never 0) for what is unknown, and the live/backfill split wherever
// both kinds of row are counted together.

func init() {
	analyticViews = append(analyticViews,
		view{
			name: "fanout_distribution_by_source",
			sql: `SELECT installation_id, run_id, fanout_completeness, subagents_observed,
					count(*) AS turns,
					count(*) FILTER (WHERE subagents_observed > 0 AND subagents_observed_backfill = 0) AS turns_live_only,
					count(*) FILTER (WHERE subagents_observed > 0 AND subagents_observed_live = 0) AS turns_backfill_only,
					count(*) FILTER (WHERE subagents_observed_live > 0 AND subagents_observed_backfill > 0) AS turns_mixed,
					sum(subagents_observed_live)::BIGINT AS subagents_live,
					sum(subagents_observed_backfill)::BIGINT AS subagents_backfill
				FROM dim_turn GROUP BY ALL
				ORDER BY installation_id, fanout_completeness, subagents_observed`,
			comment: "Turns by number of subagents observed, split by fan-out completeness and by the source of their rows (live/backfill). " +
				"Only fanout_completeness = 'complete' rows form an exact distribution; under 'unknown' a 0 means no row was observed, not zero subagents; " +
				"under 'lower_bound' the true count may be higher. Backfill rows are not like-for-like with live rows (AC-25).",
			columns: map[string]string{
				"subagents_observed":  "Subagent rows observed for the turn (the bucket). Exact only when fanout_completeness = 'complete'.",
				"turns":               "Turns in this bucket.",
				"turns_live_only":     "Turns in the bucket whose observed subagents are all live rows.",
				"turns_backfill_only": "Turns in the bucket whose observed subagents all came from the backfill.",
				"turns_mixed":         "Turns in the bucket with both live and backfill rows.",
				"fanout_completeness": "complete | lower_bound | unknown (an unknown 0 is not a zero).",
			},
			disclose: true,
		},
		view{
			name: "fanout_by_step",
			sql: `SELECT t.installation_id, t.run_id, t.workflow_step_id_at_start AS workflow_step_id,
					ws.name AS workflow_step_name, ws.position AS workflow_step_position,
					count(DISTINCT t.task_id) AS cards,
					count(*) AS turns,
					count(*) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
					count(*) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
					count(*) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
					sum(t.subagents_observed)::BIGINT AS subagents_observed,
					sum(t.subagents_observed_live)::BIGINT AS subagents_observed_live,
					sum(t.subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
					avg(t.fanout) AS avg_fanout_complete,
					max(t.fanout) AS max_fanout_complete,
					count(*) FILTER (WHERE t.fanout >= 2) AS turns_fanned_out_complete
				FROM dim_turn t
				LEFT JOIN dim_workflow_step ws ON ws.installation_id = t.installation_id AND ws.step_id = t.workflow_step_id_at_start
				GROUP BY ALL ORDER BY t.installation_id, ws.position NULLS LAST, workflow_step_id`,
			comment: "Subagent fan-out per workflow step, by the step each turn started in (metadata.workflow_step_id_at_start; NULL when the turn recorded none). " +
				"avg_fanout_complete and max_fanout_complete are over complete turns only (NULL when a step has none); subagents_observed counts every observed row and is a lower bound unless every turn is complete. " +
				"Answers 'which steps fan out most'.",
			columns: map[string]string{
				"workflow_step_id":          "The step the turn started in (dim_turn.workflow_step_id_at_start); NULL when the turn's metadata carries none.",
				"cards":                     "Distinct tasks (cards) with a turn started in this step.",
				"avg_fanout_complete":       "Average exact fan-out over turns_complete turns only; NULL when none is complete (never 0 in place of unknown).",
				"max_fanout_complete":       "Largest exact fan-out among complete turns; NULL when none is complete.",
				"turns_fanned_out_complete": "Complete turns with an exact fan-out of 2 or more.",
				"subagents_observed":        "Every subagent row observed in the step's turns (live + backfill); a lower bound unless turns_complete = turns.",
				"turns_unknown":             "Turns started before capture_since (or with no boundary) without rows: fan-out unknown, not zero.",
			},
			disclose: true,
		},
		view{
			name: "subagent_nesting",
			sql: `WITH RECURSIVE cand AS (
					SELECT c.installation_id, c.subagent_id, p.subagent_id AS parent_id,
						coalesce(c.execution_id = p.execution_id, false) AS same_execution
					FROM fact_subagent_context c
					JOIN fact_subagent_context p ON p.installation_id = c.installation_id AND p.run_id = c.run_id
						AND p.task_session_id = c.task_session_id AND p.tool_call_id = c.parent_tool_call_id AND p.subagent_id <> c.subagent_id
					WHERE c.parent_tool_call_id IS NOT NULL),
				pick AS (
					SELECT installation_id, subagent_id, count(*) AS candidates,
						CASE WHEN count(*) = 1 THEN any_value(parent_id)
						     WHEN count(*) FILTER (WHERE same_execution) = 1 THEN any_value(parent_id) FILTER (WHERE same_execution) END AS parent_id
					FROM cand GROUP BY ALL),
				walk AS (
					SELECT installation_id, subagent_id, parent_id AS ancestor, 1 AS depth FROM pick WHERE parent_id IS NOT NULL
					UNION ALL
					SELECT w.installation_id, w.subagent_id, e.parent_id, w.depth + 1
					FROM walk w JOIN pick e ON e.installation_id = w.installation_id AND e.subagent_id = w.ancestor
					WHERE e.parent_id IS NOT NULL AND w.depth < 64),
				top AS (
					SELECT installation_id, subagent_id, max(depth) AS depth, arg_max(ancestor, depth) AS top_ancestor
					FROM walk GROUP BY ALL)
				SELECT c.installation_id, c.run_id, c.task_session_id, c.task_id, c.turn_id, c.subagent_id, c.tool_call_id,
					c.subagent_type, c.model, c.source, c.observed_at, c.parent_tool_call_id,
					coalesce(pk.candidates, 0) AS parent_candidates,
					pk.parent_id AS parent_subagent_id, p.subagent_type AS parent_subagent_type, p.source AS parent_source,
					CASE WHEN pk.parent_id IS NOT NULL THEN 'resolved'
					     WHEN coalesce(pk.candidates, 0) = 0 THEN 'parent_not_observed'
					     ELSE 'ambiguous' END AS parent_resolution,
					coalesce(tp.depth + CASE WHEN a.parent_tool_call_id IS NOT NULL THEN 1 ELSE 0 END, 1) AS nesting_depth,
					CASE WHEN a.subagent_id IS NOT NULL AND a.parent_tool_call_id IS NULL THEN 'exact' ELSE 'lower_bound' END AS nesting_depth_completeness
				FROM fact_subagent_context c
				LEFT JOIN pick pk ON pk.installation_id = c.installation_id AND pk.subagent_id = c.subagent_id
				LEFT JOIN fact_subagent_context p ON p.installation_id = c.installation_id AND p.subagent_id = pk.parent_id
				LEFT JOIN top tp ON tp.installation_id = c.installation_id AND tp.subagent_id = c.subagent_id
				LEFT JOIN fact_subagent_context a ON a.installation_id = c.installation_id AND a.subagent_id = tp.top_ancestor
				WHERE c.parent_tool_call_id IS NOT NULL`,
			comment: "Nesting: one row per subagent that was spawned by another subagent (parent_tool_call_id set, AC-6), with its parent resolved within the same session by tool_call_id. " +
				"When two rows share the parent's tool_call_id (a cross-execution collision) the parent with the same recorded execution_id is chosen; 'unknown' sentinel rows never match each other. " +
				"parent_not_observed means no row carries that tool call (the parent was not captured, e.g. before capture_since); it is not a top-level subagent. " +
				"nesting_depth counts the ancestors known to exist (an unresolved parent counts as one): 1 = spawned by a top-level subagent; it is exact only when the chain ends at a row without a parent.",
			columns: map[string]string{
				"parent_tool_call_id":        "The spawning subagent's tool call, as recorded by Kandev (AC-6).",
				"parent_candidates":          "Rows in the same session whose tool_call_id equals parent_tool_call_id.",
				"parent_subagent_id":         "The resolved parent row; NULL when not observed or ambiguous.",
				"parent_resolution":          "resolved | parent_not_observed (no captured row carries the parent tool call) | ambiguous (several candidates, none singled out by execution_id).",
				"nesting_depth":              "Ancestors known to exist: 1 = child of a top-level subagent, 2 = grandchild, and so on; an unresolved parent counts as one. A lower bound unless nesting_depth_completeness = 'exact'.",
				"nesting_depth_completeness": "exact (the chain ends at a top-level subagent) | lower_bound (an ancestor is not observed or ambiguous).",
			},
			disclose: true,
		},
		view{
			name: "subagent_nesting_summary",
			sql: `WITH n AS (
					SELECT installation_id, source,
						count(*) FILTER (WHERE parent_resolution = 'resolved') AS parents_resolved,
						count(*) FILTER (WHERE parent_resolution = 'parent_not_observed') AS parents_not_observed,
						count(*) FILTER (WHERE parent_resolution = 'ambiguous') AS parents_ambiguous,
						count(DISTINCT parent_subagent_id) AS spawning_subagents,
						max(nesting_depth) AS max_nesting_depth
					FROM subagent_nesting GROUP BY ALL),
				s AS (
					SELECT installation_id, run_id, source, count(*) AS subagents,
						count(*) FILTER (WHERE is_nested) AS nested_subagents
					FROM fact_subagent_context GROUP BY ALL)
				SELECT s.installation_id, s.run_id, s.source, s.subagents, s.nested_subagents,
					coalesce(n.parents_resolved, 0) AS parents_resolved,
					coalesce(n.parents_not_observed, 0) AS parents_not_observed,
					coalesce(n.parents_ambiguous, 0) AS parents_ambiguous,
					coalesce(n.spawning_subagents, 0) AS spawning_subagents,
					n.max_nesting_depth
				FROM s LEFT JOIN n USING (installation_id, source)
				ORDER BY s.installation_id, s.source`,
			comment: "Nesting per installation and source (live/backfill of the child row): how many subagents were spawned by another subagent, how many parents resolve, and how deep the trees go. " +
				"max_nesting_depth is NULL when nothing is nested; spawning_subagents counts distinct resolved parents only.",
			columns: map[string]string{
				"nested_subagents":   "Rows with a parent_tool_call_id (spawned by a subagent).",
				"spawning_subagents": "Distinct resolved parent rows: subagents that spawned subagents.",
				"max_nesting_depth":  "Deepest nesting_depth; NULL when no row is nested (not 0).",
			},
		},
		view{
			name: "subagent_settlement",
			sql: `WITH s AS (
					SELECT installation_id, run_id, source, is_async, settled_at, observed_at, is_terminal,
						CASE WHEN settled_at IS NOT NULL THEN date_diff('microsecond', observed_at, settled_at) / 1000.0 END AS settle_ms
					FROM fact_subagent_context)
				SELECT s.installation_id, s.run_id, s.source, s.is_async,
					count(*) AS subagents,
					count(s.settled_at) AS settled,
					count(*) FILTER (WHERE s.settled_at IS NULL) AS outstanding,
					count(*) FILTER (WHERE s.is_terminal AND s.settled_at IS NULL) AS terminal_without_settled_at,
					count(*) FILTER (WHERE NOT s.is_terminal AND s.settled_at IS NOT NULL) AS settled_without_terminal_status,
					count(*) FILTER (WHERE s.settle_ms >= 0) AS rows_with_settle_time,
					count(*) FILTER (WHERE s.settle_ms < 0) AS rows_settled_before_observed,
					avg(s.settle_ms) FILTER (WHERE s.settle_ms >= 0) AS avg_settle_ms,
					quantile_cont(s.settle_ms, 0.5) FILTER (WHERE s.settle_ms >= 0) AS median_settle_ms,
					quantile_cont(s.settle_ms, 0.9) FILTER (WHERE s.settle_ms >= 0) AS p90_settle_ms,
					max(s.settle_ms) FILTER (WHERE s.settle_ms >= 0) AS max_settle_ms,
					min(s.observed_at) FILTER (WHERE s.settled_at IS NULL) AS oldest_outstanding_observed_at,
					max(date_diff('microsecond', s.observed_at, i.snapshot_at) / 1000.0) FILTER (WHERE s.settled_at IS NULL) AS max_outstanding_age_ms
				FROM s JOIN fact_installation_state i USING (installation_id, run_id)
				GROUP BY ALL ORDER BY s.installation_id, s.source, s.is_async`,
			comment: "Settlement per installation, source and is_async: settled (settled_at set when tool_status first became terminal, AC-11) vs outstanding (settled_at NULL: never observed terminal, AC-10). " +
				"Time to settle = settled_at - observed_at over settled rows only; outstanding rows have no time to settle and are never counted as 0. " +
				"Backfill rows take observed_at and settled_at from message timestamps, so their times are not comparable with live rows. " +
				"Async dispatches (is_async) settle when dispatched, not when the child finishes.",
			columns: map[string]string{
				"settled":                         "Rows with settled_at set.",
				"outstanding":                     "Rows with settled_at NULL at the snapshot: not (yet) observed terminal.",
				"terminal_without_settled_at":     "Rows whose tool_status is terminal but settled_at is NULL (a writer inconsistency; expected 0).",
				"settled_without_terminal_status": "Rows with settled_at set but a non-terminal tool_status (expected 0).",
				"rows_with_settle_time":           "Settled rows with settled_at >= observed_at: the rows the settle-time statistics are over.",
				"rows_settled_before_observed":    "Settled rows with settled_at < observed_at, excluded from the statistics and counted here.",
				"avg_settle_ms":                   "Average milliseconds from observed_at to settled_at over rows_with_settle_time rows; NULL when there are none.",
				"median_settle_ms":                "Median of the same (interpolated); NULL when there are none.",
				"p90_settle_ms":                   "90th percentile of the same (interpolated); NULL when there are none.",
				"max_settle_ms":                   "Longest time to settle; NULL when there are none.",
				"oldest_outstanding_observed_at":  "observed_at of the oldest outstanding row; NULL when none is outstanding.",
				"max_outstanding_age_ms":          "Milliseconds from the oldest outstanding row's observed_at to the run's snapshot; NULL when none is outstanding.",
			},
			disclose: true,
		},
		view{
			name: "installations_history",
			sql: `SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
				FROM fact_installation_state_history s JOIN runs r USING (installation_id, run_id)
				ORDER BY s.installation_id, s.snapshot_at`,
			comment: "Installation state at every retained committed run: when a key appeared, changed state or precision, and how the row counts grew. Keys are never rewritten by Kandev (AC-24), so a changed raw value between runs is itself worth investigating.",
			columns: map[string]string{
				"activation_state": "activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent, at that run.",
			},
		},
		view{
			name: "fanout_history",
			sql: `SELECT t.installation_id, t.run_id, i.snapshot_at,
					count(*) AS turns,
					count(*) FILTER (WHERE t.fanout_completeness = 'complete') AS turns_complete,
					count(*) FILTER (WHERE t.fanout_completeness = 'lower_bound') AS turns_lower_bound,
					count(*) FILTER (WHERE t.fanout_completeness = 'unknown') AS turns_unknown,
					sum(t.subagents_observed)::BIGINT AS subagents_observed,
					sum(t.subagents_observed_live)::BIGINT AS subagents_observed_live,
					sum(t.subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
					avg(t.fanout) AS avg_fanout_complete,
					count(*) FILTER (WHERE t.fanout >= 2) AS turns_fanned_out_complete
				FROM dim_turn_history t JOIN fact_installation_state_history i USING (installation_id, run_id)
				GROUP BY ALL ORDER BY t.installation_id, i.snapshot_at`,
			comment: "Turn fan-out at every retained committed run, to follow the trend across nightly runs. avg_fanout_complete is over complete turns only (NULL when none). Each run is a full snapshot, so counts are cumulative, not per-night increments.",
			columns: map[string]string{
				"snapshot_at":         "The instant the run's consistent snapshot of the source was taken.",
				"avg_fanout_complete": "Average exact fan-out over turns_complete turns only; NULL when none is complete.",
			},
		},
	)
}
