SELECT CASE WHEN octet_length(t."id") > 256 THEN CASE WHEN octet_length(t."id") <= 1048576 THEN '<cap marker>' || octet_length(t."id") || ':' || substr(CAST(t."id" AS BLOB), 1, 256) ELSE '<cap marker>' || octet_length(t."id") END ELSE t."id" END,
	CASE WHEN octet_length(t."task_session_id") > 256 THEN CASE WHEN octet_length(t."task_session_id") <= 1048576 THEN '<cap marker>' || octet_length(t."task_session_id") || ':' || substr(CAST(t."task_session_id" AS BLOB), 1, 256) ELSE '<cap marker>' || octet_length(t."task_session_id") END ELSE t."task_session_id" END,
	CASE WHEN octet_length(t."task_id") > 256 THEN CASE WHEN octet_length(t."task_id") <= 1048576 THEN '<cap marker>' || octet_length(t."task_id") || ':' || substr(CAST(t."task_id" AS BLOB), 1, 256) ELSE '<cap marker>' || octet_length(t."task_id") END ELSE t."task_id" END,
	CASE WHEN octet_length(t."started_at") > 64 THEN CASE WHEN octet_length(t."started_at") <= 1048576 THEN '<cap marker>' || octet_length(t."started_at") || ':' || substr(CAST(t."started_at" AS BLOB), 1, 64) ELSE '<cap marker>' || octet_length(t."started_at") END ELSE CAST(t."started_at" AS TEXT) END,
	CASE WHEN octet_length(t."completed_at") > 64 THEN CASE WHEN octet_length(t."completed_at") <= 1048576 THEN '<cap marker>' || octet_length(t."completed_at") || ':' || substr(CAST(t."completed_at" AS BLOB), 1, 64) ELSE '<cap marker>' || octet_length(t."completed_at") END ELSE CAST(t."completed_at" AS TEXT) END,
	CASE WHEN octet_length(t."metadata") > 16384 THEN CASE WHEN octet_length(t."metadata") <= 1048576 THEN '<cap marker>' || octet_length(t."metadata") || ':' || substr(CAST(t."metadata" AS BLOB), 1, 16384) ELSE '<cap marker>' || octet_length(t."metadata") END ELSE t."metadata" END,
	CASE WHEN octet_length(t."updated_at") > 64 THEN CASE WHEN octet_length(t."updated_at") <= 1048576 THEN '<cap marker>' || octet_length(t."updated_at") || ':' || substr(CAST(t."updated_at" AS BLOB), 1, 64) ELSE '<cap marker>' || octet_length(t."updated_at") END ELSE CAST(t."updated_at" AS TEXT) END,
	COALESCE(a.n, 0),
	COALESCE(a.n_live, 0),
	COALESCE(a.n_backfill, 0),
	COALESCE(dup.n, 1),
	CASE WHEN NOT (octet_length(t.task_session_id) <= 1048576) THEN 0 WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END,
	COALESCE(a.n_distinct, 0),
	COALESCE(a.overlap, 0)
FROM "task_session_turns" AS t
LEFT JOIN (SELECT k, COUNT(*) AS n, SUM(live) AS n_live, SUM(backfill) AS n_backfill,
			COUNT(DISTINCT tc) AS n_distinct,
			COUNT(DISTINCT CASE WHEN live = 1 THEN tc END) + COUNT(DISTINCT CASE WHEN backfill = 1 THEN tc END) - COUNT(DISTINCT tc) AS overlap
		FROM (SELECT turn_id AS k,
	CASE WHEN tool_call_id <> '' THEN CASE WHEN octet_length(tool_call_id) <= 1048576 THEN tool_call_id END END AS tc,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'live' THEN 1 ELSE 0 END AS live,
			CASE WHEN NOT (octet_length(source) <= 1048576) THEN 0 WHEN source = 'backfill' THEN 1 ELSE 0 END AS backfill
			FROM task_session_subagents NOT INDEXED WHERE octet_length(turn_id) <= 1048576 LIMIT -1 OFFSET 0) f
		GROUP BY k) a ON a.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM task_session_turns WHERE octet_length(id) <= 1048576 GROUP BY id HAVING COUNT(*) > 1) dup ON dup.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
