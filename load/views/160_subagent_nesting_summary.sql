-- kx:disclose (the current disclosures are appended to the view's comment)
CREATE VIEW subagent_nesting_summary AS
WITH n AS (
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
	ORDER BY s.installation_id, s.source;

COMMENT ON VIEW subagent_nesting_summary IS 'Nesting per installation and source (live/backfill of the child row): how many subagents were spawned by another subagent, how many parents resolve, and how deep the trees go. max_nesting_depth is NULL when nothing is nested; spawning_subagents counts distinct resolved parents only.';
COMMENT ON COLUMN subagent_nesting_summary.max_nesting_depth IS 'Deepest nesting_depth; NULL when no row is nested (not 0).';
COMMENT ON COLUMN subagent_nesting_summary.nested_subagents IS 'Rows with a parent_tool_call_id (spawned by a subagent).';
COMMENT ON COLUMN subagent_nesting_summary.spawning_subagents IS 'Distinct resolved parent rows: subagents that spawned subagents.';
COMMENT ON COLUMN subagent_nesting_summary.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN subagent_nesting_summary.run_id IS 'The extraction run that wrote the row (sortable: UTC start + random suffix).';
COMMENT ON COLUMN subagent_nesting_summary.source IS 'Source of the child rows: live or backfill (not like-for-like with live rows, AC-25).';
COMMENT ON COLUMN subagent_nesting_summary.subagents IS 'Subagent rows of the source.';
COMMENT ON COLUMN subagent_nesting_summary.parents_resolved IS 'Nested rows whose parent resolved.';
COMMENT ON COLUMN subagent_nesting_summary.parents_not_observed IS 'Nested rows whose parent tool call has no captured row.';
COMMENT ON COLUMN subagent_nesting_summary.parents_ambiguous IS 'Nested rows with several parent candidates.';
