SELECT CASE WHEN octet_length(t."id") <= 256 THEN t."id" WHEN octet_length(t."id") <= 1048576 THEN substr(CAST(t."id" AS BLOB), 1, 256) END,
	CASE WHEN octet_length(t."task_id") <= 256 THEN t."task_id" WHEN octet_length(t."task_id") <= 1048576 THEN substr(CAST(t."task_id" AS BLOB), 1, 256) END,
	CASE WHEN octet_length(t."state") <= 256 THEN t."state" WHEN octet_length(t."state") <= 1048576 THEN substr(CAST(t."state" AS BLOB), 1, 256) END,
	CASE WHEN octet_length(t."agent_profile_id") <= 256 THEN t."agent_profile_id" WHEN octet_length(t."agent_profile_id") <= 1048576 THEN substr(CAST(t."agent_profile_id" AS BLOB), 1, 256) END,
	CASE WHEN octet_length(t."is_primary") <= 64 THEN t."is_primary" WHEN octet_length(t."is_primary") <= 1048576 THEN substr(CAST(t."is_primary" AS BLOB), 1, 64) END,
	CASE WHEN octet_length(t."started_at") <= 64 THEN CAST(t."started_at" AS TEXT) WHEN octet_length(t."started_at") <= 1048576 THEN substr(CAST(t."started_at" AS BLOB), 1, 64) END,
	CASE WHEN octet_length(t."completed_at") <= 64 THEN CAST(t."completed_at" AS TEXT) WHEN octet_length(t."completed_at") <= 1048576 THEN substr(CAST(t."completed_at" AS BLOB), 1, 64) END,
	CASE WHEN octet_length(t."updated_at") <= 64 THEN CAST(t."updated_at" AS TEXT) WHEN octet_length(t."updated_at") <= 1048576 THEN substr(CAST(t."updated_at" AS BLOB), 1, 64) END,
	COALESCE(a.n, 0),
	COALESCE(a.n_live, 0),
	COALESCE(a.n_backfill, 0),
	COALESCE(dup.n, 1),
	COALESCE(a.n_distinct, 0),
	COALESCE(a.overlap, 0),
	CASE WHEN octet_length(t."id") > 256 OR octet_length(t."task_id") > 256 OR octet_length(t."state") > 256 OR octet_length(t."agent_profile_id") > 256 OR octet_length(t."is_primary") > 64 OR octet_length(t."started_at") > 64 OR octet_length(t."completed_at") > 64 OR octet_length(t."updated_at") > 64 THEN CASE WHEN octet_length(t."id") > 256 THEN '0:' || CAST(octet_length(t."id") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_id") > 256 THEN '1:' || CAST(octet_length(t."task_id") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."state") > 256 THEN '2:' || CAST(octet_length(t."state") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."agent_profile_id") > 256 THEN '3:' || CAST(octet_length(t."agent_profile_id") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."is_primary") > 64 THEN '4:' || CAST(octet_length(t."is_primary") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."started_at") > 64 THEN '5:' || CAST(octet_length(t."started_at") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."completed_at") > 64 THEN '6:' || CAST(octet_length(t."completed_at") AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."updated_at") > 64 THEN '7:' || CAST(octet_length(t."updated_at") AS TEXT) || ',' ELSE '' END END
FROM "task_sessions" AS t
LEFT JOIN (SELECT k, COUNT(*) AS n, SUM(live) AS n_live, SUM(backfill) AS n_backfill,
			COUNT(DISTINCT tc) AS n_distinct,
			COUNT(DISTINCT CASE WHEN live = 1 THEN tc END) + COUNT(DISTINCT CASE WHEN backfill = 1 THEN tc END) - COUNT(DISTINCT tc) AS overlap
		FROM (SELECT task_session_id AS k,
	CASE WHEN tool_call_id <> '' THEN CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END END AS tc,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'live' THEN 1 ELSE 0 END AS live,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'backfill' THEN 1 ELSE 0 END AS backfill
			FROM task_session_subagents NOT INDEXED WHERE octet_length(task_session_id) <= 1048576 LIMIT -1 OFFSET 0) f
		GROUP BY k) a ON a.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM task_sessions WHERE octet_length(id) <= 1048576 GROUP BY id HAVING COUNT(*) > 1) dup ON dup.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
