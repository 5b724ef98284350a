-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_nesting AS
WITH RECURSIVE cand AS (
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
	WHERE c.parent_tool_call_id IS NOT NULL;

COMMENT ON VIEW subagent_nesting IS 'Nesting: one row per subagent that was spawned by another subagent (parent_tool_call_id set, AC-6), with its parent resolved within the same session by tool_call_id. When two rows share the parent''s tool_call_id (a cross-execution collision) the parent with the same recorded execution_id is chosen; ''unknown'' sentinel rows never match each other. parent_not_observed means no row carries that tool call (the parent was not captured, e.g. before capture_since); it is not a top-level subagent. nesting_depth counts the ancestors known to exist (an unresolved parent counts as one): 1 = spawned by a top-level subagent; it is exact only when the chain ends at a row without a parent.';
COMMENT ON COLUMN subagent_nesting.nesting_depth IS 'Ancestors known to exist: 1 = child of a top-level subagent, 2 = grandchild, and so on; an unresolved parent counts as one. A lower bound unless nesting_depth_completeness = ''exact''.';
COMMENT ON COLUMN subagent_nesting.nesting_depth_completeness IS 'exact (the chain ends at a top-level subagent) | lower_bound (an ancestor is not observed or ambiguous).';
COMMENT ON COLUMN subagent_nesting.parent_candidates IS 'Rows in the same session whose tool_call_id equals parent_tool_call_id.';
COMMENT ON COLUMN subagent_nesting.parent_resolution IS 'resolved | parent_not_observed (no captured row carries the parent tool call) | ambiguous (several candidates, none singled out by execution_id).';
COMMENT ON COLUMN subagent_nesting.parent_subagent_id IS 'The resolved parent row; NULL when not observed or ambiguous.';
COMMENT ON COLUMN subagent_nesting.parent_tool_call_id IS 'The spawning subagent''s tool call, as recorded by Kandev (AC-6).';
COMMENT ON COLUMN subagent_nesting.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_nesting.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_nesting.task_session_id IS 'Session (task_sessions.id) the subagent ran in.';
COMMENT ON COLUMN subagent_nesting.task_id IS 'Task (card) id.';
COMMENT ON COLUMN subagent_nesting.turn_id IS 'Turn id (task_session_turns.id); NULL when the row has none.';
COMMENT ON COLUMN subagent_nesting.subagent_id IS 'The nested (child) subagent row.';
COMMENT ON COLUMN subagent_nesting.tool_call_id IS 'The child''s tool call.';
COMMENT ON COLUMN subagent_nesting.subagent_type IS 'The child''s subagent type; NULL when not reported.';
COMMENT ON COLUMN subagent_nesting.model IS 'The child''s model; NULL when not reported.';
COMMENT ON COLUMN subagent_nesting.source IS 'The child row''s source (live/backfill).';
COMMENT ON COLUMN subagent_nesting.observed_at IS 'When the child was first observed.';
COMMENT ON COLUMN subagent_nesting.parent_subagent_type IS 'The parent''s subagent type; NULL when the parent is unresolved (or did not report one).';
COMMENT ON COLUMN subagent_nesting.parent_source IS 'The parent row''s source; NULL when unresolved.';
