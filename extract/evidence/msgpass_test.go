package evidence_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/extract/internal/sqlitedrv"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/storegen"
	"github.com/kandev/kandev-extract/transform"
)

// The message pass's tests read borrowed values poisoned (see
// sqlitedrv.PoisonBorrowed): a value the pass kept beyond its row would
// read as 0xa5 bytes, and its comparisons with SQL
// (TestMessagePassMatchesSQL and the others) would fail instead of passing
// by luck.
func init() { sqlitedrv.PoisonBorrowed = true }

// compareMessagePass reads a store's message evidence and writer health
// both ways — the SQL of evidence.ReadMessageEvidence and evidence.HealthCounts, and the
// message pass — and requires the same results.
func compareMessagePass(t *testing.T, path string) (evidence.MessageEvidence, *models.HealthCounts) {
	t.Helper()
	src, err := extract.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	return compareMessagePassOn(t, src)
}

// beginWithState begins a snapshot of src (the caller closes it) and
// reads the installation state a run reads: capture_since (nil when not
// a usable instant) and whether task_session_subagents exists.
func beginWithState(t *testing.T, src models.Source) (models.Snapshot, models.InstallationState, *time.Time, bool) {
	t.Helper()
	ctx := context.Background()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := snap.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := transform.Installation(meta, transform.Shape(schema))
	var since *time.Time
	if state.CaptureSince.Valid() {
		at := state.CaptureSince.At
		since = &at
	}
	return snap, state, since, state.Shape != models.ShapeAbsent
}

func compareMessagePassOn(t *testing.T, src models.Source) (evidence.MessageEvidence, *models.HealthCounts) {
	t.Helper()
	ctx := context.Background()
	snap, state, since, subagents := beginWithState(t, src)
	defer snap.Close()
	health, _ := transform.HealthPlan(state)

	want, err := evidence.ReadMessageEvidence(ctx, snap, since, subagents)
	if err != nil {
		t.Fatal(err)
	}
	var wantCounts *models.HealthCounts
	if health {
		c, err := evidence.HealthCounts(ctx, snap, *since)
		if err != nil {
			t.Fatal(err)
		}
		wantCounts = &c
	}
	var healthSince *time.Time
	if health {
		at := state.CaptureSince.At
		healthSince = &at
	}
	// As a run reads: the plan, then the pass with the fan-out it allows;
	// the evidence and health must not depend on it.
	plan, err := extract.PlanScans(ctx, snap, subagents)
	if err != nil {
		t.Fatal(err)
	}
	got, gotCounts, err := evidence.ReadMessagesAndFanout(ctx, snap, since, subagents, healthSince, plan)
	if err != nil {
		t.Fatal(err)
	}
	plain, plainCounts, err := evidence.ReadMessages(ctx, snap, since, subagents, healthSince)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Fanout != nil {
		t.Error("evidence.ReadMessages counted the fan-out")
	}
	if !reflect.DeepEqual(plain.Turns, got.Turns) || !reflect.DeepEqual(plain.Sessions, got.Sessions) || !reflect.DeepEqual(plain.Missing, got.Missing) ||
		!reflect.DeepEqual(plainCounts, gotCounts) {
		t.Error("the message pass's evidence or health differs when it also counts the fan-out")
	}
	if subagents && (plan.PassFanout(models.SourceTurns) || plan.PassFanout(models.SourceSessions)) {
		if got.Fanout == nil {
			t.Error("the pass did not count the fan-out the plan allows")
		}
	} else if got.Fanout != nil {
		t.Error("the pass counted a fan-out the plan does not allow")
	}
	compareFanout(t, snap, plan, got.Fanout, subagents)
	if !reflect.DeepEqual(got.Turns, want.Turns) {
		t.Errorf("per-turn evidence differs:\n%s", mapDiff(got.Turns, want.Turns))
	}
	if !reflect.DeepEqual(got.Sessions, want.Sessions) {
		t.Errorf("per-session evidence differs:\n%s", mapDiff(got.Sessions, want.Sessions))
	}
	sortMissing := func(m []models.MissingRow) []models.MissingRow {
		m = slices.Clone(m)
		slices.SortFunc(m, func(a, b models.MissingRow) int {
			return strings.Compare(a.TurnID+"\x00"+a.SessionID+"\x00"+a.ToolCallID, b.TurnID+"\x00"+b.SessionID+"\x00"+b.ToolCallID)
		})
		return m
	}
	if g, w := sortMissing(got.Missing), sortMissing(want.Missing); !reflect.DeepEqual(g, w) {
		t.Errorf("shortfall keys differ: got %d %v, want %d %v", len(g), clip(g), len(w), clip(w))
	}
	if got.MessagesRead != want.MessagesRead {
		t.Errorf("messages read %d, want %d", got.MessagesRead, want.MessagesRead)
	}
	if (gotCounts == nil) != (wantCounts == nil) {
		t.Fatalf("health counts %v, want %v", gotCounts, wantCounts)
	}
	if gotCounts != nil {
		g, w := *gotCounts, *wantCounts
		if (g.LastObserved == nil) != (w.LastObserved == nil) || (g.LastObserved != nil && !g.LastObserved.Equal(*w.LastObserved)) {
			t.Errorf("last observed %v, want %v", g.LastObserved, w.LastObserved)
		}
		g.LastObserved, w.LastObserved = nil, nil
		if g != w {
			t.Errorf("health counts %+v, want %+v", g, w)
		}
	}
	return got, gotCounts
}

