package pipeline

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// pgOpen opens a PostgreSQL database for the test's own SQL.
func pgOpen(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// pgDBName is the database name of a pgtest DSN.
func pgDBName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// pgChecksum digests every row of the tables the extractor reads, so a
// test can prove a run changed nothing.
func pgChecksum(t *testing.T, dsn string) string {
	t.Helper()
	var parts []string
	for _, table := range []string{"kandev_meta", "task_session_subagents", "task_sessions", "task_session_turns",
		"task_session_messages", "tasks", "workflows", "workflow_steps"} {
		parts = append(parts, table+"="+one(t, pgOpen(t, dsn), `SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, ',' ORDER BY x::text)), '') FROM `+table+` x`))
	}
	return strings.Join(parts, " ")
}

// TestPostgresSelectOnlyRole: a run works with a role that can do nothing
// but SELECT — no INSERT/UPDATE/DELETE/TRUNCATE on any table, no CREATE or
// TEMP in the database, no CREATE in the schema — reads exactly what the
// superuser reads, and leaves the database unchanged.
func TestPostgresSelectOnlyRole(t *testing.T) {
	t.Parallel()
	c, dsn := pgFixture(t, "upgraded-backfill.pg.sql")
	db := pgDBName(dsn)
	const secret = "select-only-Pw9"
	if err := c.CreateRole(context.Background(), "kx_select_only", secret, db); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, `REVOKE CREATE, TEMPORARY ON DATABASE `+db+` FROM PUBLIC`, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	// What the role may do, asked of the server.
	if got := one(t, pgOpen(t, dsn), `SELECT count(*) FILTER (WHERE NOT has_table_privilege('kx_select_only', c.oid, 'SELECT')) || '|' ||
			count(*) FILTER (WHERE has_table_privilege('kx_select_only', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')) || '|' ||
			has_database_privilege('kx_select_only', current_database(), 'CREATE, TEMPORARY') || '|' ||
			has_schema_privilege('kx_select_only', 'public', 'CREATE') || '|' ||
			(SELECT rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls FROM pg_roles WHERE rolname = 'kx_select_only')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`); got != "0|0|false|false|false" {
		t.Fatalf("the role is not SELECT-only: tables without SELECT | tables with a write privilege | db CREATE/TEMP | schema CREATE | role attributes = %s", got)
	}
	before := pgChecksum(t, dsn)
	whRole, res := extractTo(t, c.RoleDSN("kx_select_only", secret, db), "pg")
	whSuper, _ := extractTo(t, dsn, "pg")
	if after := pgChecksum(t, dsn); after != before {
		t.Errorf("the database changed during the runs:\n before %s\n after  %s", before, after)
	}
	if got := res.Outcomes[0].Manifest.Provenance.Tables["fact_subagent_context"].RowsWritten; got != 51 {
		t.Errorf("subagent rows = %d, want 51", got)
	}
	for _, table := range []string{"fact_subagent_context", "dim_session", "dim_turn", "dim_task", "disclosures", "rejects", "fact_writer_health"} {
		exclude := []string(nil)
		if table == "fact_writer_health" {
			exclude = []string{"evaluated_at"}
		}
		equalSets(t, table+" (SELECT-only role vs superuser)", parquetTable(t, whRole, table, exclude...), parquetTable(t, whSuper, table, exclude...))
	}
}

// TestPostgresPasswordNeverAppears: a DSN password (URL and keyword forms)
// is in no output of a successful run — Parquet, warehouse.duckdb,
// manifests, logs, the run's result, the health report — nor in the error,
// the failed manifest or the logs of a failing one.
func TestPostgresPasswordNeverAppears(t *testing.T) {
	t.Parallel()
	c, dsn := pgFixture(t, "fresh-activated.pg.sql")
	db := pgDBName(dsn)
	const secret = "kx-S3cret#pass!w0rd"
	if err := c.CreateRole(context.Background(), "kx_reader", secret, db); err != nil {
		t.Fatal(err)
	}
	urlDSN := c.RoleDSN("kx_reader", secret, db)
	if !strings.Contains(urlDSN, url.UserPassword("x", secret).String()[2:]) {
		t.Fatalf("DSN %q does not carry the password", urlDSN)
	}
	port := strings.Split(strings.Split(urlDSN, "@127.0.0.1:")[1], "/")[0]
	kvDSN := fmt.Sprintf("host=127.0.0.1 port=%s user=kx_reader password='%s' dbname=%s sslmode=disable", port, secret, db)
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.Split(strings.Split(urlDSN, "kx_reader:")[1], "@")[0]}
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s contains the password (as %q)", what, f)
			}
		}
	}
	wh := filepath.Join(t.TempDir(), "wh")
	var logs bytes.Buffer
	for _, tc := range []struct{ name, dsn string }{{"url", urlDSN}, {"keyword", kvDSN}} {
		t.Run(tc.name, func(t *testing.T) {
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			res, o := runStore(t, wh, "pw-"+tc.name, tc.dsn, log)
			if o.Err != nil {
				t.Fatalf("run: %v", o.Err)
			}
			b, _ := json.Marshal(res)
			check(t, "the run result", string(b)+fmt.Sprintf("%+v", res))
			rep, err := CheckHealth(context.Background(), tc.dsn, HealthOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ = json.Marshal(rep)
			check(t, "the health report", string(b)+fmt.Sprintf("%+v", rep))
			if !strings.Contains(rep.Source, "REDACTED") {
				t.Errorf("health report source %q is not redacted", rep.Source)
			}
		})
	}
	// Failing runs: a wrong password, then a table the role may not read.
	wrong := c.RoleDSN("kx_reader", secret+"x", db)
	forms = append(forms, secret+"x")
	_, o := runStore(t, wh, "pw-wrong", wrong, slog.New(slog.NewTextHandler(&logs, nil)))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "authentication failed") {
		t.Errorf("wrong password: %v", o.Err)
	}
	check(t, "the wrong-password error", o.Err.Error())
	pgExec(t, dsn, `REVOKE SELECT ON tasks FROM kx_reader`)
	_, o = runStore(t, wh, "pw-denied", kvDSN, slog.New(slog.NewTextHandler(&logs, nil)))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "permission denied") || !strings.Contains(o.Err.Error(), "tasks") {
		t.Errorf("denied table: %v", o.Err)
	}
	check(t, "the permission error", o.Err.Error())
	check(t, "the logs", logs.String())
	check(t, "the warehouse", everythingIn(t, wh))
	if got := one(t, duck(t, wh), `SELECT count(*) FROM runs WHERE status = 'failed'`); got != "2" {
		t.Errorf("failed runs recorded = %s, want 2", got)
	}
}

