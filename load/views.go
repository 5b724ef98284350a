package load

// Base tables written as Parquet, each exposed as <table>_history (every
// retained committed run) and <table> (the latest committed run per
// installation).
var baseTables = []string{
	"fact_subagent_context", "fact_installation_state", "dim_task", "dim_session", "dim_turn",
	"dim_workflow", "dim_workflow_step", "disclosures", "rejects", "fact_writer_health",
}

// view is an analytic view over the current base views, with its comments.
type view struct {
	name, sql, comment string
	columns            map[string]string
	disclose           bool // append the current disclosures to the comment
}

var analyticViews = []view{
	{
		name: "writer_health",
		sql: `SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
				expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
			FROM fact_writer_health`,
		comment: "Writer health (spec AC-28/29) at each installation's latest run: shortfall (the alarm) and excess (attributed) are separate directed set differences over distinct (session, tool_call_id) keys since capture_since, never netted. last_observed_at NULL means nothing produced since activation, never healthy. Counts are NULL when the comparison was not run (capture_since absent or unparseable).",
		columns: map[string]string{
			"shortfall":        "Distinct subagent-task message keys since capture_since with no subagent row. Non-zero is the alarm.",
			"excess":           "Distinct subagent keys since capture_since with no subagent-task message. Attributed, not an alarm.",
			"last_observed_at": "MAX(observed_at) at or after capture_since; NULL = the writer has produced nothing since activation.",
			"status":           "healthy | shortfall | nothing_since_activation | not_activated | capture_key_unparseable | feature_absent.",
		},
	},
	{
		name: "writer_health_history",
		sql: `SELECT installation_id, run_id, evaluated_at, status, evaluated, capture_since, shortfall, excess,
				expected_keys, observed_keys, collisions, last_observed_at, malformed_metadata, reason
			FROM fact_writer_health_history ORDER BY installation_id, evaluated_at`,
		comment: "Writer health at every retained run, to see when a shortfall began.",
	},
	{
		name: "subagent_contexts",
		sql:  `SELECT * FROM fact_subagent_context`,
		comment: "One row per subagent invocation (task_session_subagents), latest run per installation, classified at extraction. " +
			"Metrics are NULL when the agent did not report them, never 0. execution_id is NULL unless execution_identity = 'recorded'.",
		columns: map[string]string{
			"execution_id":               "The real execution id; NULL for every row whose agent_execution_id is the 'unknown' sentinel, so COUNT(DISTINCT execution_id) never counts the sentinel.",
			"execution_identity":         "recorded | unrecorded_backfill | unrecorded_pre_amendment | unrecorded_live | not_recorded (AC-25, AC-31).",
			"agent_execution_id":         "The stored value verbatim, including the 'unknown' sentinel. Do not count or group executions by it.",
			"capture_window":             "after_capture (observed_at >= capture_since), before_capture, or no_boundary (no valid capture_since). Rows before capture are real and kept.",
			"capture_boundary_ambiguous": "True when capture_since is only second-precise and the row was observed within the second after it.",
			"total_tokens":               "As reported; NULL when not reported (never 0-filled, AC-7).",
			"tool_use_count":             "As reported; 0 is a real reported zero (AC-8); NULL when not reported.",
			"duration_ms":                "As reported; NULL when not reported.",
			"is_measured":                "True when at least one of total_tokens, tool_use_count, duration_ms was reported.",
			"is_terminal":                "From tool_status in {complete, completed, success, error, failed, cancelled}; never from agent_status (AC-11).",
			"source":                     "live or backfill; backfill rows are not like-for-like with live rows (AC-25).",
		},
		disclose: true,
	},
	{
		name: "installations",
		sql: `SELECT s.*, r.started_at AS run_started_at, r.finished_at AS run_finished_at
			FROM fact_installation_state s JOIN runs r USING (installation_id, run_id)`,
		comment: "Installation state per installation at its latest committed run: each activation key raw, parsed and classified, the subagent table shape and the activation state.",
		columns: map[string]string{
			"activation_state":       "activated | capture_only_partial_pair | backfill_key_unparseable | not_activated | feature_absent.",
			"backfill_through_state": "present | absent | unparseable | none_matched ('' : the backfill matched nothing, AC-24f).",
			"subagent_table_shape":   "execution_aware | pre_amendment | absent, observed from the live schema.",
		},
		disclose: true,
	},
	{
		name: "fanout_by_turn",
		sql: `SELECT installation_id, run_id, turn_id, session_id, task_id, workflow_step_id_at_start, started_at,
				subagents_observed, subagents_observed_live, subagents_observed_backfill,
				fanout, fanout_completeness, capture_window
			FROM dim_turn`,
		comment: "Subagent fan-out per turn. fanout is exact (and a true zero is 0) only when fanout_completeness = 'complete'; otherwise it is NULL and subagents_observed is a lower bound or, at 0, UNKNOWN rather than zero.",
		columns: map[string]string{
			"fanout":              "Exact number of subagents; NULL unless fanout_completeness = 'complete'.",
			"fanout_completeness": "complete (started at/after capture_since) | lower_bound (before, rows exist) | unknown (before or no boundary, no rows: not zero).",
			"subagents_observed":  "Rows observed for this turn: always given, but only a lower bound unless complete.",
		},
		disclose: true,
	},
	{
		name: "fanout_by_session",
		sql: `SELECT installation_id, run_id, session_id, task_id, state, started_at,
				subagents_observed, subagents_observed_live, subagents_observed_backfill,
				fanout, fanout_completeness, capture_window
			FROM dim_session`,
		comment: "Subagent fan-out per session (task_sessions). Same completeness rules as fanout_by_turn.",
		columns: map[string]string{
			"fanout":              "Exact number of subagents; NULL unless fanout_completeness = 'complete'.",
			"fanout_completeness": "complete | lower_bound | unknown (never read an unknown as zero).",
		},
		disclose: true,
	},
	{
		name: "fanout_distribution",
		sql: `SELECT installation_id, fanout_completeness, subagents_observed, count(*) AS turns,
				count(*) FILTER (WHERE subagents_observed_backfill > 0) AS turns_with_backfill_rows,
				count(*) FILTER (WHERE subagents_observed_live > 0) AS turns_with_live_rows
			FROM dim_turn GROUP BY installation_id, fanout_completeness, subagents_observed
			ORDER BY installation_id, fanout_completeness, subagents_observed`,
		comment: "Turns by number of subagents observed, split by completeness: only the 'complete' rows are an exact distribution; a 0 under 'unknown' is not a zero. turns_with_backfill_rows / turns_with_live_rows carry the provenance split.",
	},
	{
		name:    "subagent_usage",
		sql:     usageSQL("subagent_type"),
		comment: "Usage by subagent type and source (live/backfill split). Averages are over measured rows only; measured and unmeasured counts are given; unreported metrics are never counted as 0.",
		columns: map[string]string{
			"avg_total_tokens": "Average over rows_with_tokens rows only (rows that reported tokens).",
			"unmeasured_rows":  "Rows that reported none of the three metrics (e.g. async_launched).",
		},
		disclose: true,
	},
	{
		name:    "subagent_usage_by_model",
		sql:     usageSQL("model"),
		comment: "Usage by child model and source. Same rules as subagent_usage.",
	},
	{
		name: "execution_identity_by_session",
		sql: `SELECT installation_id, run_id, task_session_id AS session_id,
				count(*) AS subagent_rows,
				CASE WHEN count(execution_id) = 0 THEN NULL ELSE count(DISTINCT execution_id) END AS recorded_executions,
				CASE WHEN count(execution_id) = 0 THEN 'unknown'
				     WHEN count(execution_id) < count(*) THEN 'lower_bound' ELSE 'exact' END AS executions_completeness,
				count(execution_id) AS rows_recorded,
				count(*) FILTER (WHERE execution_identity = 'unrecorded_backfill') AS rows_unrecorded_backfill,
				count(*) FILTER (WHERE execution_identity = 'unrecorded_pre_amendment') AS rows_unrecorded_pre_amendment,
				count(*) FILTER (WHERE execution_identity = 'unrecorded_live') AS rows_unrecorded_live,
				count(*) FILTER (WHERE execution_identity = 'not_recorded') AS rows_not_recorded
			FROM fact_subagent_context GROUP BY ALL`,
		comment: "Distinct recorded executions per session. The 'unknown' sentinel is never an execution: sentinel rows are counted separately, and recorded_executions is NULL (unknown) when no row of the session has a recorded execution.",
		columns: map[string]string{
			"recorded_executions":     "COUNT(DISTINCT execution_id) over recorded rows; NULL when none is recorded.",
			"executions_completeness": "exact (every row recorded) | lower_bound (some rows unrecorded) | unknown (none recorded).",
		},
		disclose: true,
	},
	{
		name: "contexts_per_card",
		sql: `WITH s AS (
				SELECT installation_id, task_id, count(*) AS sessions,
					sum(subagents_observed)::BIGINT AS subagents_observed,
					sum(subagents_observed_live)::BIGINT AS subagents_observed_live,
					sum(subagents_observed_backfill)::BIGINT AS subagents_observed_backfill,
					bool_and(fanout_completeness = 'complete') AS all_complete
				FROM dim_session GROUP BY ALL)
			SELECT t.installation_id, t.run_id, t.task_id, t.identifier, t.workflow_step_id,
				ws.name AS workflow_step_name, ws.position AS workflow_step_position,
				coalesce(s.sessions, 0) AS sessions,
				coalesce(s.subagents_observed, 0) AS subagent_contexts_observed,
				coalesce(s.subagents_observed_live, 0) AS subagent_contexts_live,
				coalesce(s.subagents_observed_backfill, 0) AS subagent_contexts_backfill,
				CASE WHEN s.sessions IS NULL OR s.all_complete THEN coalesce(s.sessions, 0) + coalesce(s.subagents_observed, 0) END AS contexts,
				coalesce(s.sessions, 0) + coalesce(s.subagents_observed, 0) AS contexts_observed,
				CASE WHEN s.sessions IS NULL OR s.all_complete THEN 'complete'
				     WHEN s.subagents_observed > 0 THEN 'lower_bound' ELSE 'unknown' END AS contexts_completeness
			FROM dim_task t
			LEFT JOIN s USING (installation_id, task_id)
			LEFT JOIN dim_workflow_step ws ON ws.installation_id = t.installation_id AND ws.step_id = t.workflow_step_id`,
		comment: "Contexts per card (task): sessions (task_sessions rows, exactly as dim_session) plus subagent contexts. contexts is exact only when every session's fan-out is complete; otherwise NULL, with contexts_observed as a lower bound.",
		columns: map[string]string{
			"contexts":              "sessions + subagent contexts; NULL unless contexts_completeness = 'complete'.",
			"contexts_completeness": "complete | lower_bound | unknown (subagent part unknown, not zero).",
		},
		disclose: true,
	},
	{
		name: "contexts_by_step",
		sql: `SELECT installation_id, workflow_step_id, workflow_step_name, workflow_step_position,
				count(*) AS cards,
				avg(sessions) AS sessions_per_card,
				count(*) FILTER (WHERE contexts_completeness = 'complete') AS cards_complete,
				count(*) FILTER (WHERE contexts_completeness = 'lower_bound') AS cards_lower_bound,
				count(*) FILTER (WHERE contexts_completeness = 'unknown') AS cards_unknown,
				avg(contexts) AS contexts_per_card_complete,
				avg(contexts_observed) AS contexts_per_card_observed,
				sum(subagent_contexts_live)::BIGINT AS subagent_contexts_live,
				sum(subagent_contexts_backfill)::BIGINT AS subagent_contexts_backfill
			FROM contexts_per_card GROUP BY ALL ORDER BY installation_id, workflow_step_position`,
		comment: "Per workflow step (the card's current step): sessions per card and contexts per card. contexts_per_card_complete averages complete cards only; contexts_per_card_observed is a lower bound over all cards. For the step a turn started in, see fanout_by_step.",
		columns: map[string]string{
			"contexts_per_card_complete": "Average contexts over cards whose count is complete only; NULL when no card of the step is complete.",
			"contexts_per_card_observed": "Average observed contexts over all cards: a lower bound where cards are incomplete.",
			"cards_unknown":              "Cards whose subagent part is unknown (not zero).",
		},
		disclose: true,
	},
}

func usageSQL(dim string) string {
	return `SELECT installation_id, run_id, ` + dim + `, source,
			count(*) AS subagents,
			count(*) FILTER (WHERE is_measured) AS measured_rows,
			count(*) FILTER (WHERE NOT is_measured) AS unmeasured_rows,
			count(total_tokens) AS rows_with_tokens, avg(total_tokens) AS avg_total_tokens, sum(total_tokens) AS sum_total_tokens,
			count(tool_use_count) AS rows_with_tool_use_count, avg(tool_use_count) AS avg_tool_use_count,
			count(duration_ms) AS rows_with_duration, avg(duration_ms) AS avg_duration_ms
		FROM fact_subagent_context GROUP BY ALL ORDER BY installation_id, ` + dim + ` NULLS LAST, source`
}
