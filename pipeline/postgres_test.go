package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/models"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// pgKey reads an activation key and returns it as the smallest microsecond
// instant at or after it (the column is microseconds, the key may carry
// nanoseconds), parsed with the standard library, or nil when absent.
func pgKey(t *testing.T, dsn, key string) any {
	r := pgRows(t, dsn, `SELECT value FROM kandev_meta WHERE key = $1`, key)
	if len(r) == 0 {
		return nil
	}
	k, err := time.Parse(time.RFC3339Nano, r[0])
	if err != nil {
		t.Fatalf("key %s = %q: %v", key, r[0], err)
	}
	if tr := k.Truncate(time.Microsecond); !tr.Equal(k) {
		k = tr.Add(time.Microsecond)
	}
	return k.UTC().Format("2006-01-02 15:04:05.999999")
}

func TestPostgresFixtures(t *testing.T) {
	t.Parallel()
	for _, fx := range []struct {
		dump       string
		backfill   string
		backfilled int
	}{
		{"fresh-activated.pg.sql", "none_matched", 0},
		{"upgraded-backfill.pg.sql", "present", 29},
	} {
		t.Run(strings.TrimSuffix(fx.dump, ".pg.sql"), func(t *testing.T) {
			t.Parallel()
			_, dsn := pgFixture(t, fx.dump)
			wh, res := extractTo(t, dsn, "pg")
			db := duck(t, wh)
			if got := one(t, db, `SELECT source_dialect || '|' || activation_state || '|' || subagent_table_shape || '|' || backfill_through_state || '|' || subagent_rows_backfill FROM installations`); got != fmt.Sprintf("postgres|activated|execution_aware|%s|%d", fx.backfill, fx.backfilled) {
				t.Errorf("installation = %s", got)
			}
			if p := res.Outcomes[0].Manifest.Provenance; strings.Contains(p.SourceLocation, strings.Split(strings.Split(dsn, ":")[2], "@")[0]) {
				t.Errorf("provenance location %q carries the password", p.SourceLocation)
			}
			c := pgKey(t, dsn, models.KeyCaptureSince)
			equalSets(t, "capture windows", rowsOf(t, db, `SELECT capture_window, count(*) FROM subagent_contexts GROUP BY 1`),
				pgRows(t, dsn, `SELECT CASE WHEN observed_at >= $1::timestamp THEN 'after_capture' ELSE 'before_capture' END, count(*) FROM task_session_subagents GROUP BY 1`, c))
			equalSets(t, "execution identities", rowsOf(t, db, `SELECT execution_identity, count(*) FROM subagent_contexts GROUP BY 1`),
				pgRows(t, dsn, `SELECT CASE WHEN agent_execution_id <> 'unknown' THEN 'recorded' WHEN source = 'backfill' THEN 'unrecorded_backfill' ELSE 'unrecorded_live' END, count(*) FROM task_session_subagents GROUP BY 1`))
			for _, d := range []struct{ view, table, key string }{
				{"fanout_by_turn", "task_session_turns", "turn_id"}, {"fanout_by_session", "task_sessions", "task_session_id"}} {
				id := "turn_id"
				if d.view == "fanout_by_session" {
					id = "session_id"
				}
				equalSets(t, d.view,
					rowsOf(t, db, `SELECT `+id+`, subagents_observed, subagents_observed_live, subagents_observed_backfill, fanout, fanout_completeness FROM `+d.view),
					// Complete only when started at or after C with no
					// subagent-task message since C lacking its row (the
					// shortfall); a lower bound where rows or messages exist.
					// A tool call with live rows of two executions (a
					// collision) makes it a lower bound too.
					pgRows(t, dsn, `SELECT id, n, l, b, CASE WHEN started_at >= $1::timestamp AND short = 0 AND coll = 0 THEN n END,
						CASE WHEN started_at >= $1::timestamp AND short = 0 AND coll = 0 THEN 'complete' WHEN n > 0 OR msgs > 0 THEN 'lower_bound' ELSE 'unknown' END
						FROM (SELECT t.id, t.started_at,
							(SELECT count(*) FROM task_session_subagents s WHERE s.`+d.key+` = t.id) AS n,
							(SELECT count(*) FROM task_session_subagents s WHERE s.`+d.key+` = t.id AND s.source = 'live') AS l,
							(SELECT count(*) FROM task_session_subagents s WHERE s.`+d.key+` = t.id AND s.source = 'backfill') AS b,
							(SELECT count(*) FROM (SELECT 1 FROM task_session_subagents s WHERE s.`+d.key+` = t.id AND s.source = 'live'
								GROUP BY s.tool_call_id HAVING count(*) > 1) c) AS coll,
							(SELECT count(DISTINCT m.metadata::jsonb ->> 'tool_call_id') FROM task_session_messages m WHERE m.`+d.key+` = t.id
								AND m.metadata LIKE '%subagent_task%' AND m.metadata::jsonb #>> '{normalized,kind}' = 'subagent_task'
								AND coalesce(m.metadata::jsonb ->> 'tool_call_id', '') <> '') AS msgs,
							(SELECT count(DISTINCT m.metadata::jsonb ->> 'tool_call_id') FROM task_session_messages m WHERE m.`+d.key+` = t.id
								AND m.metadata LIKE '%subagent_task%' AND m.metadata::jsonb #>> '{normalized,kind}' = 'subagent_task'
								AND coalesce(m.metadata::jsonb ->> 'tool_call_id', '') <> '' AND m.created_at >= $1::timestamp
								AND coalesce(m.task_session_id, '') <> '' AND coalesce(m.task_id, '') <> ''
								AND NOT EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.task_session_id = m.task_session_id
									AND s.tool_call_id = m.metadata::jsonb ->> 'tool_call_id' AND s.observed_at >= $1::timestamp)) AS short
						FROM `+d.table+` t) x`, c))
			}
			if got := one(t, db, `SELECT count(*) FROM rejects`); got != "0" {
				t.Errorf("%s rejects", got)
			}
		})
	}
}