// TestPostgresConstraintViolationsAreFlagged: the same integrity rules on
// PostgreSQL — a store that lost its unique key and foreign keys keeps
// every row and flags duplicates and orphans; one without
// agent_execution_id (pre-amendment) checks its two-column key.
func TestPostgresConstraintViolationsAreFlagged(t *testing.T) {
	t.Parallel()
	const dropConstraints = `DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT conrelid::regclass AS t, conname FROM pg_constraint
			WHERE conrelid IN ('task_session_subagents'::regclass, 'task_session_turns'::regclass) AND contype IN ('u', 'f') LOOP
			EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname);
		END LOOP; END $$`

	t.Run("unique key and foreign keys lost", func(t *testing.T) {
		_, dsn := pgFixture(t, "fresh-activated.pg.sql")
		victim := one(t, pgOpen(t, dsn), `SELECT min(task_session_id) FROM task_session_subagents`)
		orphanSubs := one(t, pgOpen(t, dsn), `SELECT count(*) FROM task_session_subagents WHERE task_session_id = $1`, victim)
		orphanTurns := one(t, pgOpen(t, dsn), `SELECT count(*) FROM task_session_turns WHERE task_session_id = $1`, victim)
		pgExec(t, dsn, dropConstraints,
			`CREATE TEMP TABLE dup AS SELECT * FROM task_session_subagents WHERE id = (SELECT max(id) FROM task_session_subagents WHERE task_session_id <> '`+victim+`')`,
			`UPDATE dup SET id = 'dup-key-row'`,
			`INSERT INTO task_session_subagents SELECT * FROM dup`,
			`SET session_replication_role = replica`,
			`DELETE FROM task_sessions WHERE id = '`+victim+`'`)
		wh, _ := extractTo(t, dsn, "pg-flags")
		db := duck(t, wh)
		if got := one(t, db, `SELECT subagent_table_shape || '|' || subagent_rows FROM installations`); got != "pre_amendment|254" {
			t.Errorf("installation = %s", got)
		}
		equalSets(t, "flagged", rowsOf(t, db, `SELECT table_name, column_name, action, count(*) FROM rejects GROUP BY ALL`), []string{
			"task_session_subagents|task_session_id, agent_execution_id, tool_call_id|flagged|2",
			"task_session_subagents|task_session_id|flagged|" + orphanSubs,
			"task_session_turns|task_session_id|flagged|" + orphanTurns,
		})
		if got := one(t, db, `SELECT count(*) FROM subagent_contexts f ANTI JOIN dim_session s ON s.session_id = f.task_session_id`); got != orphanSubs {
			t.Errorf("orphan fact rows = %s, want %s", got, orphanSubs)
		}
	})

	t.Run("task primary key lost", func(t *testing.T) {
		_, dsn := pgFixture(t, "fresh-activated.pg.sql")
		task := one(t, pgOpen(t, dsn), `SELECT min(id) FROM tasks`)
		pgExec(t, dsn, `SET session_replication_role = replica`,
			`ALTER TABLE tasks DROP CONSTRAINT tasks_pkey CASCADE`,
			`INSERT INTO tasks SELECT * FROM tasks WHERE id = '`+task+`'`)
		wh, _ := extractTo(t, dsn, "pg-dup-task")
		db := duck(t, wh)
		equalSets(t, "flagged", rowsOf(t, db, `SELECT table_name, row_id, column_name, action, reason FROM rejects`), []string{
			"tasks|" + task + "|id|flagged|duplicate id: 2 rows share it (the primary key was not enforced); every one is kept",
			"tasks|" + task + "|id|flagged|duplicate id: 2 rows share it (the primary key was not enforced); every one is kept",
		})
		if got := one(t, db, `SELECT count(*) FROM dim_task WHERE task_id = ?`, task); got != "2" {
			t.Errorf("dim_task rows for the duplicated id = %s, want 2", got)
		}
	})

	t.Run("pre-amendment shape", func(t *testing.T) {
		_, dsn := pgFixture(t, "fresh-activated.pg.sql")
		pgExec(t, dsn,
			`DELETE FROM task_session_subagents a USING task_session_subagents b
				WHERE a.task_session_id = b.task_session_id AND a.tool_call_id = b.tool_call_id AND a.id > b.id`,
			`ALTER TABLE task_session_subagents DROP COLUMN agent_execution_id`,
			`ALTER TABLE task_session_subagents ADD UNIQUE (task_session_id, tool_call_id)`)
		n := one(t, pgOpen(t, dsn), `SELECT count(*) FROM task_session_subagents`)
		wh, _ := extractTo(t, dsn, "pg-old")
		db := duck(t, wh)
		if got := one(t, db, `SELECT subagent_table_shape || '|' || subagent_rows FROM installations`); got != "pre_amendment|"+n {
			t.Errorf("installation = %s, want pre_amendment|%s", got, n)
		}
		if got := one(t, db, `SELECT count(*) FROM rejects`); got != "0" {
			t.Errorf("%s rejects", got)
		}
	})
}
