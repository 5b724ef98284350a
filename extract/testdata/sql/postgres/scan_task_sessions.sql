SELECT CASE WHEN octet_length(t."id"::text) <= 256 THEN t."id"::text ELSE left(t."id"::text, 256) END,
	CASE WHEN octet_length(t."task_id"::text) <= 256 THEN t."task_id"::text ELSE left(t."task_id"::text, 256) END,
	CASE WHEN octet_length(t."state"::text) <= 256 THEN t."state"::text ELSE left(t."state"::text, 256) END,
	CASE WHEN octet_length(t."agent_profile_id"::text) <= 256 THEN t."agent_profile_id"::text ELSE left(t."agent_profile_id"::text, 256) END, t."is_primary", t."started_at", t."completed_at", t."updated_at", 0, 0, 0, 1, 0, 0,
	CASE WHEN octet_length(t.id) > 256 AND octet_length(t.id) <= 1048576 THEN 't' || t.id END,
	CASE WHEN octet_length(t."id"::text) > 256 OR octet_length(t."task_id"::text) > 256 OR octet_length(t."state"::text) > 256 OR octet_length(t."agent_profile_id"::text) > 256 THEN CASE WHEN octet_length(t."id"::text) > 256 THEN '0:' || CAST(octet_length(t."id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."task_id"::text) > 256 THEN '1:' || CAST(octet_length(t."task_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."state"::text) > 256 THEN '2:' || CAST(octet_length(t."state"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."agent_profile_id"::text) > 256 THEN '3:' || CAST(octet_length(t."agent_profile_id"::text) AS TEXT) || ',' ELSE '' END END
FROM "task_sessions" AS t
