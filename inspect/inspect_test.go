package inspect_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"

	"github.com/kandev/kandev-extract/inspect"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/pipeline"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// source is one store of the test: its DSN for the pipeline and its
// database/sql handle for the test's own derivation.
type source struct {
	dsn string
	db  *sql.DB
}

// On the real fixtures, SQLite and PostgreSQL: inspect of a shortfall turn
// names exactly the message tool calls that have no row, and of a
// collision turn both rows and the tool call they share — each derived by
// the test from the source itself.
func TestInspectNamesTheEvidence(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			open := func(name string) source {
				if dialect == "sqlite" {
					p := testkit.Fixture(t, name+".db")
					return source{dsn: p, db: testkit.SourceDB(t, p)}
				}
				c := pgtest.Shared(t)
				dsn := c.DSN(pgtest.NewDatabase(t, c, pgtest.Fixture(t, name+".pg.sql")))
				db, err := sql.Open("pgx", dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return source{dsn: dsn, db: db}
			}
			fresh, upgraded := open("fresh-activated"), open("upgraded-backfill")
			wh := filepath.Join(t.TempDir(), "wh")
			res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{
				{Name: "fresh", Source: fresh.dsn}, {Name: "upgraded", Source: upgraded.dsn}}})
			if err != nil || res.Failed() {
				t.Fatalf("run: %v %+v", err, res.Outcomes)
			}
			db := testkit.Duck(t, wh)
			ctx := context.Background()

			missing := shortfallByTurn(t, upgraded.db)
			if len(missing) == 0 {
				t.Fatal("upgraded-backfill has no shortfall turn: the fixture changed")
			}
			for turn, want := range missing {
				doc, err := inspect.Inspect(ctx, db, inspect.KindTurn, turn, "upgraded")
				if err != nil {
					t.Fatal(err)
				}
				tr := onlyTurn(t, doc)
				if tr.Evidence.MessageToolCallsWithoutRows == nil || !slices.Equal(*tr.Evidence.MessageToolCallsWithoutRows, want) {
					t.Errorf("turn %s: message tool calls without rows %v, want %v", turn, tr.Evidence.MessageToolCallsWithoutRows, want)
				}
				if !slices.Contains(tr.Claim.Reasons, "writer_shortfall") || tr.Claim.Completeness != "lower_bound" {
					t.Errorf("turn %s: claim %+v", turn, tr.Claim)
				}
			}

			collisions := collisionsByTurn(t, fresh.db)
			if len(collisions) == 0 {
				t.Fatal("fresh-activated has no collision: the fixture changed")
			}
			for turn, want := range collisions {
				doc, err := inspect.Inspect(ctx, db, inspect.KindTurn, turn, "fresh")
				if err != nil {
					t.Fatal(err)
				}
				tr := onlyTurn(t, doc)
				if tr.Evidence.Collisions == nil || len(*tr.Evidence.Collisions) != 1 {
					t.Fatalf("turn %s: collisions %v, want %v", turn, tr.Evidence.Collisions, want)
				}
				got := (*tr.Evidence.Collisions)[0]
				slices.Sort(got.SubagentIDs)
				if got.ToolCallID != want.ToolCallID || !slices.Equal(got.SubagentIDs, want.SubagentIDs) {
					t.Errorf("turn %s: collision %+v, want %+v", turn, got, want)
				}
				var rows []string
				for _, s := range tr.Subagents {
					if s.ToolCallID == want.ToolCallID {
						rows = append(rows, s.SubagentID)
					}
				}
				slices.Sort(rows)
				if !slices.Equal(rows, want.SubagentIDs) || !slices.Contains(tr.Claim.Reasons, "rows_beyond_tool_calls") {
					t.Errorf("turn %s: rows of the shared tool call %v, reasons %v", turn, rows, tr.Claim.Reasons)
				}
			}

			// The JSON contract: versioned, and unknown stays null.
			doc, err := inspect.Inspect(ctx, db, inspect.KindInstallation, "fresh", "")
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Format       string
				Installation map[string]json.RawMessage
				Sessions     []map[string]json.RawMessage
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Format != inspect.Format || string(m.Installation["execution_since"]) != `{"raw":null,"parsed":null,"precision":null,"state":"absent"}` {
				t.Errorf("format %q, execution_since %s", m.Format, m.Installation["execution_since"])
			}
			if n := testkit.One(t, fresh.db, `SELECT count(*) FROM task_sessions`); len(m.Sessions) != atoi(t, n) {
				t.Errorf("%d sessions in the installation's document, the store has %s", len(m.Sessions), n)
			}
		})
	}
}

