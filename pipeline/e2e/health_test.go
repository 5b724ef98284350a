package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
	"github.com/kandev/kandev-extract/transform"
)

// healthOracle computes the writer-health numbers independently of the
// extractor: it reads every message and row, parses instants with the
// standard library and JSON with encoding/json, and takes the set
// differences in Go.
func healthOracle(t *testing.T, db *sql.DB, dialect models.Dialect) (models.HealthCounts, bool) {
	t.Helper()
	instant := func(v any) time.Time {
		switch x := v.(type) {
		case time.Time:
			return time.Date(x.Year(), x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), time.UTC)
		case string:
			for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05"} {
				if tt, err := time.Parse(layout, x); err == nil {
					return tt.UTC()
				}
			}
		}
		t.Fatalf("oracle: cannot read instant %v", v)
		return time.Time{}
	}
	var key string
	if err := db.QueryRow(`SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since'`).Scan(&key); err == sql.ErrNoRows {
		return models.HealthCounts{}, false
	} else if err != nil {
		t.Fatal(err)
	}
	since, err := time.Parse(time.RFC3339Nano, key)
	if err != nil {
		t.Fatal(err)
	}
	cast := func(c string) string {
		if dialect == models.DialectSQLite {
			return "CAST(" + c + " AS TEXT)"
		}
		return c
	}
	expected, accounted, observed := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var c models.HealthCounts
	rows, err := db.Query(`SELECT task_session_id, coalesce(task_id, ''), ` + cast("created_at") + `, metadata FROM task_session_messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var sess, task string
		var created any
		var meta sql.NullString
		if err := rows.Scan(&sess, &task, &created, &meta); err != nil {
			t.Fatal(err)
		}
		if instant(created).Before(since) || !meta.Valid || meta.String == "" || meta.String == "null" {
			continue
		}
		var m struct {
			ToolCallID *string `json:"tool_call_id"`
			Normalized struct {
				Kind string `json:"kind"`
			} `json:"normalized"`
		}
		if !json.Valid([]byte(meta.String)) {
			c.MalformedMetadata++
			continue
		}
		if json.Unmarshal([]byte(meta.String), &m) != nil || m.Normalized.Kind != "subagent_task" {
			continue
		}
		tc := ""
		if m.ToolCallID != nil {
			tc = *m.ToolCallID
		}
		accounted[sess+"|"+tc] = true
		if sess != "" && task != "" && tc != "" {
			expected[sess+"|"+tc] = true
		}
	}
	rows.Close()
	rows, err = db.Query(`SELECT task_session_id, tool_call_id, ` + cast("observed_at") + ` FROM task_session_subagents`)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for rows.Next() {
		var sess, tc string
		var obs any
		if err := rows.Scan(&sess, &tc, &obs); err != nil {
			t.Fatal(err)
		}
		at := instant(obs)
		if at.Before(since) {
			continue
		}
		n++
		observed[sess+"|"+tc] = true
		if c.LastObserved == nil || at.After(*c.LastObserved) {
			c.LastObserved = &at
		}
	}
	rows.Close()
	for k := range expected {
		if !observed[k] {
			c.Shortfall++
		}
	}
	for k := range observed {
		if !accounted[k] {
			c.Excess++
		}
	}
	c.Expected, c.Observed, c.Collisions = int64(len(expected)), int64(len(observed)), n-int64(len(observed))
	return c, true
}

func countsString(c models.HealthCounts) string {
	last := "NULL"
	if c.LastObserved != nil {
		last = c.LastObserved.Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%d|%d|%d|%d|%d|%s|%d", c.Shortfall, c.Excess, c.Expected, c.Observed, c.Collisions, last, c.MalformedMetadata)
}

// healthCase is a store change, in SQL both dialects accept (timestamps
// carry '+00:00', which PostgreSQL's timestamp without time zone ignores).
type healthCase struct {
	name    string
	fixture string // base name: .db for SQLite, .pg.sql for PostgreSQL
	stmts   []string
	status  models.HealthStatus
	check   func(t *testing.T, c models.HealthCounts)
}

const subagentMsg = `INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
	SELECT '%s', task_session_id, %s, id, 'agent', 'Task', 'tool_call',
		'{"normalized":{"kind":"subagent_task","subagent_task":{"status":"started"}},"status":"in_progress","title":"t","tool_call_id":"%s"}',
		'%s', '%s' FROM task_session_turns ORDER BY id LIMIT 1`

func msgAt(id, tc, at string) string {
	return fmt.Sprintf(subagentMsg, id, "task_id", tc, at, at)
}

const subagentRow = `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
	SELECT '%s', task_session_id, task_id, id, '%s', '0a0a0a0a-0000-4000-8000-%012d', 'live', '%s', '%s' FROM task_session_turns ORDER BY id LIMIT 1`

var healthCases = []healthCase{
	{name: "healthy writer", fixture: "fresh-activated", status: models.HealthHealthy,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.Shortfall != 0 || c.Excess != 0 || c.LastObserved == nil {
				t.Errorf("healthy: %s", countsString(c))
			}
		}},
	{name: "banked excess then the writer stops", fixture: "fresh-activated",
		stmts: []string{
			fmt.Sprintf(subagentRow, "banked-1", "toolu_banked_1", 1, "2026-08-15 00:00:01+00:00", "2026-08-15 00:00:01+00:00"),
			fmt.Sprintf(subagentRow, "banked-2", "toolu_banked_2", 2, "2026-08-15 00:00:02+00:00", "2026-08-15 00:00:02+00:00"),
			fmt.Sprintf(subagentRow, "banked-3", "toolu_banked_3", 3, "2026-08-15 00:00:03+00:00", "2026-08-15 00:00:03+00:00"),
			msgAt("missed-1", "toolu_missed_1", "2026-08-20 00:00:00+00:00"),
		},
		status: models.HealthShortfall,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.Shortfall != 1 || c.Excess != 3 {
				t.Errorf("the first missed subagent must show despite 3 banked excess: %s", countsString(c))
			}
		}},
	{name: "two messages describe one subagent", fixture: "fresh-activated",
		stmts: []string{`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at)
			SELECT id || '-dup', task_session_id, task_id, turn_id, author_type, content, type, metadata, created_at, updated_at
			FROM task_session_messages WHERE metadata LIKE '%subagent_task%' ORDER BY id LIMIT 2`},
		status: models.HealthHealthy,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.Shortfall != 0 || c.Excess != 0 {
				t.Errorf("duplicate messages: %s", countsString(c))
			}
		}},
	{name: "AC-2 skipped messages", fixture: "fresh-activated",
		stmts: []string{
			fmt.Sprintf(subagentMsg, "skip-task", "''", "toolu_skip_1", "2026-08-20 00:00:00+00:00", "2026-08-20 00:00:00+00:00"),
			msgAt("skip-tool", "", "2026-08-20 00:00:01+00:00"),
		},
		status: models.HealthHealthy,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.Shortfall != 0 {
				t.Errorf("skipped frames are not a shortfall: %s", countsString(c))
			}
		}},
	{name: "malformed metadata", fixture: "fresh-activated",
		stmts: []string{
			`UPDATE task_session_messages SET metadata = '{not json' WHERE id = (SELECT min(id) FROM task_session_messages WHERE metadata = '{}')`,
			`UPDATE task_session_messages SET metadata = NULL WHERE id = (SELECT max(id) FROM task_session_messages WHERE metadata = '{}')`,
			`UPDATE task_session_messages SET metadata = 'null' WHERE id = (SELECT min(id) FROM task_session_messages WHERE metadata = '{}')`,
		},
		status: models.HealthHealthy,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.MalformedMetadata != 1 || c.Shortfall != 0 {
				t.Errorf("malformed rows: %s", countsString(c))
			}
		}},
	{name: "capture_since absent", fixture: "fresh-activated",
		stmts:  []string{`DELETE FROM kandev_meta WHERE key = 'subagent_context_capture_since'`},
		status: models.HealthNotActivated},
	{name: "rows only before activation, messages since", fixture: "upgraded-backfill",
		stmts:  []string{`DELETE FROM task_session_subagents WHERE source = 'live'`},
		status: models.HealthShortfall,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.LastObserved != nil || c.Shortfall == 0 {
				t.Errorf("only backfill rows: %s", countsString(c))
			}
		}},
	{name: "nothing since activation", fixture: "upgraded-backfill",
		stmts: []string{`DELETE FROM task_session_subagents WHERE source = 'live'`,
			`DELETE FROM task_session_messages WHERE created_at > '2026-11-30 00:00:00+00:00'`},
		status: models.HealthNothingSinceActivation,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.LastObserved != nil || c.Shortfall != 0 {
				t.Errorf("nothing since activation: %s", countsString(c))
			}
		}},
	{name: "message at and one microsecond before capture_since", fixture: "fresh-activated",
		stmts: []string{
			`UPDATE kandev_meta SET value = '2026-08-20T00:00:00.5Z' WHERE key = 'subagent_context_capture_since'`,
			msgAt("at-key", "toolu_at_key", "2026-08-20 00:00:00.5+00:00"),
			msgAt("before-key", "toolu_before_key", "2026-08-20 00:00:00.499999+00:00"),
		},
		status: models.HealthShortfall,
		check: func(t *testing.T, c models.HealthCounts) {
			if c.Shortfall != 1 || c.Expected != 1 {
				t.Errorf("only the message at the key counts: %s", countsString(c))
			}
		}},
}

func TestWriterHealthSQLite(t *testing.T) {
	t.Parallel()
	for _, tc := range healthCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := copyFixture(t, tc.fixture+".db")
			sqliteExec(t, path, tc.stmts...)
			assertHealth(t, tc, path, sourceDB(t, path), models.DialectSQLite)
		})
	}
	// And every real fixture, unchanged.
	for _, fx := range fixtures {
		t.Run("fixture "+fx.file, func(t *testing.T) {
			t.Parallel()
			path := fixture(t, fx.file)
			r, err := pipeline.CheckHealth(context.Background(), path, pipeline.HealthOptions{StaleAfter: neverStale})
			if err != nil {
				t.Fatal(err)
			}
			if fx.shape == models.ShapeAbsent {
				if r.Status != models.HealthFeatureAbsent || r.Evaluated {
					t.Errorf("status = %s", r.Status)
				}
				return
			}
			want, ok := healthOracle(t, sourceDB(t, path), models.DialectSQLite)
			if ok != r.Evaluated {
				t.Fatalf("evaluated = %v, oracle says %v", r.Evaluated, ok)
			}
			if ok && countsString(r.Health.Counts) != countsString(want) {
				t.Errorf("counts = %s, oracle %s", countsString(r.Health.Counts), countsString(want))
			}
		})
	}
}

func TestWriterHealthPostgres(t *testing.T) {
	t.Parallel()
	for _, tc := range healthCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, dsn := pgFixture(t, tc.fixture+".pg.sql")
			pgExec(t, dsn, tc.stmts...)
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			assertHealth(t, tc, dsn, db, models.DialectPostgres)
		})
	}
}

func assertHealth(t *testing.T, tc healthCase, source string, db *sql.DB, dialect models.Dialect) {
	t.Helper()
	r, err := pipeline.CheckHealth(context.Background(), source, pipeline.HealthOptions{StaleAfter: neverStale})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != tc.status {
		t.Errorf("status = %s, want %s (%s)", r.Status, tc.status, r.Reason)
	}
	want, ok := healthOracle(t, db, dialect)
	if ok != r.Evaluated {
		t.Fatalf("evaluated = %v, oracle says %v", r.Evaluated, ok)
	}
	if ok && countsString(r.Health.Counts) != countsString(want) {
		t.Errorf("counts = %s, oracle %s", countsString(r.Health.Counts), countsString(want))
	}
	if tc.check != nil {
		tc.check(t, r.Health.Counts)
	}
	// The run's message pass (one read of the messages, evidence.ReadMessages)
	// counts what the comparison counts, case by case.
	if r.Evaluated {
		if got := messagePassCounts(t, source); countsString(got) != countsString(r.Health.Counts) {
			t.Errorf("message pass counts = %s, the comparison's %s", countsString(got), countsString(r.Health.Counts))
		}
	}
	// The run records the same evaluation; counts are NULL when not run.
	// A whole run per verdict and dialect (the message pass's counts are
	// compared above for every case).
	if _, done := recordedVerdicts.LoadOrStore(string(dialect)+"|"+string(r.Status), true); done {
		return
	}
	wh, _ := extractTo(t, source, "h")
	row := one(t, duck(t, wh), `SELECT status || '|' || evaluated || '|' || coalesce(shortfall::VARCHAR, 'NULL') || '|' || coalesce(excess::VARCHAR, 'NULL') FROM writer_health`)
	wantRow := fmt.Sprintf("%s|%v|NULL|NULL", r.Status, r.Evaluated)
	if r.Evaluated {
		wantRow = fmt.Sprintf("%s|true|%d|%d", r.Status, r.Health.Counts.Shortfall, r.Health.Counts.Excess)
	}
	if row != wantRow {
		t.Errorf("writer_health view = %s, want %s", row, wantRow)
	}
	if !strings.Contains(one(t, duck(t, wh), `SELECT text FROM disclosures WHERE rule = 'writer_health'`), string(r.Status)) {
		t.Error("writer_health disclosure missing")
	}
}

// recordedVerdicts are the verdicts, by dialect, a whole run has recorded
// in a test (assertHealth).
var recordedVerdicts sync.Map

// messagePassCounts runs the run's message pass on a source's snapshot and
// returns its writer-health counts.
func messagePassCounts(t *testing.T, source string) models.HealthCounts {
	t.Helper()
	ctx := context.Background()
	src, err := extract.Open(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	meta, err := snap.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := transform.Installation(meta, transform.Shape(schema))
	since := state.CaptureSince.At
	_, counts, err := evidence.ReadMessages(ctx, snap, &since, state.Shape != models.ShapeAbsent, &since)
	if err != nil {
		t.Fatal(err)
	}
	return *counts
}

// neverStale keeps the fixtures' months-old rows from making a healthy
// writer stale, where a test compares with the warehouse's status.
const neverStale = 100 * 365 * 24 * time.Hour
