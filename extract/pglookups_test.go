package extract

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// pgLookupCells scans table on snap and returns, per row id, the values
// (and Go types) of its lookup columns.
func pgLookupCells(t *testing.T, snap *pgSnapshot, table string) map[string]string {
	t.Helper()
	spec := Spec(models.MustTable(table), true)
	id, sm, ta := spec.Column("id"), spec.Column("session_missing"), spec.Column("turn_attribution")
	out := map[string]string{}
	err := snap.Scan(context.Background(), spec, func(row []any) error {
		v := fmt.Sprintf("%v", row[sm])
		if ta >= 0 {
			v += fmt.Sprintf("/%v %T %T", row[ta], row[sm], row[ta])
		}
		out[fmt.Sprint(row[id])] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPGLookupsInGoMatchSQL: on PostgreSQL, session_missing and
// turn_attribution decided in Go from the ids read beforehand equal the
// server's per-row EXISTS probes (the same values, of the same Go type),
// on keys of every kind: found, missing, NULL, empty, over the 256 bytes
// the scan reads (found and not), a case difference, trailing
// spaces, non-ASCII text.
func TestPGLookupsInGoMatchSQL(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
	conn, err := c.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var sess, task, turn string
	if err := conn.QueryRow(ctx, `SELECT task_session_id, task_id, id FROM task_session_turns LIMIT 1`).Scan(&sess, &task, &turn); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	// (A key over the 1 MiB bound cannot be stored here: the indexes on
	// the key columns refuse an entry over 8 kB.)
	long, longer := "repeat('L', 300)", "repeat('M', 2000)"
	copyRow := func(table, id string) string {
		return fmt.Sprintf(`CREATE TEMP TABLE c AS SELECT * FROM %[1]s LIMIT 1; UPDATE c SET id = %[2]s; INSERT INTO %[1]s SELECT * FROM c; DROP TABLE c;`, table, id)
	}
	sub := func(id, sessV, turnV string) string {
		return fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
			VALUES ('%s', %s, %s, %s, '%s', 'x', 'live', '2026-08-20 10:00:00', '2026-08-20 10:00:00');`, id, sessV, q(task), turnV, id)
	}
	stmts := []string{`SET session_replication_role = replica;`,
		copyRow("task_sessions", long), copyRow("task_session_turns", long),
		copyRow("task_sessions", q("sé ß")), copyRow("task_session_turns", q("tü ")),
		sub("found", q(sess), q(turn)),
		sub("missing", q("no-such-session"), q("no-such-turn")),
		sub("null-turn", q(sess), "NULL"),
		sub("empty", q(""), q("")),
		sub("long", long, long),
		sub("longer", longer, longer),
		sub("case", q(strings.ToUpper(sess)), q(strings.ToUpper(turn))),
		sub("spaces", q(sess+" "), q(turn+" ")),
		sub("utf8", q("sé ß"), q("tü ")),
		sub("utf8-nfd", q("se\u0301 ß"), q("tu\u0308 ")),
	}
	if err := c.Exec(ctx, db, strings.Join(stmts, "\n")); err != nil {
		t.Fatal(err)
	}
	begin := func() *pgSnapshot {
		src, err := OpenPostgres(ctx, c.DSN(db), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { snap.Close() })
		return snap.(*pgSnapshot)
	}
	inGo, bySQL := begin(), begin()
	bySQL.lookupsInSQL = true
	for _, table := range []string{models.TableFact, models.TableTurn} {
		got, want := pgLookupCells(t, inGo, table), pgLookupCells(t, bySQL, table)
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %d rows in Go, %d by SQL", table, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s row %.40q: %s in Go, %s by SQL", table, id, got[id], w)
			}
		}
	}
	if inGo.lookupIDsRead != 3 || bySQL.lookupIDsRead != 0 {
		t.Errorf("id sets read: %d in Go (want 3: two for the fact, one for the turns), %d by SQL (want 0)", inGo.lookupIDsRead, bySQL.lookupIDsRead)
	}
	fact := pgLookupCells(t, bySQL, models.TableFact)
	for id, want := range map[string]string{
		"found": "0/1", "missing": "1/2", "null-turn": "0/0", "empty": "1/0", "long": "0/1", "longer": "1/2",
		"case": "1/2", "spaces": "1/2", "utf8": "0/1", "utf8-nfd": "1/2",
	} {
		if got, _, _ := strings.Cut(fact[id], " "); got != want {
			t.Errorf("fact row %s: session_missing/turn_attribution %s, want %s", id, fact[id], want)
		}
	}
}

// TestPGLookupsOnlyWhereBytesCompare: the lookups are decided in Go only
// where the key and the id compare as bytes — both text or varchar, under
// one deterministic collation — as the scan plan's schema facts read it.
func TestPGLookupsOnlyWhereBytesCompare(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, "")
	cases := map[string]struct {
		id, key string
		want    bool
	}{
		"text":             {"text", "text", true},
		"varchar":          {"varchar(40)", "text", true},
		"both C":           {`text COLLATE "C"`, `varchar COLLATE "C"`, true},
		"C and default":    {`text COLLATE "C"`, "text", false},
		"bpchar":           {"char(40)", "text", false},
		"uuid":             {"uuid", "uuid", false},
		"integer":          {"integer", "integer", false},
		"key bpchar":       {"text", "char(40)", false},
		"nondeterministic": {`text COLLATE kx_ci`, `text COLLATE kx_ci`, false},
	}
	stmts := []string{}
	var icu bool
	if err := c.Exec(ctx, db, `CREATE COLLATION kx_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`); err == nil {
		icu = true
	}
	i := 0
	names := map[string]int{}
	for name, tc := range cases {
		if strings.Contains(tc.id, "kx_ci") && !icu {
			continue
		}
		i++
		names[name] = i
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE ids%d (id %s); CREATE TABLE keys%d (k %s);`, i, tc.id, i, tc.key))
	}
	if err := c.Exec(ctx, db, strings.Join(stmts, "\n")); err != nil {
		t.Fatal(err)
	}
	src, err := OpenPostgres(ctx, c.DSN(db), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	s, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := s.(*pgSnapshot)
	for name, n := range names {
		got, err := snap.comparesAsBytes(ctx, fmt.Sprintf("keys%d", n), "k", fmt.Sprintf("ids%d", n))
		if err != nil {
			t.Fatal(err)
		}
		if got != cases[name].want {
			t.Errorf("%s: compares as bytes %v, want %v", name, got, cases[name].want)
		}
	}
}

// TestIDHashes: the bucketed sorted set answers as a map of the same ids
// does, empty or not.
func TestIDHashes(t *testing.T) {
	for _, n := range []int{0, 1, 7, 70000} {
		var keys []hashkey.Key
		in := map[string]bool{}
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("id-%d", i*2)
			keys = append(keys, hashkey.String(id))
			in[id] = true
		}
		set := newIDHashes(keys)
		for i := 0; i < 2*n+10; i++ {
			id := fmt.Sprintf("id-%d", i)
			if set.has(id) != in[id] {
				t.Fatalf("n=%d: has(%s) = %v", n, id, !in[id])
			}
		}
	}
}
