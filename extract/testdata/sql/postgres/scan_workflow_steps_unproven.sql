SELECT CASE WHEN octet_length(t."id"::text) <= 256 THEN t."id"::text ELSE left(t."id"::text, 256) END,
	CASE WHEN octet_length(t."workflow_id"::text) <= 256 THEN t."workflow_id"::text ELSE left(t."workflow_id"::text, 256) END,
	CASE WHEN octet_length(t."name"::text) <= 256 THEN t."name"::text ELSE left(t."name"::text, 256) END,
	CASE WHEN octet_length(t."stage_type"::text) <= 256 THEN t."stage_type"::text ELSE left(t."stage_type"::text, 256) END, t."position", t."created_at", t."updated_at",
	COALESCE(dup.n, 1),
	CASE WHEN octet_length(t."id"::text) > 256 OR octet_length(t."workflow_id"::text) > 256 OR octet_length(t."name"::text) > 256 OR octet_length(t."stage_type"::text) > 256 THEN CASE WHEN octet_length(t."id"::text) > 256 THEN '0:' || CAST(octet_length(t."id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."workflow_id"::text) > 256 THEN '1:' || CAST(octet_length(t."workflow_id"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."name"::text) > 256 THEN '2:' || CAST(octet_length(t."name"::text) AS TEXT) || ',' ELSE '' END || CASE WHEN octet_length(t."stage_type"::text) > 256 THEN '3:' || CAST(octet_length(t."stage_type"::text) AS TEXT) || ',' ELSE '' END END
FROM "workflow_steps" AS t
LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM workflow_steps WHERE octet_length(id) <= 1048576 GROUP BY id HAVING COUNT(*) > 1) dup ON dup.k = CASE WHEN octet_length(t.id) <= 1048576 THEN t.id END