// Not found and ambiguous ids are errors the command turns into exit
// statuses; a unique prefix resolves.
func TestInspectLookups(t *testing.T) {
	t.Parallel()
	store := testkit.Fixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{
		{Name: "a", Source: store}, {Name: "b", Source: testkit.CopyFixture(t, "fresh-activated.db")}}})
	if err != nil || res.Failed() {
		t.Fatalf("run: %v %+v", err, res.Outcomes)
	}
	db := testkit.Duck(t, wh)
	ctx := context.Background()
	turn := testkit.One(t, testkit.SourceDB(t, store), `SELECT min(id) FROM task_session_turns`)

	_, err = inspect.Inspect(ctx, db, inspect.KindTurn, turn, "")
	var amb *inspect.AmbiguousError
	if !errors.As(err, &amb) || strings.Join(amb.Candidates, " ") != "a/"+turn+" b/"+turn {
		t.Errorf("a turn in two installations: %v", err)
	}
	doc, err := inspect.Inspect(ctx, db, inspect.KindTurn, turn[:8], "b")
	if err != nil || doc.Installation.InstallationID != "b" || onlyTurn(t, doc).TurnID != turn {
		t.Errorf("prefix in one installation: %v", err)
	}
	for _, q := range [][3]string{{inspect.KindTurn, "no-such-turn", ""}, {inspect.KindSession, turn, ""}, {inspect.KindInstallation, "c", ""}, {inspect.KindTurn, turn, "c"}} {
		if _, err := inspect.Inspect(ctx, db, q[0], q[1], q[2]); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("inspect %v: %v, want not found", q, err)
		}
	}
	var out strings.Builder
	doc, err = inspect.Inspect(ctx, db, inspect.KindSession, onlySession(t, doc).SessionID, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := inspect.Render(&out, doc, func(s string) string { return s }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"installation a", "capture_since    raw '2026-08-03T15:00:00.123456789Z'", "session " + doc.Sessions[0].SessionID, "turn " + turn} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tree lacks %q:\n%s", want, out.String())
		}
	}
}

func onlySession(t *testing.T, d *inspect.Document) *inspect.Session {
	t.Helper()
	if len(d.Sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(d.Sessions))
	}
	return &d.Sessions[0]
}

func onlyTurn(t *testing.T, d *inspect.Document) *inspect.Turn {
	t.Helper()
	s := onlySession(t, d)
	if len(s.Turns) != 1 {
		t.Fatalf("%d turns, want 1", len(s.Turns))
	}
	return &s.Turns[0]
}

// shortfallByTurn derives writer health's keys from the source: the tool
// calls of subagent-task messages at or after capture_since (with a
// session and a task) that no subagent row of the session observed at or
// after it has, per turn, sorted.
func shortfallByTurn(t *testing.T, db *sql.DB) map[string][]string {
	var raw string
	if err := db.QueryRow(`SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	capture, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]bool{}
	rows := query(t, db, `SELECT task_session_id, tool_call_id, observed_at FROM task_session_subagents`)
	for _, r := range rows {
		if !instant(t, r[2]).Before(capture) {
			seen[[2]string{str(r[0]), str(r[1])}] = true
		}
	}
	out := map[string][]string{}
	for _, r := range query(t, db, `SELECT turn_id, task_session_id, coalesce(task_id, ''), metadata, created_at FROM task_session_messages`) {
		var meta struct {
			ToolCallID string `json:"tool_call_id"`
			Normalized struct {
				Kind string `json:"kind"`
			} `json:"normalized"`
		}
		if json.Unmarshal([]byte(str(r[3])), &meta) != nil || meta.Normalized.Kind != "subagent_task" || meta.ToolCallID == "" ||
			str(r[1]) == "" || str(r[2]) == "" || instant(t, r[4]).Before(capture) || seen[[2]string{str(r[1]), meta.ToolCallID}] {
			continue
		}
		if turn := str(r[0]); !slices.Contains(out[turn], meta.ToolCallID) {
			out[turn] = append(out[turn], meta.ToolCallID)
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// collisionsByTurn derives, per turn, the tool call with more than one
// row of the session and those rows.
func collisionsByTurn(t *testing.T, db *sql.DB) map[string]inspect.Collision {
	byKey := map[[3]string][]string{}
	for _, r := range query(t, db, `SELECT coalesce(turn_id, ''), task_session_id, tool_call_id, id FROM task_session_subagents`) {
		k := [3]string{str(r[0]), str(r[1]), str(r[2])}
		byKey[k] = append(byKey[k], str(r[3]))
	}
	out := map[string]inspect.Collision{}
	for k, ids := range byKey {
		if len(ids) > 1 {
			slices.Sort(ids)
			out[k[0]] = inspect.Collision{ToolCallID: k[2], SubagentIDs: ids}
		}
	}
	return out
}

func query(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// instant reads a source timestamp: a time (PostgreSQL's UTC wall clock,
// or SQLite's driver parse) or Kandev's SQLite text.
func instant(t *testing.T, v any) time.Time {
	t.Helper()
	if tm, ok := v.(time.Time); ok {
		return time.Date(tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), time.UTC).Add(-offset(tm))
	}
	tm, err := time.Parse("2006-01-02 15:04:05.999999999-07:00", str(v))
	if err != nil {
		t.Fatalf("timestamp %q: %v", str(v), err)
	}
	return tm
}

func offset(tm time.Time) time.Duration {
	_, off := tm.Zone()
	return time.Duration(off) * time.Second
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
