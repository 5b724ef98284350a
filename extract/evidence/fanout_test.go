package evidence_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// The fan-out counted by the message pass against the SQL it replaces
// (scans.fanoutJoin, still what extract.Spec renders and the scans' fallback):
// every turns and sessions row, matched by its physical row (SQLite rowid,
// PostgreSQL ctid), must get the same five counts both ways. The
// comparison runs on every store the message-pass tests read (the real
// fixtures in both dialects, the hostile and generated stores) through
// compareMessagePassOn, and on the stores below, whose counts are also
// checked against values worked out by hand.

// fanRow is one scanned row: its id cell, its storage class (SQLite) and
// its five counts.
type fanRow struct {
	id     any
	class  string
	counts evidence.FanoutCounts
}

// rowIdentity names the scanned row in SQL: the storage class of its id
// and its physical position.
func rowIdentity(d models.Dialect) string {
	if d == models.DialectPostgres {
		return `'text:' || t.ctid::text`
	}
	return `typeof(t.id) || ':' || t.rowid`
}

// scanFanoutRows scans a turns or sessions table: with old, the SQL of
// extract.Spec (the join); else the plan's scan with fo, which must take the
// pass's counts.
func scanFanoutRows(t *testing.T, snap models.Snapshot, plan *extract.ScanPlan, tbl *models.Table, featurePresent bool, fo *evidence.Fanout, old bool) map[string]fanRow {
	t.Helper()
	var (
		spec models.TableSpec
		fill func(func([]any) error) func([]any) error
	)
	if old {
		spec = extract.Spec(tbl, featurePresent)
	} else {
		spec, fill = plan.ScanSpec(tbl, fo)
		if fill == nil {
			t.Fatalf("%s: the plan's scan does not take the pass's fan-out", tbl.Source)
		}
		if strings.Contains(spec.Join, "COUNT(DISTINCT") {
			t.Fatalf("%s: the plan's scan still joins the fan-out aggregate", tbl.Source)
		}
	}
	spec.Columns = append(spec.Columns, models.ColumnSpec{Name: "kx_row", Expr: rowIdentity(snap.(evidence.Snapshot).Dialect())})
	idCol := tbl.ReadCol("id")
	var cells []int
	for _, name := range scans.FanoutColumns {
		cells = append(cells, tbl.ReadCol(name))
	}
	out := map[string]fanRow{}
	collect := func(row []any) error {
		if len(row) != len(tbl.Read)+1 {
			return fmt.Errorf("%d cells, want %d", len(row), len(tbl.Read)+1)
		}
		key := fmt.Sprint(row[len(row)-1])
		n := make([]int64, len(cells))
		for i, c := range cells {
			v, ok := row[c].(int64)
			if !ok {
				return fmt.Errorf("%s %v: %s is %T, not int64", tbl.Source, row[idCol], scans.FanoutColumns[i], row[c])
			}
			n[i] = v
		}
		id := row[idCol]
		if s, ok := id.(string); ok {
			id = strings.Clone(s)
		}
		class, _, _ := strings.Cut(key, ":")
		out[key] = fanRow{id: id, class: class, counts: evidence.FanoutCounts{n[0], n[1], n[2], n[3], n[4]}}
		return nil
	}
	fn := collect
	if fill != nil {
		fn = fill(collect)
	}
	if err := snap.Scan(context.Background(), spec, fn); err != nil {
		t.Fatalf("scan %s: %v", tbl.Source, err)
	}
	return out
}

