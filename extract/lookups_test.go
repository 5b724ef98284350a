package extract

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// lookupCells scans table on snap and returns, per row id, the values of
// its lookup columns.
func lookupCells(t *testing.T, snap *sqliteSnapshot, table string) map[string]string {
	t.Helper()
	spec := Spec(models.MustTable(table), true)
	id, sm, ta := spec.Column("id"), spec.Column("session_missing"), spec.Column("turn_attribution")
	out := map[string]string{}
	err := snap.Scan(context.Background(), spec, func(row []any) error {
		v := fmt.Sprint(row[sm])
		if ta >= 0 {
			v += "/" + fmt.Sprint(row[ta])
		}
		out[fmt.Sprint(row[id])] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLookupsInGoMatchSQL: session_missing and turn_attribution decided in
// Go from the ids read beforehand equal SQLite's per-row EXISTS probes, on
// keys of every kind — found, missing, NULL, empty, BLOB (never equal to
// TEXT), over the 256 bytes the scan reads, over the 1 MiB bound, an id
// only a BLOB turn has, a case difference, an integer stored as text.
func TestLookupsInGoMatchSQL(t *testing.T) {
	path := testkit.CopyFixture(t, "fresh-activated.db")
	db := testkit.SourceDB(t, path)
	var sess, task, turn string
	if err := db.QueryRow(`SELECT task_session_id, task_id, id FROM task_session_turns LIMIT 1`).Scan(&sess, &task, &turn); err != nil {
		t.Fatal(err)
	}
	db.Close()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	long := "printf('%.*c', 300, 'L')"
	huge := "printf('%.*c', 1100000, 'H')"
	// A session and turns with odd ids, copied from existing rows.
	copyRow := func(table, id string) string {
		return fmt.Sprintf(`CREATE TEMP TABLE c AS SELECT * FROM %[1]s LIMIT 1; UPDATE c SET id = %[2]s; INSERT INTO %[1]s SELECT * FROM c; DROP TABLE c;`, table, id)
	}
	sub := func(id, sessV, turnV string) string {
		return fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
			VALUES ('%s', %s, %s, %s, '%s', 'x', 'live', '2026-08-20 10:00:00+00:00', '2026-08-20 10:00:00+00:00')`, id, sessV, q(task), turnV, id)
	}
	testkit.SQLiteExec(t, path,
		copyRow("task_sessions", long),
		copyRow("task_session_turns", long),
		copyRow("task_session_turns", "CAST('blobonly' AS BLOB)"),
		copyRow("task_session_turns", q("12345")),
		sub("found", q(sess), q(turn)),
		sub("missing", q("no-such-session"), q("no-such-turn")),
		sub("null-turn", q(sess), "NULL"),
		sub("empty", q(""), q("")),
		sub("blob", "CAST("+q(sess)+" AS BLOB)", "CAST("+q(turn)+" AS BLOB)"),
		sub("long", long, long),
		sub("huge", huge, huge),
		sub("blob-only-turn", q(sess), q("blobonly")),
		sub("case", q(strings.ToUpper(sess)), q(strings.ToUpper(turn))),
		sub("int", q(sess), "12345"),
		sub("int-missing", q(sess), "54321"),
	)

	begin := func() *sqliteSnapshot {
		// One snapshot per source (it has one connection).
		src, err := OpenSQLite(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		snap, err := src.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snap.Close() })
		return snap.(*sqliteSnapshot)
	}
	inGo := begin()
	if inGo.lite == nil {
		t.Fatalf("no liteConn: %s", inGo.liteWhy)
	}
	bySQL := begin()
	bySQL.lite.Close()
	bySQL.lite = nil // database/sql, and every lookup probed in SQL

	for _, table := range []string{models.TableFact, models.TableTurn} {
		got, want := lookupCells(t, inGo, table), lookupCells(t, bySQL, table)
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %d rows in Go, %d by SQL", table, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s row %.40q: %s in Go, %s by SQL", table, id, got[id], w)
			}
		}
	}
	if len(inGo.lookupSets) != 2 {
		t.Errorf("the lookups were not decided in Go: id sets read %d", len(inGo.lookupSets))
	}
	// The edge cases mean what they should (both ways agree, above).
	fact := lookupCells(t, bySQL, models.TableFact)
	for id, want := range map[string]string{
		"found": "0/1", "missing": "1/2", "null-turn": "0/0", "empty": "1/0", "blob": "1/2",
		"long": "0/1", "huge": "0/2", "blob-only-turn": "0/2", "case": "1/2", "int": "0/1", "int-missing": "0/2",
	} {
		if fact[id] != want {
			t.Errorf("fact row %s: session_missing/turn_attribution %s, want %s", id, fact[id], want)
		}
	}
}

// TestLookupsOnlyForPlainTextIDs: the lookups are decided in Go only where
// the looked-up id column compares TEXT as bytes (TEXT affinity, BINARY
// collation), as the scan plan's schema facts read it.
func TestLookupsOnlyForPlainTextIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "types.db")
	decls := map[string]bool{"TEXT": true, "VARCHAR(40)": true, "CLOB": true, "": false, "BLOB": false, "INTEGER": false,
		"TEXT COLLATE NOCASE": false, "TEXT COLLATE RTRIM": false, "TEXT COLLATE BINARY": true, "NUMERIC": false, "CHARINT": false}
	var stmts []string
	names := map[string]string{}
	i := 0
	for decl := range decls {
		i++
		names[decl] = fmt.Sprintf("t%d", i)
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE t%d (id %s)", i, decl))
	}
	testkit.SQLiteExec(t, path, stmts...)
	src, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for decl, want := range decls {
		f, err := (&sqliteProber{snap: snap}).facts(context.Background(), names[decl])
		if err != nil {
			t.Fatal(err)
		}
		if got := f.keyCols["id"]; got != want {
			t.Errorf("id %s: compares as bytes %v, want %v", decl, got, want)
		}
	}
}
