SELECT CASE WHEN octet_length(t."id"::text) <= 256 THEN t."id"::text ELSE left(t."id"::text, 256) END,
	CASE WHEN octet_length(t."task_session_id"::text) <= 256 THEN t."task_session_id"::text ELSE left(t."task_session_id"::text, 256) END,
	CASE WHEN octet_length(t."task_id"::text) <= 256 THEN t."task_id"::text ELSE left(t."task_id"::text, 256) END, t."started_at", t."completed_at",
	CASE WHEN octet_length(t."metadata"::text) <= 16384 THEN t."metadata"::text ELSE left(t."metadata"::text, 16384) END, t."updated_at", 0, 0, 0, 1,
	CASE WHEN NOT (octet_length(t.task_session_id) <= 1048576) THEN 0 WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END, 0, 0,
	CASE WHEN octet_length(t.id) > 256 AND octet_length(t.id) <= 1048576 THEN 't' || t.id END,
	CASE WHEN octet_length(t."id"::text) > 256 OR octet_length(t."task_session_id"::text) > 256 OR octet_length(t."task_id"::text) > 256 OR octet_length(t."metadata"::text) > 16384 THEN CASE WHEN octet_length(t."id"::text) > 256 THEN '0:' || CAST(octet_length(t."id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_session_id"::text) > 256 THEN '1:' || CAST(octet_length(t."task_session_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_id"::text) > 256 THEN '2:' || CAST(octet_length(t."task_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."metadata"::text) > 16384 THEN '5:' || CAST(octet_length(t."metadata"::text) AS TEXT) || ',' ELSE '' END END
FROM "task_session_turns" AS t