// compareFanout requires the plan's scans with the pass's counts (fo) to
// give every turns and sessions row the SQL join's five counts, and
// returns the rows of each table. Where the plan keeps the SQL join for a
// table, only that is read.
func compareFanout(t *testing.T, snap models.Snapshot, plan *extract.ScanPlan, fo *evidence.Fanout, featurePresent bool) (turns, sessions map[string]fanRow) {
	t.Helper()
	var out [2]map[string]fanRow
	for i, table := range []string{models.TableTurn, models.TableSession} {
		tbl := models.MustTable(table)
		want := scanFanoutRows(t, snap, plan, tbl, featurePresent, nil, true)
		out[i] = want
		if fo == nil || !plan.PassFanout(tbl.Source) {
			continue
		}
		got := scanFanoutRows(t, snap, plan, tbl, featurePresent, fo, false)
		out[i] = got
		if len(got) != len(want) {
			t.Errorf("%s: %d rows from the pass's scan, %d from the SQL", tbl.Source, len(got), len(want))
		}
		bad := 0
		for k, w := range want {
			g, ok := got[k]
			if !ok || g.counts != w.counts || fmt.Sprint(g.id) != fmt.Sprint(w.id) {
				if bad++; bad <= 8 {
					t.Errorf("%s row %s (id %.60v): pass %+v (found %v), SQL %+v", tbl.Source, k, w.id, g.counts, ok, w.counts)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d rows differ", tbl.Source, bad, len(want))
		}
	}
	return out[0], out[1]
}

// readFanout reads a store's fan-out both ways, as a run reads it (the
// plan, then the message pass), and compares them.
func readFanout(t *testing.T, src models.Source) (plan *extract.ScanPlan, turns, sessions map[string]fanRow) {
	t.Helper()
	ctx := context.Background()
	snap, _, since, present := beginWithState(t, src)
	defer snap.Close()
	var err error
	if plan, err = extract.PlanScans(ctx, snap, present); err != nil {
		t.Fatal(err)
	}
	ev, _, err := evidence.ReadMessagesAndFanout(ctx, snap, since, present, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	messages, err := snap.TableExists(ctx, models.SourceMessages)
	if err != nil {
		t.Fatal(err)
	}
	// Without task_session_messages there is no pass: the scans count.
	if pass := present && messages && (plan.PassFanout(models.SourceTurns) || plan.PassFanout(models.SourceSessions)); pass != (ev.Fanout != nil) {
		t.Fatalf("the pass counted the fan-out: %v, want %v", ev.Fanout != nil, pass)
	}
	turns, sessions = compareFanout(t, snap, plan, ev.Fanout, present)
	return plan, turns, sessions
}

// byID returns the counts of the one row whose id (a string, or the prefix
// of a truncated one of n bytes) and class match.
func byID(t *testing.T, rows map[string]fanRow, id string, n int64, class string) evidence.FanoutCounts {
	t.Helper()
	var found []evidence.FanoutCounts
	for _, r := range rows {
		if class != "" && r.class != class {
			continue
		}
		switch v := r.id.(type) {
		case string:
			if n == 0 && v == id {
				found = append(found, r.counts)
			}
		case models.Truncated:
			if n > 0 && v.Bytes == n && strings.HasPrefix(id, v.Prefix) {
				found = append(found, r.counts)
			}
		}
	}
	if len(found) == 0 {
		t.Fatalf("no row with id %.40q (%d bytes, %s)", id, n, class)
	}
	for _, f := range found[1:] {
		if f != found[0] {
			t.Errorf("rows with id %.40q differ: %+v", id, found)
		}
	}
	return found[0]
}

func wantCounts(t *testing.T, what string, got evidence.FanoutCounts, observed, live, backfill, distinct, overlap int64) {
	t.Helper()
	if want := (evidence.FanoutCounts{observed, live, backfill, distinct, overlap}); got != want {
		t.Errorf("%s: %+v, want %+v", what, got, want)
	}
}

// TestFanoutHostileSQLite: the edge cases of the join the pass replaces, on
// a real store — duplicated tool calls in a turn, a live and a backfill row
// for one tool call, sources other than live and backfill (NULL, 'LIVE', one
// over the key bound), empty, NULL, BLOB and over-long (256 B, 1 MiB) tool
// call ids, empty, BLOB, over-long and NULL turn ids, a turn id listed twice
// (its primary key lost), turns and sessions without rows, rows of a turn
// that does not exist, BLOB and over-long session ids — counted by hand
// and compared, row by row, with the SQL.
func TestFanoutHostileSQLite(t *testing.T) {
	path := testkit.CopyFixture(t, "fresh-activated.db")
	db := testkit.SourceDB(t, path)
	var task string
	if err := db.QueryRow(`SELECT id FROM tasks ORDER BY id LIMIT 1`).Scan(&task); err != nil {
		t.Fatal(err)
	}
	var cols []string
	rows, err := db.Query(`SELECT name FROM pragma_table_info('task_session_subagents') ORDER BY cid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	rows.Close()
	db.Close()
	list := strings.Join(cols, ", ")
	const stamp = "'2026-08-20 10:00:00+00:00'"
	huge := func(c string) string { return fmt.Sprintf("printf('%%.*c', 1100000, '%s')", c) }
	long := func(c string, n int) string { return "'" + strings.Repeat(c, n) + "'" }
	stmts := []string{
		// tool_call_id and source may be NULL; the keys stay TEXT, BINARY,
		// with the primary key and the unique key.
		`CREATE TABLE tss_new (id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL, turn_id TEXT,
			tool_call_id TEXT, agent_execution_id TEXT NOT NULL DEFAULT 'unknown', parent_tool_call_id TEXT,
			subagent_type TEXT, description TEXT, agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT,
			tool_status TEXT, is_async INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER, tool_use_count INTEGER,
			duration_ms INTEGER, source TEXT DEFAULT 'live', observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP,
			updated_at TIMESTAMP NOT NULL, UNIQUE (task_session_id, agent_execution_id, tool_call_id))`,
		`INSERT INTO tss_new (` + list + `) SELECT ` + list + ` FROM task_session_subagents`,
		`DROP TABLE task_session_subagents`,
		`ALTER TABLE tss_new RENAME TO task_session_subagents`,
		// task_session_turns without its primary key (CREATE TABLE … AS
		// keeps the columns, TEXT as TEXT): a turn id may be listed twice.
		`CREATE TABLE turns_copy AS SELECT * FROM task_session_turns`,
		`DROP TABLE task_session_turns`,
		`ALTER TABLE turns_copy RENAME TO task_session_turns`,
	}
	session := func(id string) string {
		return fmt.Sprintf(`INSERT INTO task_sessions (id, task_id, started_at, updated_at) VALUES (%s, '%s', %s, %s)`, id, task, stamp, stamp)
	}
	turn := func(id string) string {
		return fmt.Sprintf(`INSERT INTO task_session_turns (id, task_session_id, task_id, started_at, created_at, updated_at) VALUES (%s, 'fx-s1', '%s', %s, %s, %s)`,
			id, task, stamp, stamp, stamp)
	}
	n := 0
	sub := func(sess, turnID, tc, source string) string {
		n++
		return fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
			VALUES ('fx-r%d', %s, '%s', %s, %s, 'fx-r%d', %s, %s, %s)`, n, sess, task, turnID, tc, n, source, stamp, stamp)
	}
	s1, blobTurn := "'fx-s1'", "CAST('fx-blob' AS BLOB)"
	stmts = append(stmts,
		session(s1), session("'fx-s2'"), session("CAST('fx-s1' AS BLOB)"), session(long("s", 300)),
		turn("'fx-t1'"), turn("'fx-t1'"), turn("'fx-t2'"), turn("''"), turn("'fx-blob'"), turn(blobTurn),
		turn(long("l", 300)), turn(huge("h")),
		// fx-t1: 12 rows.
		sub(s1, "'fx-t1'", "'a'", "'live'"),
		sub(s1, "'fx-t1'", "'a'", "'live'"),     // the same tool call twice
		sub(s1, "'fx-t1'", "'a'", "'backfill'"), // live and backfill
		sub(s1, "'fx-t1'", "'b'", "'backfill'"),
		sub(s1, "'fx-t1'", "'c'", "'manual'"), // another source
		sub(s1, "'fx-t1'", "''", "'live'"),    // empty: no tool call
		sub(s1, "'fx-t1'", "NULL", "'live'"),
		sub(s1, "'fx-t1'", "CAST('b' AS BLOB)", "'backfill'"), // not the TEXT 'b'
		sub(s1, "'fx-t1'", long("z", 300), "NULL"),
		sub(s1, "'fx-t1'", huge("y"), "'live'"), // over the key bound: no tool call
		sub(s1, "'fx-t1'", "'d'", "'LIVE'"),
		sub(s1, "'fx-t1'", "'e'", huge("l")),
		// The empty turn id, the TEXT and BLOB turns, the over-long ones.
		sub(s1, "''", "'q'", "'live'"), sub(s1, "''", "'q'", "'backfill'"),
		sub(s1, "'fx-blob'", "'m'", "'live'"), sub(s1, "'fx-blob'", "'n'", "'live'"),
		sub(s1, blobTurn, "'m'", "'backfill'"),
		sub(s1, long("l", 300), "'p'", "'live'"), sub(s1, long("l", 300), "'p'", "'live'"),
		sub(s1, huge("h"), "'o'", "'live'"),
		// No turn, a turn that does not exist.
		sub(s1, "NULL", "'nt'", "'live'"), sub(s1, "'fx-missing'", "'mt'", "'live'"),
		// The BLOB session, the over-long one.
		sub("CAST('fx-s1' AS BLOB)", "NULL", "'sb'", "'live'"),
		sub(long("s", 300), "NULL", "'sl'", "'backfill'"),
	)
	testkit.SQLiteExec(t, path, stmts...)

	src, err := extract.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	plan, turns, sessions := readFanout(t, src)
	if !plan.PassFanout(models.SourceTurns) || !plan.PassFanout(models.SourceSessions) {
		t.Fatal("the plan keeps the SQL join on a store with Kandev's key types")
	}
	uniqueIDs, uniqueKey, _ := plan.Summary()
	if turnsUnique, subagentsUnique := slices.Contains(uniqueIDs, models.SourceTurns), slices.Contains(uniqueIDs, models.SourceSubagents); turnsUnique || !subagentsUnique || !uniqueKey {
		t.Errorf("uniqueness: turns %v (no primary key), subagents %v, key %v", turnsUnique, subagentsUnique, uniqueKey)
	}
	// fx-t1: 12 rows; live: the two a, '', NULL and the over-long tool
	// call; backfill: a, b, BLOB b. Distinct tool calls: a, b, BLOB b, c,
	// z×300, d, e; live a; backfill a, b, BLOB b: overlap 1 + 3 − 7.
	wantCounts(t, "fx-t1", byID(t, turns, "fx-t1", 0, "text"), 12, 5, 3, 7, -3)
	wantCounts(t, "fx-t2 (no rows)", byID(t, turns, "fx-t2", 0, "text"), 0, 0, 0, 0, 0)
	wantCounts(t, "the empty turn id", byID(t, turns, "", 0, "text"), 2, 1, 1, 1, 1)
	wantCounts(t, "TEXT fx-blob", byID(t, turns, "fx-blob", 0, "text"), 2, 2, 0, 2, 0)
	wantCounts(t, "BLOB fx-blob", byID(t, turns, "fx-blob", 0, "blob"), 1, 0, 1, 1, 0)
	wantCounts(t, "a 300-byte turn id", byID(t, turns, strings.Repeat("l", 300), 300, "text"), 2, 2, 0, 1, 0)
	wantCounts(t, "a turn id over 1 MiB", byID(t, turns, strings.Repeat("h", 256), 1100000, "text"), 0, 0, 0, 0, 0)
	// fx-s1: its 22 rows (fx-t1's 12, 2 of '', 3 of fx-blob, 2 of l×300,
	// the h×1.1M one, no turn, a missing turn); distinct a, b, BLOB b, c,
	// z, d, e, q, m, n, p, o, nt, mt (14); live a, q, m, n, p, o, nt, mt
	// (8); backfill a, b, BLOB b, q, m (5): overlap 8 + 5 − 14.
	wantCounts(t, "fx-s1", byID(t, sessions, "fx-s1", 0, "text"), 22, 13, 5, 14, -1)
	wantCounts(t, "BLOB fx-s1", byID(t, sessions, "fx-s1", 0, "blob"), 1, 1, 0, 1, 0)
	wantCounts(t, "fx-s2 (no rows)", byID(t, sessions, "fx-s2", 0, "text"), 0, 0, 0, 0, 0)
	wantCounts(t, "a 300-byte session id", byID(t, sessions, strings.Repeat("s", 300), 300, "text"), 1, 0, 1, 1, 0)
	if n := len(byIDAll(turns, "fx-t1")); n != 2 {
		t.Errorf("fx-t1 is listed %d times, want 2", n)
	}
}

func byIDAll(rows map[string]fanRow, id string) []evidence.FanoutCounts {
	var out []evidence.FanoutCounts
	for _, r := range rows {
		if s, ok := r.id.(string); ok && s == id {
			out = append(out, r.counts)
		}
	}
	return out
}

// TestFanoutHostilePostgres: the same edge cases PostgreSQL can hold (no
// BLOBs).
func TestFanoutHostilePostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
	task := "(SELECT min(id) FROM tasks)"
	const stamp = "'2026-08-20 10:00:00'"
	huge := func(c string) string { return fmt.Sprintf("repeat('%s', 1100000)", c) }
	long := func(c string, n int) string { return "'" + strings.Repeat(c, n) + "'" }
	stmts := []string{
		"SET session_replication_role = replica",
		"ALTER TABLE task_session_subagents ALTER COLUMN tool_call_id DROP NOT NULL, ALTER COLUMN source DROP NOT NULL",
		"ALTER TABLE task_session_turns DROP CONSTRAINT task_session_turns_pkey CASCADE",
		// Ids over 1 MiB do not fit a btree index row: no index on them.
		"DROP INDEX idx_subagents_turn_id",
		"ALTER TABLE task_session_subagents DROP CONSTRAINT task_session_subagents_task_session_id_agent_execution_id_t_key",
	}
	session := func(id string) {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO task_sessions (id, task_id, started_at, updated_at) VALUES (%s, %s, %s, %s)`, id, task, stamp, stamp))
	}
	turn := func(id string) {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO task_session_turns (id, task_session_id, task_id, started_at, created_at, updated_at) VALUES (%s, 'fx-s1', %s, %s, %s, %s)`,
			id, task, stamp, stamp, stamp))
	}
	n := 0
	sub := func(sess, turnID, tc, source string) {
		n++
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
			VALUES ('fx-r%d', %s, %s, %s, %s, 'fx-r%d', %s, %s, %s)`, n, sess, task, turnID, tc, n, source, stamp, stamp))
	}
	s1 := "'fx-s1'"
	session(s1)
	session("'fx-s2'")
	session(long("s", 300))
	for _, id := range []string{"'fx-t1'", "'fx-t1'", "'fx-t2'", "''", long("l", 300), huge("h")} {
		turn(id)
	}
	sub(s1, "'fx-t1'", "'a'", "'live'")
	sub(s1, "'fx-t1'", "'a'", "'live'")
	sub(s1, "'fx-t1'", "'a'", "'backfill'")
	sub(s1, "'fx-t1'", "'b'", "'backfill'")
	sub(s1, "'fx-t1'", "'c'", "'manual'")
	sub(s1, "'fx-t1'", "''", "'live'")
	sub(s1, "'fx-t1'", "NULL", "'live'")
	sub(s1, "'fx-t1'", long("z", 300), "NULL")
	sub(s1, "'fx-t1'", huge("y"), "'live'")
	sub(s1, "'fx-t1'", "'d'", "'LIVE'")
	sub(s1, "'fx-t1'", "'e'", huge("l"))
	sub(s1, "''", "'q'", "'live'")
	sub(s1, "''", "'q'", "'backfill'")
	sub(s1, long("l", 300), "'p'", "'live'")
	sub(s1, long("l", 300), "'p'", "'live'")
	sub(s1, huge("h"), "'o'", "'live'")
	sub(s1, "NULL", "'nt'", "'live'")
	sub(s1, "'fx-missing'", "'mt'", "'live'")
	sub(long("s", 300), "NULL", "'sl'", "'backfill'")
	if err := c.Exec(ctx, db, strings.Join(stmts, ";\n")); err != nil {
		t.Fatal(err)
	}
	src, err := extract.OpenPostgres(ctx, c.DSN(db), extract.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	plan, turns, sessions := readFanout(t, src)
	if !plan.PassFanout(models.SourceTurns) || !plan.PassFanout(models.SourceSessions) {
		t.Fatal("the plan keeps the SQL join on a store with Kandev's key types")
	}
	uniqueIDs, uniqueKey, _ := plan.Summary()
	if turnsUnique, sessionsUnique := slices.Contains(uniqueIDs, models.SourceTurns), slices.Contains(uniqueIDs, models.SourceSessions); turnsUnique || !sessionsUnique || uniqueKey {
		t.Errorf("uniqueness: turns %v (no primary key), sessions %v, key %v (no constraint)", turnsUnique, sessionsUnique, uniqueKey)
	}
	// fx-t1: 11 rows; live a, a, '', NULL, y×1.1M; backfill a, b;
	// distinct a, b, c, z, d, e (6); live a; backfill a, b: 1 + 2 − 6.
	wantCounts(t, "fx-t1", byID(t, turns, "fx-t1", 0, ""), 11, 5, 2, 6, -3)
	wantCounts(t, "fx-t2 (no rows)", byID(t, turns, "fx-t2", 0, ""), 0, 0, 0, 0, 0)
	wantCounts(t, "the empty turn id", byID(t, turns, "", 0, ""), 2, 1, 1, 1, 1)
	wantCounts(t, "a 300-byte turn id", byID(t, turns, strings.Repeat("l", 300), 300, ""), 2, 2, 0, 1, 0)
	wantCounts(t, "a turn id over 1 MiB", byID(t, turns, strings.Repeat("h", 256), 1100000, ""), 0, 0, 0, 0, 0)
	// fx-s1: 18 rows; live 5 + 1 + 2 + 1 + 1 + 1; backfill 2 + 1;
	// distinct a, b, c, z, d, e, q, p, o, nt, mt (11); live a, q, p, o, nt,
	// mt (6); backfill a, b, q (3): 6 + 3 − 11.
	wantCounts(t, "fx-s1", byID(t, sessions, "fx-s1", 0, ""), 18, 11, 3, 11, -2)
	wantCounts(t, "fx-s2 (no rows)", byID(t, sessions, "fx-s2", 0, ""), 0, 0, 0, 0, 0)
	wantCounts(t, "a 300-byte session id", byID(t, sessions, strings.Repeat("s", 300), 300, ""), 1, 0, 1, 1, 0)
	if n := len(byIDAll(turns, "fx-t1")); n != 2 {
		t.Errorf("fx-t1 is listed %d times, want 2", n)
	}
}

// TestFanoutKeptInSQL: where Go's equality is not the join's, the plan
// keeps the SQL join (and the counts are the join's): a turn id declared
// with NOCASE (SQLite), a turn_id without TEXT affinity (SQLite), turn ids
// under another collation than turn_id's (PostgreSQL); and without
// task_session_messages the pass does not run, so neither does its count.
func TestFanoutKeptInSQL(t *testing.T) {
	ctx := context.Background()
	sqliteCase := func(t *testing.T, stmts ...string) *extract.ScanPlan {
		path := testkit.CopyFixture(t, "fresh-activated.db")
		testkit.SQLiteExec(t, path, stmts...)
		src, err := extract.OpenSQLite(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		plan, _, _ := readFanout(t, src)
		return plan
	}
	t.Run("NOCASE turn ids", func(t *testing.T) {
		plan := sqliteCase(t,
			`CREATE TABLE turns_new (id TEXT COLLATE NOCASE PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL,
				started_at TIMESTAMP NOT NULL, completed_at TIMESTAMP, metadata TEXT, created_at TIMESTAMP, updated_at TIMESTAMP)`,
			`INSERT INTO turns_new SELECT id, task_session_id, task_id, started_at, completed_at, metadata, created_at, updated_at FROM task_session_turns`,
			`DROP TABLE task_session_turns`, `ALTER TABLE turns_new RENAME TO task_session_turns`)
		if plan.PassFanout(models.SourceTurns) || !plan.PassFanout(models.SourceSessions) {
			t.Errorf("pass fan-out: turns %v (want false), sessions %v (want true)", plan.PassFanout(models.SourceTurns), plan.PassFanout(models.SourceSessions))
		}
		if uniqueIDs, _, _ := plan.Summary(); slices.Contains(uniqueIDs, models.SourceTurns) {
			t.Error("a NOCASE primary key taken as proof of BINARY uniqueness")
		}
	})
	t.Run("turn_id without a type", func(t *testing.T) {
		// ALTER TABLE … RENAME/ADD keep the other columns: a new turn_id
		// column with no declared type (BLOB affinity) takes the old one's values.
		plan := sqliteCase(t,
			`ALTER TABLE task_session_subagents ADD COLUMN turn_id_any`,
			`UPDATE task_session_subagents SET turn_id_any = turn_id`,
			`DROP INDEX idx_subagents_turn_id`,
			`ALTER TABLE task_session_subagents DROP COLUMN turn_id`,
			`ALTER TABLE task_session_subagents RENAME COLUMN turn_id_any TO turn_id`)
		if plan.PassFanout(models.SourceTurns) || plan.PassFanout(models.SourceSessions) {
			t.Errorf("pass fan-out with an untyped turn_id: turns %v, sessions %v", plan.PassFanout(models.SourceTurns), plan.PassFanout(models.SourceSessions))
		}
	})
	t.Run("no messages table", func(t *testing.T) {
		plan := sqliteCase(t, `DROP TABLE task_session_messages`)
		if !plan.PassFanout(models.SourceTurns) {
			t.Error("the plan refuses the pass's fan-out")
		}
		// readFanout compared the SQL only: the pass did not count.
	})
	t.Run("postgres collations differ", func(t *testing.T) {
		c := pgtest.Shared(t)
		db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
		if err := c.Exec(ctx, db, `ALTER TABLE task_session_subagents ALTER COLUMN turn_id TYPE text COLLATE "C"`); err != nil {
			t.Fatal(err)
		}
		src, err := extract.OpenPostgres(ctx, c.DSN(db), extract.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		plan, _, _ := readFanout(t, src)
		if plan.PassFanout(models.SourceTurns) || !plan.PassFanout(models.SourceSessions) {
			t.Errorf("pass fan-out: turns %v (want false), sessions %v (want true)", plan.PassFanout(models.SourceTurns), plan.PassFanout(models.SourceSessions))
		}
	})
}
