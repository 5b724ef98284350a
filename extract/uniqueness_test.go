package extract

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// TestOnlyBinaryCollations: COLLATE is read as SQLite tokenizes, never in
// a string or a quoted name.
func TestOnlyBinaryCollations(t *testing.T) {
	for sql, want := range map[string]bool{
		`CREATE TABLE t (id TEXT PRIMARY KEY, x TEXT COLLATE BINARY)`:      true,
		`CREATE TABLE t (id TEXT PRIMARY KEY, x TEXT collate "binary")`:    true,
		`CREATE TABLE t (id TEXT, x TEXT DEFAULT 'COLLATE NOCASE')`:        true,
		`CREATE TABLE t (id TEXT, "collate" TEXT, [COLLATE] TEXT)`:         true,
		`CREATE TABLE t (id TEXT -- COLLATE NOCASE` + "\n" + `)`:           true,
		`CREATE TABLE t (id TEXT /* COLLATE NOCASE */)`:                    true,
		`CREATE TABLE t (id TEXT COLLATE NOCASE PRIMARY KEY)`:              false,
		`CREATE TABLE t (id TEXT COLLATE "NOCASE")`:                        false,
		`CREATE TABLE t (id TEXT COLLATE RTRIM)`:                           false,
		`CREATE TABLE t (id TEXT COLLATE 'BINARY')`:                        false,
		`CREATE TABLE t (id TEXT, x TEXT CHECK (x = 'a' COLLATE NOCASE))`:  false,
		`CREATE TABLE t (id TEXT COLLATE`:                                  false,
		`CREATE TABLE t (id TEXT DEFAULT 'it''s' COLLATE NOCASE)`:          false,
		`CREATE TABLE t (id TEXT DEFAULT 'it''s COLLATE NOCASE' NOT NULL)`: true,
	} {
		if got := onlyBinaryCollations(sql); got != want {
			t.Errorf("%s: %v, want %v", sql, got, want)
		}
	}
	for decl, want := range map[string]bool{"TEXT": true, "varchar(36)": true, "CLOB": true, "": false, "BLOB": false,
		"INTEGER": false, "TIMESTAMP": false, "CHARINT": false, "NUMERIC": false} {
		if got := textAffinity(decl); got != want {
			t.Errorf("textAffinity(%q) = %v, want %v", decl, got, want)
		}
	}
}