func clip[T any](s []T) []T {
	if len(s) > 5 {
		return s[:5]
	}
	return s
}

func mapDiff(got, want map[string]models.MessageCounts) string {
	var b strings.Builder
	n := 0
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			fmt.Fprintf(&b, "  %q: got %+v (present %v), want %+v\n", k, g, ok, w)
			n++
		}
		if n > 8 {
			break
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && n <= 8 {
			fmt.Fprintf(&b, "  %q: got %+v, not wanted\n", k, g)
			n++
		}
	}
	fmt.Fprintf(&b, "  (%d entries, want %d)", len(got), len(want))
	return b.String()
}

// TestMessagePassMatchesSQL: every real fixture.
func TestMessagePassMatchesSQL(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.RepoRoot(t), "testdata", "kandev", "*.db"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ev, c := compareMessagePass(t, f)
			t.Logf("%d turns, %d sessions with evidence, %d shortfall keys, health %+v", len(ev.Turns), len(ev.Sessions), len(ev.Missing), c)
		})
	}
}

// TestMessagePassHostile: the edge cases of the SQL the pass replaces —
// value types, empty and NULL ids, ids over the read bound, malformed and
// non-standard metadata, escaped kinds, duplicate keys, shortfall and
// excess, colliding concatenations — give the same results both ways.
func TestMessagePassHostile(t *testing.T) {
	path := testkit.CopyFixture(t, "fresh-activated.db")
	db := testkit.SourceDB(t, path)
	var sess, task, turn, since string
	if err := db.QueryRow(`SELECT task_session_id, task_id, turn_id FROM task_session_messages ORDER BY created_at DESC LIMIT 1`).Scan(&sess, &task, &turn); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since'`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	db.Close()
	after := "2026-08-20 10:00:00.5+00:00"
	before := "2026-07-01 10:00:00+00:00"
	ins := func(id, sessV, taskV, turnV, meta, created string) string {
		return fmt.Sprintf(`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
			VALUES ('%s', %s, %s, %s, 'x', %s, %s, '2026-08-20 10:00:00+00:00')`, id, sessV, taskV, turnV, meta, created)
	}
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	kind := func(tc string) string {
		return q(`{"normalized":{"kind":"subagent_task"},"tool_call_id":` + tc + `}`)
	}
	big := "printf('%.*c', 1100000, 'z')"
	sub := func(id, sessV, turnV, tc, observed string) string {
		return fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
			VALUES ('%s', %s, %s, %s, %s, '%s', 'live', %s, '2026-08-20 10:00:00+00:00')`, id, sessV, q(task), turnV, tc, id, observed)
	}
	stmts := []string{
		// Malformed, at or after capture_since and before it.
		ins("h1", q(sess), q(task), q(turn), q(`{"normalized":`), q(after)),
		ins("h2", q(sess), q(task), q(turn), q(`{"normalized":{"kind":"subagent_task"},}`), q(after)), // JSON5: not valid
		ins("h3", q(sess), q(task), q(turn), q(`{bad`), q(before)),
		ins("h4", q(sess), q(task), q(turn), "''", q(after)),
		ins("h5", q(sess), q(task), q(turn), "'null'", q(after)),
		ins("h6", q(sess), q(task), q(turn), "CAST('{\"normalized\":{\"kind\":\"subagent_task\"},\"tool_call_id\":\"blobmeta\"}' AS BLOB)", q(after)),
		ins("h7", q(sess), q(task), q(turn), q(`{"normalized":{"kind":"subagent_task"},"tool_call_id":"tab`+"\t"+`bad"}`), q(after)),
		// Subagent-task messages with odd tool call ids and kinds.
		ins("h10", q(sess), q(task), q(turn), kind(`42`), q(after)),
		ins("h11", q(sess), q(task), q(turn), kind(`4.5`), q(after)),
		ins("h12", q(sess), q(task), q(turn), kind(`{"a":1}`), q(after)),
		ins("h13", q(sess), q(task), q(turn), kind(`""`), q(after)),
		ins("h14", q(sess), q(task), q(turn), kind(`null`), q(after)),
		ins("h15", q(sess), q(task), q(turn), q(`{"normalized":{"kind":"subagent\u005ftask"},"tool_call_id":"escaped-kind"}`), q(after)),
		ins("h16", q(sess), q(task), q(turn), q(`{"normalized":{"kind":"subagent_task"},"tool_call_id":"dup-first","tool_call_id":"dup-second"}`), q(after)),
		ins("h17", q(sess), q(task), q(turn), q(`{"tool_call_id":"no-kind","normalized":{"kind":"other"}}`), q(after)),
		ins("h18", q(sess), q(task), q(turn), kind(`"shortfall-1"`), q(after)),
		ins("h19", q(sess), q(task), q(turn), kind(`"shortfall-1"`), q(after)),
		ins("h20", q(sess), q(task), q(turn), kind(`"old-one"`), q(before)),
		ins("h21", q(sess), q(task), q(turn), kind(`"bad-created"`), q("not a time")),
		ins("h22", q(sess), q(task), q(turn), kind(`"int-created"`), "12345"),
		// Odd ids (task_session_id and turn_id are NOT NULL in Kandev's
		// schema; one over the read bound is read as NULL).
		ins("h31", "''", q(task), q(turn), kind(`"empty-session"`), q(after)),
		ins("h32", q(sess), "''", q(turn), kind(`"empty-task"`), q(after)),
		ins("h33", q(sess), "NULL", q(turn), kind(`"null-task"`), q(after)),
		ins("h34", q(sess), q(task), "''", kind(`"empty-turn"`), q(after)),
		ins("h36", q(sess), q(task), "CAST('blobturn' AS BLOB)", kind(`"blob-turn"`), q(after)),
		ins("h37", q(sess), q(task), q("blobturn"), kind(`"text-turn"`), q(after)),
		ins("h38", "CAST("+q(sess)+" AS BLOB)", q(task), q(turn), kind(`"blob-session"`), q(after)),
		ins("h39", big, q(task), q(turn), kind(`"overlong-session"`), q(after)),
		ins("h40", q(sess), big, q(turn), kind(`"overlong-task"`), q(after)),
		ins("h41", q(sess), q(task), big, kind(`"overlong-turn"`), q(after)),
		ins("h42", q("a:b"), q(task), q(turn), kind(`"c"`), q(after)),
		ins("h43", q("other-session"), q(task), q("other-turn"), kind(`"in-turn-only"`), q(after)),
		// Subagent rows: excess, duplicates, odd types, colliding concatenations.
		sub("s1", q(sess), q(turn), q("excess-1"), q(after)),
		sub("s2", q(sess), q(turn), q("excess-1"), q(after)),
		sub("s3", q(sess), q(turn), "CAST('42' AS BLOB)", q(after)),
		sub("s4", q(sess), q(turn), q("42"), q(after)),
		sub("s5", q("a"), q(turn), q("b:c"), q(after)),
		sub("s6", q("a:b"), q(turn), q("c"), q(after)),
		sub("s7", q(sess), q(turn), "''", q(after)),
		sub("s8", q(sess), "NULL", q("no-turn"), q(after)),
		sub("s9", q(sess), q(turn), q("before-capture"), q(before)),
		sub("s10", q(sess), q(turn), q("bad-observed"), q("soon")),
		sub("s11", q(sess), q(turn), big, q(after)),
		sub("s12", q(sess), q("other-turn"), q("in-turn-only"), q(before)),
		sub("s13", q("other-session"), q("blobturn"), q("text-turn"), q(after)),
	}
	testkit.SQLiteExec(t, path, stmts...)
	ev, c := compareMessagePass(t, path)
	if c == nil || c.Shortfall == 0 || c.Excess == 0 || c.MalformedMetadata == 0 || c.Collisions == 0 || len(ev.Missing) == 0 {
		t.Errorf("the hostile store does not exercise every count: %+v, %d shortfall keys", c, len(ev.Missing))
	}
}

// TestMessagePassGenerated: a generated store (storegen), thousands of rows.
func TestMessagePassGenerated(t *testing.T) {
	path := os.Getenv("KANDEV_MSGPASS_STORE")
	if path == "" {
		path = filepath.Join(t.TempDir(), "gen.db")
		if _, err := storegen.Generate(context.Background(), path, storegen.LargeOptions(0.003)); err != nil {
			t.Fatal(err)
		}
	}
	ev, c := compareMessagePass(t, path)
	t.Logf("%d turns, %d sessions, %d shortfall keys, health %+v", len(ev.Turns), len(ev.Sessions), len(ev.Missing), c)
}

// BenchmarkMessagePass reads the message evidence and writer health of
// $KANDEV_BENCH_STORE (e.g. a store `make bench` cached under .bench/) in
// one pass; -cpuprofile shows where the pass spends.
func BenchmarkMessagePass(b *testing.B) {
	path := os.Getenv("KANDEV_BENCH_STORE")
	if path == "" {
		b.Skip("set KANDEV_BENCH_STORE")
	}
	defer func(p bool) { sqlitedrv.PoisonBorrowed = p }(sqlitedrv.PoisonBorrowed)
	sqlitedrv.PoisonBorrowed = false // as a run reads
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		src, err := extract.OpenSQLite(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		snap, err := src.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		meta, _ := snap.Meta(ctx)
		schema, _ := snap.SubagentSchema(ctx)
		state := transform.Installation(meta, transform.Shape(schema))
		at := state.CaptureSince.At
		ev, c, err := evidence.ReadMessages(ctx, snap, &at, true, &at)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(ev.MessagesRead), "messages")
		_ = c
		snap.Close()
		src.Close()
	}
}

// TestMessagePassPostgres: the PostgreSQL fixtures, and one with the edge
// cases PostgreSQL can hold — metadata that is not JSON (the first try
// fails and the pass reads again without it), over the read bound,
// numbers and objects as tool call ids, duplicate keys (jsonb keeps the
// last), shortfall, excess and colliding concatenations.
func TestMessagePassPostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	for _, f := range []string{"fresh-activated.pg.sql", "upgraded-backfill.pg.sql"} {
		t.Run(f, func(t *testing.T) {
			db := pgtest.NewDatabase(t, c, testkit.Fixture(t, f))
			src, err := extract.OpenPostgres(ctx, c.DSN(db), extract.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			compareMessagePassOn(t, src)
		})
	}
	t.Run("hostile", func(t *testing.T) {
		db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
		var stmts []string
		sess, task, turn := "(SELECT task_session_id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)",
			"(SELECT task_id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)",
			"(SELECT turn_id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)"
		after, before := "'2026-08-20 10:00:00.5'", "'2026-07-01 10:00:00'"
		ins := func(id, s, k, tu, meta, created string) {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, content, metadata, created_at, updated_at)
				VALUES ('%s', %s, %s, %s, 'x', %s, %s, '2026-08-20 10:00:00')`, id, s, k, tu, meta, created))
		}
		kind := func(tc string) string { return `'{"normalized":{"kind":"subagent_task"},"tool_call_id":` + tc + `}'` }
		ins("p1", sess, task, turn, `'{"normalized":'`, after)
		ins("p2", sess, task, turn, `'{bad'`, before)
		ins("p3", sess, task, turn, `'{"normalized":{"kind":"subagent_task"},"pad":"' || repeat('p', 1100000) || '"}'`, after)
		ins("p4", sess, task, turn, kind(`42`), after)
		ins("p5", sess, task, turn, kind(`{"b": [1, 2], "a": "x"}`), after)
		ins("p6", sess, task, turn, kind(`"shortfall-1"`), after)
		ins("p7", sess, task, turn, kind(`"old"`), before)
		ins("p8", sess, task, turn, `'{"normalized":{"kind":"other","kind":"subagent_task"},"tool_call_id":"dup-a","tool_call_id":"dup-b"}'`, after)
		ins("p9", sess, "''", turn, kind(`"empty-task"`), after)
		ins("p10", "'a:b'", task, "'t-other'", kind(`"c"`), after)
		ins("p11", sess, task, turn, kind(`""`), after)
		ins("p12", sess, task, turn, `'null'`, after)
		ins("p13", sess, task, turn, `''`, after)
		sub := func(id, s, tu, tc, observed string) {
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
				VALUES ('%s', %s, %s, %s, %s, '%s', 'live', %s, '2026-08-20 10:00:00')`, id, s, task, tu, tc, id, observed))
		}
		sub("q1", sess, turn, "'excess-1'", after)
		sub("q2", sess, turn, "'excess-1'", after)
		sub("q3", sess, turn, "'42'", after)
		sub("q4", "'a'", turn, "'b:c'", after)
		sub("q5", "'a:b'", turn, "'c'", after)
		sub("q6", sess, "NULL", "'no-turn'", after)
		sub("q7", sess, turn, "'before'", before)
		// Foreign keys off for this session: a row of a session that does
		// not exist is part of the hostile store.
		if err := c.Exec(ctx, db, "SET session_replication_role = replica;\n"+strings.Join(stmts, ";\n")); err != nil {
			t.Fatal(err)
		}
		src, err := extract.OpenPostgres(ctx, c.DSN(db), extract.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		ev, h := compareMessagePassOn(t, src)
		if h == nil || h.Shortfall == 0 || h.Excess == 0 || h.MalformedMetadata < 2 || h.Collisions == 0 || len(ev.Missing) == 0 || ev.Malformed == 0 {
			t.Errorf("the hostile store does not exercise every count: %+v, %d shortfall keys, %d malformed", h, len(ev.Missing), ev.Malformed)
		}
	})
}

// TestMessagePassFanoutGivenUp: when the fan-out stops counting midway
// (more rows than its 32-bit counts hold, here a limit lowered to reach
// it), the tool calls it kept until then still reach the evidence, which
// is the same as without the fan-out; and no fan-out is returned.
func TestMessagePassFanoutGivenUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gen.db")
	if _, err := storegen.Generate(context.Background(), path, storegen.LargeOptions(0.001)); err != nil {
		t.Fatal(err)
	}
	// Subagent rows whose tool calls no message names, in turns and
	// sessions that messages name.
	testkit.SQLiteExec(t, path,
		`CREATE TEMP TABLE x AS SELECT * FROM task_session_subagents WHERE tool_call_id <> '' LIMIT 7`,
		`UPDATE x SET id = id || '-only', tool_call_id = 'only-' || tool_call_id`,
		`INSERT INTO task_session_subagents SELECT * FROM x`)
	db := testkit.SourceDB(t, path)
	src, err := extract.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := context.Background()
	snap, state, since, subagents := beginWithState(t, src)
	defer snap.Close()
	health, _ := transform.HealthPlan(state)
	var healthSince *time.Time
	if health {
		healthSince = since
	}
	plan, err := extract.PlanScans(ctx, snap, subagents)
	if err != nil {
		t.Fatal(err)
	}
	plain, plainCounts, err := evidence.ReadMessages(ctx, snap, since, subagents, healthSince)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	if err := db.QueryRow(`SELECT count(*) FROM task_session_subagents`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []uint64{1, uint64(rows) / 2, uint64(rows)} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			old := *evidence.FanoutRowLimit
			*evidence.FanoutRowLimit = limit
			defer func() { *evidence.FanoutRowLimit = old }()
			got, gotCounts, err := evidence.ReadMessagesAndFanout(ctx, snap, since, subagents, healthSince, plan)
			if err != nil {
				t.Fatal(err)
			}
			if got.Fanout != nil {
				t.Error("a fan-out was returned after it stopped counting")
			}
			if !reflect.DeepEqual(plain.Turns, got.Turns) {
				t.Errorf("per-turn evidence differs:\n%s", mapDiff(got.Turns, plain.Turns))
			}
			if !reflect.DeepEqual(plain.Sessions, got.Sessions) {
				t.Errorf("per-session evidence differs:\n%s", mapDiff(got.Sessions, plain.Sessions))
			}
			if !reflect.DeepEqual(plainCounts, gotCounts) {
				t.Errorf("health %+v, want %+v", gotCounts, plainCounts)
			}
		})
	}
	var only [2]int
	for i, m := range []map[string]models.MessageCounts{plain.Turns, plain.Sessions} {
		for _, c := range m {
			if c.LowerBound > c.Expected {
				only[i]++
			}
		}
	}
	if only[0] == 0 || only[1] == 0 {
		t.Fatalf("turns, sessions with a tool call that no message names: %v; the test proves nothing", only)
	}
}
