package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestScanPathsAgree: a run as it is made — the scans leave out the joins
// the schema proves empty and take the per-turn and per-session fan-out
// from the message pass, two readers — the same on one reader (the pass,
// then the sessions, then the turns, in turn), and a run that proves
// nothing (every count in SQL, as before the scan plan) write the same
// fact, dimensions, rejects and disclosures, on stores of every shape:
// Kandev's schema in both dialects, a store before the subagent table, and
// one where the plan keeps some joins (a primary key lost with a
// duplicated id; turn ids under NOCASE, so the turns' fan-out is counted
// in SQL while the sessions' comes from the pass).
func TestScanPathsAgree(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) string{
		"fresh-activated":   func(t *testing.T) string { return fixture(t, "fresh-activated.db") },
		"upgraded-backfill": func(t *testing.T) string { return fixture(t, "upgraded-backfill.db") },
		"pre-feature":       func(t *testing.T) string { return fixture(t, "pre-feature.db") },
		"postgres": func(t *testing.T) string {
			_, dsn := pgFixture(t, "upgraded-backfill.pg.sql")
			return dsn
		},
		"keys lost": func(t *testing.T) string {
			path := copyFixture(t, "fresh-activated.db")
			sqliteExec(t, path,
				`CREATE TABLE tasks_copy AS SELECT * FROM tasks`, `DROP TABLE tasks`, `ALTER TABLE tasks_copy RENAME TO tasks`,
				`INSERT INTO tasks SELECT * FROM tasks ORDER BY id LIMIT 1`,
				`CREATE TABLE turns_new (id TEXT COLLATE NOCASE PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL,
					started_at TIMESTAMP NOT NULL, completed_at TIMESTAMP, metadata TEXT, created_at TIMESTAMP, updated_at TIMESTAMP)`,
				`INSERT INTO turns_new SELECT id, task_session_id, task_id, started_at, completed_at, metadata, created_at, updated_at FROM task_session_turns`,
				`DROP TABLE task_session_turns`, `ALTER TABLE turns_new RENAME TO task_session_turns`)
			return path
		},
	}
	queries := []string{
		`SELECT * EXCLUDE (run_id) FROM fact_subagent_context ORDER BY ALL`,
		`SELECT * EXCLUDE (run_id) FROM dim_turn ORDER BY ALL`,
		`SELECT * EXCLUDE (run_id) FROM dim_session ORDER BY ALL`,
		`SELECT * EXCLUDE (run_id) FROM dim_task ORDER BY ALL`,
		`SELECT * EXCLUDE (run_id) FROM dim_workflow_step ORDER BY ALL`,
		`SELECT * EXCLUDE (run_id) FROM rejects ORDER BY ALL`,
		`SELECT rule, count, text FROM disclosures ORDER BY ALL`,
		`SELECT sum(subagents_observed), sum(distinct_tool_calls), sum(live_backfill_overlap), count(*) FILTER (WHERE fanout_completeness = 'complete') FROM dim_turn`,
	}
	for name, store := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			source := store(t)
			read := func(variant string, o Options) [][]string {
				wh := filepath.Join(t.TempDir(), "warehouse")
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				o.Warehouse, o.Allocator = wh, mem
				o.Installations = []Installation{{Name: "paths", Source: source}}
				res, err := Run(context.Background(), o)
				if err != nil {
					t.Fatalf("%s: %v", variant, err)
				}
				for _, out := range res.Outcomes {
					if out.Err != nil {
						t.Fatalf("%s: %v", variant, out.Err)
					}
				}
				mem.AssertSize(t, 0)
				db := duck(t, wh)
				defer db.Close()
				var out [][]string
				for _, q := range queries {
					out = append(out, rowsOf(t, db, q))
				}
				return out
			}
			want := read("as made", Options{})
			if name != "pre-feature" && want[len(want)-1][0] == "0|0|0|0" {
				t.Errorf("nothing counted: %v", want[len(want)-1])
			}
			for variant, o := range map[string]Options{"one reader": {oneReader: true}, "nothing proven": {unproven: true},
				"one reader, nothing proven": {oneReader: true, unproven: true}} {
				got := read(variant, o)
				for i, q := range queries {
					if !slices.Equal(got[i], want[i]) {
						t.Errorf("%s: %s differs:\n%s", variant, q, firstDiff(got[i], want[i]))
					}
				}
			}
		})
	}
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("  row %d of %d/%d:\n  got  %s\n  want %s", i, len(got), len(want), clipRow(g), clipRow(w))
		}
	}
	return ""
}

func clipRow(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}