// TestScanPlanUniqueness: a unique index that compares as the GROUP BY does
// leaves the duplicate-id and duplicate-key joins out (the computed column
// is 1); without one — no primary key, a NOCASE key, a partial or an
// expression index, a deferrable constraint — the joins stay and still
// report the duplicates.
func TestScanPlanUniqueness(t *testing.T) {
	ctx := context.Background()
	sharing := func(t *testing.T, snap models.Snapshot, plan *ScanPlan, table, col string) map[string]int64 {
		t.Helper()
		tbl := models.MustTable(table)
		idCol, c := tbl.ReadCol("id"), tbl.ReadCol(col)
		out := map[string]int64{}
		if err := plan.Scan(ctx, snap, tbl, nil, func(row []any) error {
			n, ok := row[c].(int64)
			if !ok {
				return fmt.Errorf("%s is %T", col, row[c])
			}
			if n != 1 {
				out[fmt.Sprint(row[idCol])] = n
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	joins := func(plan *ScanPlan, table string) string {
		return plan.Spec(models.MustTable(table), false).Join
	}
	open := func(t *testing.T, location string) (models.Snapshot, *ScanPlan) {
		t.Helper()
		src, err := Open(ctx, location)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snap.Close() })
		plan, err := PlanScans(ctx, snap, true)
		if err != nil {
			t.Fatal(err)
		}
		return snap, plan
	}
	all := []string{models.TableFact, models.TableSession, models.TableTurn, models.TableTask, models.TableWorkflow, models.TableWorkflowStep}

	t.Run("kandev schema", func(t *testing.T) {
		for _, loc := range []string{testkit.Fixture(t, "fresh-activated.db"), testkit.Fixture(t, "upgraded-backfill.db")} {
			snap, plan := open(t, loc)
			if !plan.uniqueKey {
				t.Errorf("%s: the unique key is not proven", loc)
			}
			for _, table := range all {
				if j := joins(plan, table); strings.Contains(j, "HAVING COUNT(*) > 1") {
					t.Errorf("%s: %s still joins a duplicate count: %s", loc, table, j)
				}
				if got := sharing(t, snap, plan, table, "rows_sharing_id"); len(got) > 0 {
					t.Errorf("%s: %s rows sharing an id: %v", loc, table, got)
				}
			}
		}
	})

	t.Run("sqlite keys lost or not BINARY", func(t *testing.T) {
		path := testkit.CopyFixture(t, "fresh-activated.db")
		db := testkit.SourceDB(t, path)
		var dupTask, key string
		if err := db.QueryRow(`SELECT min(id) FROM tasks`).Scan(&dupTask); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT id FROM task_session_subagents WHERE agent_execution_id <> 'unknown' ORDER BY id LIMIT 1`).Scan(&key); err != nil {
			t.Fatal(err)
		}
		db.Close()
		cols := `id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at`
		testkit.SQLiteExec(t, path,
			// tasks: no primary key, one row twice.
			`CREATE TABLE tasks_copy AS SELECT * FROM tasks`, `DROP TABLE tasks`, `ALTER TABLE tasks_copy RENAME TO tasks`,
			`INSERT INTO tasks SELECT * FROM tasks WHERE id = '`+dupTask+`'`,
			// workflows: a unique index, but partial.
			`CREATE TABLE wf_copy AS SELECT * FROM workflows`, `DROP TABLE workflows`, `ALTER TABLE wf_copy RENAME TO workflows`,
			`CREATE UNIQUE INDEX wf_partial ON workflows(id) WHERE id <> ''`,
			// workflow_steps: a unique expression index, then a NOCASE one
			// in the table itself: 'X' and 'x' are one id to the GROUP BY.
			`CREATE TABLE ws_new (id TEXT COLLATE NOCASE PRIMARY KEY, workflow_id TEXT, name TEXT, stage_type TEXT, position INTEGER, created_at TIMESTAMP, updated_at TIMESTAMP)`,
			`INSERT INTO ws_new SELECT id, workflow_id, name, stage_type, position, created_at, updated_at FROM workflow_steps`,
			`DROP TABLE workflow_steps`, `ALTER TABLE ws_new RENAME TO workflow_steps`,
			`CREATE UNIQUE INDEX ws_expr ON workflow_steps(lower(id))`,
			`INSERT INTO workflow_steps (id, workflow_id, name, position) VALUES ('Step-X', 'w', 'n', 9)`,
			// task_session_subagents: the unique key lost, one key twice;
			// a unique index on the id with its columns reordered kept as
			// the primary key's stand-in.
			`CREATE TABLE tss_copy AS SELECT * FROM task_session_subagents`, `DROP TABLE task_session_subagents`,
			`ALTER TABLE tss_copy RENAME TO task_session_subagents`,
			`CREATE UNIQUE INDEX tss_id ON task_session_subagents(id)`,
			`INSERT INTO task_session_subagents (`+cols+`) SELECT 'dup-key-row', `+strings.TrimPrefix(cols, "id, ")+` FROM task_session_subagents WHERE id = '`+key+`'`,
		)
		snap, plan := open(t, path)
		for table, want := range map[string]bool{models.SourceTasks: false, models.SourceWorkflows: false, models.SourceSteps: false,
			models.SourceSubagents: true, models.SourceSessions: true, models.SourceTurns: true} {
			if plan.uniqueID[table] != want {
				t.Errorf("%s: id proven unique %v, want %v", table, plan.uniqueID[table], want)
			}
		}
		if plan.uniqueKey {
			t.Error("the subagent key proven unique without its constraint")
		}
		if got := sharing(t, snap, plan, models.TableTask, "rows_sharing_id"); len(got) != 1 || got[dupTask] != 2 {
			t.Errorf("tasks sharing an id: %v, want %s: 2", got, dupTask)
		}
		if got := sharing(t, snap, plan, models.TableFact, "rows_sharing_key"); len(got) != 2 || got[key] != 2 || got["dup-key-row"] != 2 {
			t.Errorf("subagent rows sharing the key: %v, want %s and dup-key-row: 2", got, key)
		}
		steps := sharing(t, snap, plan, models.TableWorkflowStep, "rows_sharing_id")
		if len(steps) != 0 {
			t.Errorf("workflow steps sharing an id: %v", steps)
		}
	})

	t.Run("sqlite NOCASE ids the GROUP BY merges", func(t *testing.T) {
		path := testkit.CopyFixture(t, "fresh-activated.db")
		testkit.SQLiteExec(t, path,
			`CREATE TABLE ws_new (id TEXT COLLATE NOCASE, workflow_id TEXT, name TEXT, stage_type TEXT, position INTEGER, created_at TIMESTAMP, updated_at TIMESTAMP)`,
			`INSERT INTO ws_new SELECT id, workflow_id, name, stage_type, position, created_at, updated_at FROM workflow_steps`,
			`DROP TABLE workflow_steps`, `ALTER TABLE ws_new RENAME TO workflow_steps`,
			`CREATE UNIQUE INDEX ws_binary ON workflow_steps(id COLLATE BINARY)`,
			`INSERT INTO workflow_steps (id, workflow_id, name, position) VALUES ('Step-X', 'w', 'n', 9), ('step-x', 'w', 'n', 10)`)
		snap, plan := open(t, path)
		if plan.uniqueID[models.SourceSteps] {
			t.Fatal("a BINARY index taken as proof for a NOCASE column")
		}
		got := sharing(t, snap, plan, models.TableWorkflowStep, "rows_sharing_id")
		if len(got) != 2 || got["Step-X"] != 2 || got["step-x"] != 2 {
			t.Errorf("steps sharing an id under NOCASE: %v", got)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		c := pgtest.Shared(t)
		db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
		snap, plan := open(t, c.DSN(db))
		if !plan.uniqueKey {
			t.Error("the unique key is not proven")
		}
		for _, table := range all {
			if j := joins(plan, table); strings.Contains(j, "HAVING COUNT(*) > 1") {
				t.Errorf("%s still joins a duplicate count: %s", table, j)
			}
		}
		snap.Close()
		stmts := []string{
			// tasks: no primary key, a row twice.
			`ALTER TABLE tasks DROP CONSTRAINT tasks_pkey CASCADE`,
			`INSERT INTO tasks SELECT * FROM tasks WHERE id = (SELECT min(id) FROM tasks)`,
			// workflows: a partial unique index only.
			`ALTER TABLE workflows DROP CONSTRAINT workflows_pkey CASCADE`,
			`CREATE UNIQUE INDEX wf_partial ON workflows(id) WHERE id <> ''`,
			// workflow_steps: a deferrable primary key.
			`ALTER TABLE workflow_steps DROP CONSTRAINT workflow_steps_pkey CASCADE`,
			`ALTER TABLE workflow_steps ADD PRIMARY KEY (id) DEFERRABLE`,
			// task_sessions: a unique index under a nondeterministic collation.
			`CREATE COLLATION kx_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
			`ALTER TABLE task_sessions DROP CONSTRAINT task_sessions_pkey CASCADE`,
			`CREATE UNIQUE INDEX ts_ci ON task_sessions(id COLLATE kx_ci)`,
			// task_session_subagents: the unique key lost, a key twice; the
			// key's unique index, reordered, stands for the primary key.
			`ALTER TABLE task_session_subagents DROP CONSTRAINT task_session_subagents_task_session_id_agent_execution_id_t_key`,
			`INSERT INTO task_session_subagents SELECT 'dup-key-row', task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, parent_tool_call_id,
				subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count,
				duration_ms, source, observed_at, settled_at, updated_at FROM task_session_subagents WHERE agent_execution_id <> 'unknown' ORDER BY id LIMIT 1`,
		}
		if err := c.Exec(ctx, db, "SET session_replication_role = replica;\n"+strings.Join(stmts, ";\n")); err != nil {
			t.Fatal(err)
		}
		snap, plan = open(t, c.DSN(db))
		for table, want := range map[string]bool{models.SourceTasks: false, models.SourceWorkflows: false, models.SourceSteps: false,
			models.SourceSessions: false, models.SourceSubagents: true, models.SourceTurns: true} {
			if plan.uniqueID[table] != want {
				t.Errorf("%s: id proven unique %v, want %v", table, plan.uniqueID[table], want)
			}
		}
		if plan.uniqueKey {
			t.Error("the subagent key proven unique without its constraint")
		}
		if got := sharing(t, snap, plan, models.TableTask, "rows_sharing_id"); len(got) != 1 || slices.Collect(maps.Values(got))[0] != 2 {
			t.Errorf("tasks sharing an id: %v, want one id: 2", got)
		}
		if got := sharing(t, snap, plan, models.TableFact, "rows_sharing_key"); len(got) != 2 || got["dup-key-row"] != 2 {
			t.Errorf("subagent rows sharing the key: %v, want 2 rows: 2", got)
		}
	})
}