// parquetTable reads one table of a warehouse's latest run, without the
// columns that legitimately differ between two extractions.
func parquetTable(t *testing.T, wh, table string, exclude ...string) []string {
	db := memDuck(t)
	cols := append([]string{"installation_id", "run_id"}, exclude...)
	return rowsOf(t, db, `SELECT * EXCLUDE (`+strings.Join(cols, ", ")+`) FROM read_parquet('`+filepath.Join(wh, table, "*", "*", "*.parquet")+`')`)
}

// The same data in SQLite and in PostgreSQL gives the same warehouse.
func TestParitySQLiteAndPostgres(t *testing.T) {
	t.Parallel()
	sqlitePath := fixture(t, "fresh-activated.db")
	_, dsn := pgFixture(t, "fresh-activated.pg.sql")
	whS, _ := extractTo(t, sqlitePath, "same")
	whP, _ := extractTo(t, dsn, "same")
	// Kandev stamped boot-time rows (workspace, workflow, steps) and task
	// timestamps with the wall clock when each fixture was written, so those
	// differ between the two files; every generator-assigned value is shared.
	for _, tc := range []struct {
		table   string
		exclude []string
	}{
		{"fact_subagent_context", nil},
		{"dim_session", nil},
		{"dim_turn", []string{"workflow_step_id_at_start"}},
		{"dim_task", []string{"workspace_id", "workflow_id", "workflow_step_id", "created_at", "updated_at"}},
		{"disclosures", nil},
		{"rejects", nil},
	} {
		equalSets(t, tc.table, parquetTable(t, whP, tc.table, tc.exclude...), parquetTable(t, whS, tc.table, tc.exclude...))
	}
	equalSets(t, "installation state",
		parquetTable(t, whP, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"),
		parquetTable(t, whS, "fact_installation_state", "snapshot_at", "source_dialect", "source_location"))
}

func TestPostgresSessionTimeZoneChangesNothing(t *testing.T) {
	_, dsn := pgFixture(t, "upgraded-backfill.pg.sql")
	whUTC, _ := extractTo(t, dsn, "tz")
	for _, zone := range []string{"America/Los_Angeles", "Pacific/Kiritimati"} {
		t.Run(zone, func(t *testing.T) {
			t.Setenv("PGTZ", zone)
			zoned := dsn + "&options=-c%20TimeZone%3D" + zone
			// The session really runs in that zone (PGTZ and options alike).
			if got := pgRows(t, zoned, `SELECT current_setting('TimeZone')`); len(got) != 1 || got[0] != zone {
				t.Fatalf("session TimeZone = %v, want %s", got, zone)
			}
			wh, _ := extractTo(t, zoned, "tz")
			for _, table := range []string{"fact_subagent_context", "dim_session", "dim_turn", "dim_task", "disclosures"} {
				equalSets(t, table+" in "+zone, parquetTable(t, wh, table), parquetTable(t, whUTC, table))
			}
		})
	}
}

func TestPostgresOneMicrosecondBoundary(t *testing.T) {
	t.Parallel()
	_, dsn := pgFixture(t, "fresh-activated.pg.sql")
	ids := pgRows(t, dsn, `SELECT id FROM task_session_subagents ORDER BY id LIMIT 3`)
	pgExec(t, dsn,
		`UPDATE kandev_meta SET value = '2026-08-04T10:00:00.123456Z' WHERE key = 'subagent_context_capture_since'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123455' WHERE id = '`+ids[0]+`'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123456' WHERE id = '`+ids[1]+`'`,
		`UPDATE task_session_subagents SET observed_at = '2026-08-04 10:00:00.123457' WHERE id = '`+ids[2]+`'`,
	)
	wh, _ := extractTo(t, dsn, "us")
	db := duck(t, wh)
	for i, want := range []string{"before_capture|false", "after_capture|false", "after_capture|false"} {
		if got := one(t, db, `SELECT capture_window || '|' || capture_boundary_ambiguous FROM subagent_contexts WHERE subagent_id = ?`, ids[i]); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
}

func pgRunErr(t *testing.T, dsn string) error {
	t.Helper()
	res, err := Run(context.Background(), Options{Warehouse: filepath.Join(t.TempDir(), "wh"),
		Installations: []Installation{{Name: "pg", Source: dsn}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcomes[0].Err
}

func TestPostgresErrorsAreClearAndSecretFree(t *testing.T) {
	t.Parallel()
	c, dsn := pgFixture(t, "fresh-activated.pg.sql")
	dbName := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	const secret = "supersecret-Zq9"
	if err := c.CreateRole(context.Background(), "reader", secret, dbName); err != nil {
		t.Fatal(err)
	}
	good := c.RoleDSN("reader", secret, dbName)
	if err := pgRunErr(t, good); err != nil {
		t.Fatalf("least-privilege role: %v", err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cases := []struct {
		name, dsn, want string
		setup           func()
	}{
		{"unreachable", fmt.Sprintf("postgres://reader:%s@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=3", secret, closedPort, dbName), "cannot reach", nil},
		{"wrong password", c.RoleDSN("reader", secret+"x", dbName), "authentication failed", nil},
		{"missing database", c.RoleDSN("reader", secret, "no_such_db"), "does not exist", nil},
		{"no SELECT on a table", good, "task_session_turns: permission denied", func() {
			pgExec(t, c.DSN(dbName), `REVOKE SELECT ON task_session_turns FROM reader`)
		}},
		{"missing table", c.DSN(dbName), "required table tasks is missing", func() {
			pgExec(t, c.DSN(dbName), `ALTER TABLE tasks RENAME TO tasks_gone`)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			err := pgRunErr(t, tc.dsn)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

func TestPostgresStatementTimeout(t *testing.T) {
	t.Parallel()
	c, dsn := pgFixture(t, "fresh-activated.pg.sql")
	_ = c
	// Another session holds a lock the extractor's read must wait for.
	ctx := context.Background()
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE task_session_turns IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	err = pgRunErr(t, dsn+"&options=-c%20statement_timeout%3D300")
	if err == nil || !strings.Contains(err.Error(), "statement_timeout") {
		t.Fatalf("error = %v, want a statement timeout", err)
	}
	var mc *models.MissingColumnError
	if errors.As(err, &mc) {
		t.Fatal("wrong error type")
	}
}
