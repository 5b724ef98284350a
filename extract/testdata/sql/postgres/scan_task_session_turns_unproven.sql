SELECT CASE WHEN octet_length(t."id"::text) <= 256 THEN t."id"::text ELSE left(t."id"::text, 256) END,
	CASE WHEN octet_length(t."task_session_id"::text) <= 256 THEN t."task_session_id"::text ELSE left(t."task_session_id"::text, 256) END,
	CASE WHEN octet_length(t."task_id"::text) <= 256 THEN t."task_id"::text ELSE left(t."task_id"::text, 256) END, t."started_at", t."completed_at",
	CASE WHEN octet_length(t."metadata"::text) <= 16384 THEN t."metadata"::text ELSE left(t."metadata"::text, 16384) END, t."updated_at",
	COALESCE(a.n, 0),
	COALESCE(a.n_live, 0),
	COALESCE(a.n_backfill, 0),
	COALESCE(dup.n, 1),
	CASE WHEN NOT (octet_length(t.task_session_id) <= 1048576) THEN 0 WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END,
	COALESCE(a.n_distinct, 0),
	COALESCE(a.overlap, 0),
	CASE WHEN octet_length(t."id"::text) > 256 OR octet_length(t."task_session_id"::text) > 256 OR octet_length(t."task_id"::text) > 256 OR octet_length(t."metadata"::text) > 16384 THEN CASE WHEN octet_length(t."id"::text) > 256 THEN '0:' || CAST(octet_length(t."id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_session_id"::text) > 256 THEN '1:' || CAST(octet_length(t."task_session_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_id"::text) > 256 THEN '2:' || CAST(octet_length(t."task_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."metadata"::text) > 16384 THEN '5:' || CAST(octet_length(t."metadata"::text) AS TEXT) || ',' ELSE '' END END
FROM "task_session_turns" AS t
LEFT JOIN (SELECT k, COUNT(*) AS n, SUM(live) AS n_live, SUM(backfill) AS n_backfill,
			COUNT(DISTINCT tc) AS n_distinct,
			COUNT(DISTINCT CASE WHEN live = 1 THEN tc END) + COUNT(DISTINCT CASE WHEN backfill = 1 THEN tc END) - COUNT(DISTINCT tc) AS overlap
		FROM (SELECT turn_id AS k,
	CASE WHEN tool_call_id <> '' THEN CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END END AS tc,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'live' THEN 1 ELSE 0 END AS live,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'backfill' THEN 1 ELSE 0 END AS backfill
			FROM task_session_subagents  WHERE octet_length(turn_id) <= 1048576 ) f
		GROUP BY k) a ON a.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM task_session_turns WHERE octet_length(id) <= 1048576 GROUP BY id HAVING COUNT(*) > 1) dup ON dup.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
