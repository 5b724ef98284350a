package e2e_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

// Values of the analyst views (views_analyst.go) on the real Kandev
// fixtures, against answers derived independently: direct SQL on the
// source, timestamps parsed here with the standard library, or stores
// changed with plain SQL to hold a known shape.

// TestSubagentNesting builds a known forest on a copy of a real store: the
// fixture's one nested subagent (N, parent P), a grandchild of it, an orphan
// whose parent was never captured with a child of its own, and a parent
// tool call shared by two executions with one child in each execution and
// one 'unknown' child.
func TestSubagentNesting(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	src := sourceDB(t, path)
	np := strings.Split(one(t, src, `SELECT c.id || '|' || p.id || '|' || c.tool_call_id FROM task_session_subagents c
		JOIN task_session_subagents p ON p.task_session_id = c.task_session_id AND p.tool_call_id = c.parent_tool_call_id`), "|")
	n, p, nTool := np[0], np[1], np[2]
	ins := func(id, tool, exec, parent string) string {
		par := "NULL"
		if parent != "" {
			par = "'" + parent + "'"
		}
		return `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
				parent_tool_call_id, subagent_type, source, observed_at, updated_at)
			SELECT '` + id + `', task_session_id, task_id, turn_id, '` + tool + `', '` + exec + `', ` + par + `, 'Explore', 'live',
				'2026-08-10 10:00:00+00:00', '2026-08-10 10:00:00+00:00' FROM task_session_subagents WHERE id = '` + n + `'`
	}
	sqliteExec(t, path,
		ins("g", "toolu_g", "exec-g", nTool),           // grandchild of P
		ins("o", "toolu_o", "exec-o", "toolu_missing"), // parent never captured
		ins("h", "toolu_h", "exec-h", "toolu_o"),       // child of the orphan
		ins("d1", "toolu_dup", "exec-a", ""),           // one tool call id,
		ins("d2", "toolu_dup", "exec-b", ""),           // two executions
		ins("ca", "toolu_ca", "exec-a", "toolu_dup"),   // same execution as d1
		ins("cu", "toolu_cu", "unknown", "toolu_dup"),  // the sentinel matches neither
	)
	wh, _ := extractTo(t, path, "nest")
	db := duck(t, wh)
	got := rowsOf(t, db, `SELECT subagent_id, coalesce(parent_subagent_id, 'NULL'), parent_resolution, parent_candidates,
		nesting_depth, nesting_depth_completeness FROM subagent_nesting`)
	want := []string{
		n + "|" + p + "|resolved|1|1|exact",
		"ca|d1|resolved|2|1|exact",
		"cu|NULL|ambiguous|2|1|lower_bound",
		"g|" + n + "|resolved|1|2|exact",
		"h|o|resolved|1|2|lower_bound",
		"o|NULL|parent_not_observed|0|1|lower_bound",
	}
	sort.Strings(want)
	equalSets(t, "nesting", got, want)
	rows := one(t, src, `SELECT count(*) FROM task_session_subagents`)
	equalSets(t, "nesting summary", rowsOf(t, db, `SELECT source, subagents, nested_subagents, parents_resolved, parents_not_observed,
		parents_ambiguous, spawning_subagents, max_nesting_depth FROM subagent_nesting_summary`),
		[]string{"live|" + rows + "|6|4|1|1|4|2"})
}

// TestSubagentNestingNone: nothing nested gives a NULL depth, not 0.
func TestSubagentNestingNone(t *testing.T) {
	t.Parallel()
	db := duck(t, sharedWarehouse(t))
	equalSets(t, "nesting summary of up", rowsOf(t, db, `SELECT source, subagents, nested_subagents, spawning_subagents, coalesce(max_nesting_depth::VARCHAR, 'NULL')
		FROM subagent_nesting_summary WHERE installation_id = 'up'`), []string{"backfill|29|1|1|1", "live|22|0|0|NULL"})
}

type settleGroup struct {
	rows, settled int
	ms            []float64
	oldest        time.Time
}

// TestSubagentSettlement compares settlement with times computed here from
// the source's timestamp text.
func TestSubagentSettlement(t *testing.T) {
	t.Parallel()
	db := duck(t, sharedWarehouse(t))
	for inst, file := range map[string]string{"up": "upgraded-backfill.db", "fresh": "fresh-activated.db"} {
		src := sourceDB(t, fixture(t, file))
		groups := map[string]*settleGroup{}
		for _, r := range rowsOf(t, src, `SELECT source || '|' || (is_async <> 0) || '|' || observed_at || '|' || coalesce(settled_at, 'NULL') FROM task_session_subagents`) {
			f := strings.Split(r, "|")
			key := f[0] + "|" + map[string]string{"0": "false", "1": "true"}[f[1]]
			g := groups[key]
			if g == nil {
				g = &settleGroup{}
				groups[key] = g
			}
			g.rows++
			obs := parseStamp(t, f[2])
			if f[3] == "NULL" {
				if g.oldest.IsZero() || obs.Before(g.oldest) {
					g.oldest = obs
				}
				continue
			}
			g.settled++
			if d := parseStamp(t, f[3]).UnixMicro() - obs.UnixMicro(); d >= 0 {
				g.ms = append(g.ms, float64(d)/1000)
			}
		}
		var want []string
		for key, g := range groups {
			sort.Float64s(g.ms)
			stats := "NULL|NULL|NULL"
			if len(g.ms) > 0 {
				sum := 0.0
				for _, v := range g.ms {
					sum += v
				}
				stats = fmt.Sprintf("%.3f|%.3f|%.3f", sum/float64(len(g.ms)), quantile(g.ms, 0.5), g.ms[len(g.ms)-1])
			}
			oldest := "NULL"
			if !g.oldest.IsZero() {
				oldest = g.oldest.Truncate(time.Microsecond).UTC().Format(time.RFC3339Nano)
			}
			want = append(want, fmt.Sprintf("%s|%d|%d|%d|%d|%s|%s", key, g.rows, g.settled, g.rows-g.settled, len(g.ms), stats, oldest))
		}
		sort.Strings(want)
		got := rowsOf(t, db, `SELECT source, is_async, subagents, settled, outstanding, rows_with_settle_time,
				coalesce(printf('%.3f', avg_settle_ms), 'NULL'), coalesce(printf('%.3f', median_settle_ms), 'NULL'), coalesce(printf('%.3f', max_settle_ms), 'NULL'),
				oldest_outstanding_observed_at
			FROM subagent_settlement WHERE installation_id = ?`, inst)
		equalSets(t, inst+" settlement", got, want)
		// Outstanding rows have an age; none outstanding means NULL, never 0.
		if bad := one(t, db, `SELECT count(*) FROM subagent_settlement WHERE installation_id = ?
				AND ((outstanding = 0) <> (max_outstanding_age_ms IS NULL) OR max_outstanding_age_ms <= 0)`, inst); bad != "0" {
			t.Errorf("%s: %s groups with a wrong outstanding age", inst, bad)
		}
	}
	// The fixture's five outstanding subagents (AC-10: never observed terminal).
	if got := one(t, db, `SELECT sum(outstanding) FROM subagent_settlement WHERE installation_id = 'fresh'`); got != "5" {
		t.Errorf("fresh outstanding = %s, want 5", got)
	}
}

func parseStamp(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse("2006-01-02 15:04:05.999999999-07:00", s)
	if err != nil {
		t.Fatalf("source timestamp %q: %v", s, err)
	}
	return ts.Truncate(time.Microsecond)
}

// quantile interpolates like DuckDB's quantile_cont.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := math.Floor(pos)
	hi := math.Ceil(pos)
	return sorted[int(lo)] + (sorted[int(hi)]-sorted[int(lo)])*(pos-lo)
}

// TestFanoutByStep: on fresh-activated every turn is complete but one
// whose tool call has live rows of two executions (a collision: a lower
// bound), so the exact averages per step equal the plain per-turn counts
// on the source over the other turns.
func TestFanoutByStep(t *testing.T) {
	t.Parallel()
	db := duck(t, sharedWarehouse(t))
	src := sourceDB(t, fixture(t, "fresh-activated.db"))
	want := rowsOf(t, src, `SELECT coalesce(step, 'NULL'), count(DISTINCT task_id), count(*), sum(n), count(*) FILTER (WHERE NOT coll),
			printf('%.6f', avg(n) FILTER (WHERE NOT coll)), max(n) FILTER (WHERE NOT coll), sum(n >= 2 AND NOT coll)
		FROM (SELECT t.task_id, nullif(CASE WHEN json_valid(t.metadata) THEN json_extract(t.metadata, '$.workflow_step_id_at_start') END, '') AS step,
			(SELECT count(*) FROM task_session_subagents s WHERE s.turn_id = t.id) AS n,
			EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.turn_id = t.id AND s.source = 'live' GROUP BY s.tool_call_id HAVING count(*) > 1) AS coll
			FROM task_session_turns t)
		GROUP BY step`)
	got := rowsOf(t, db, `SELECT coalesce(workflow_step_id, 'NULL'), cards, turns, subagents_observed, turns_complete, printf('%.6f', avg_fanout_complete), max_fanout_complete, turns_fanned_out_complete
		FROM fanout_by_step WHERE installation_id = 'fresh'`)
	equalSets(t, "fresh fan-out by step", got, want)
	if len(want) < 3 {
		t.Errorf("only %d steps in the fixture", len(want))
	}
	// On up, a step whose turns are all unknown has no average: NULL, not 0.
	equalSets(t, "up steps without complete turns",
		rowsOf(t, db, `SELECT workflow_step_name, turns, turns_unknown, coalesce(avg_fanout_complete::VARCHAR, 'NULL'), coalesce(max_fanout_complete::VARCHAR, 'NULL')
			FROM fanout_by_step WHERE installation_id = 'up' AND turns_complete = 0`),
		[]string{"Backlog|2|2|NULL|NULL"})
	// The split adds up, and the steps together hold every turn.
	if got := one(t, db, `SELECT count(*) FROM fanout_by_step WHERE subagents_observed <> subagents_observed_live + subagents_observed_backfill
			OR turns <> turns_complete + turns_lower_bound + turns_unknown`); got != "0" {
		t.Errorf("%s step rows do not add up", got)
	}
	equalSets(t, "turns per installation", rowsOf(t, db, `SELECT installation_id, sum(turns) FROM fanout_by_step GROUP BY 1`),
		rowsOf(t, db, `SELECT installation_id, count(*) FROM fanout_by_turn GROUP BY 1`))
}

// TestFanoutDistributionBySource checks the split against the per-turn
// view, and the upgraded store's known shape: every lower-bound turn holds
// only backfill rows (they are the history before capture_since), but the
// two live turns whose messages show a subagent without a row.
func TestFanoutDistributionBySource(t *testing.T) {
	t.Parallel()
	db := duck(t, sharedWarehouse(t))
	equalSets(t, "distribution",
		rowsOf(t, db, `SELECT installation_id, fanout_completeness, subagents_observed, turns, turns_live_only, turns_backfill_only, turns_mixed, subagents_live, subagents_backfill
			FROM fanout_distribution_by_source`),
		rowsOf(t, db, `SELECT installation_id, fanout_completeness, subagents_observed, count(*),
				sum(CASE WHEN subagents_observed_live > 0 AND subagents_observed_backfill = 0 THEN 1 ELSE 0 END),
				sum(CASE WHEN subagents_observed_backfill > 0 AND subagents_observed_live = 0 THEN 1 ELSE 0 END),
				sum(CASE WHEN subagents_observed_live > 0 AND subagents_observed_backfill > 0 THEN 1 ELSE 0 END),
				sum(subagents_observed_live), sum(subagents_observed_backfill)
			FROM fanout_by_turn GROUP BY ALL`))
	if got := one(t, db, `SELECT sum(turns) || '|' || sum(turns_backfill_only) || '|' || sum(subagents_backfill) FROM fanout_distribution_by_source
			WHERE installation_id = 'up' AND fanout_completeness = 'lower_bound'`); got != "18|15|29" {
		// 15 turns of backfilled history before capture_since, 2 live turns
		// after it that writer health's shortfall downgrades, and 1 whose
		// tool call has live rows of two executions (a collision).
		t.Errorf("up lower-bound turns|backfill-only|backfill rows = %s, want 18|15|29", got)
	}
	// The spec's reference population (1→65, 2→12, 3→42, 4→5, 5→2, 8→1)
	// but for one of its "2" turns: two live rows of one tool call, of two
	// executions, with identical usage — one invocation recorded twice,
	// which a row count cannot tell from two, so it is a lower bound.
	if got := one(t, db, `SELECT string_agg(subagents_observed || ':' || turns, ',' ORDER BY subagents_observed) FROM fanout_distribution_by_source
			WHERE installation_id = 'fresh' AND fanout_completeness = 'complete'`); got != "0:43,1:65,2:11,3:42,4:5,5:2,8:1" {
		t.Errorf("fresh exact distribution = %s (the spec's reference population, less the collided turn)", got)
	}
	if got := one(t, db, `SELECT string_agg(subagents_observed || ':' || turns, ',') FROM fanout_distribution_by_source
			WHERE installation_id = 'fresh' AND fanout_completeness = 'lower_bound'`); got != "2:1" {
		t.Errorf("fresh lower-bound distribution = %s, want the collided turn (2:1)", got)
	}
}

// TestHistoryViews: two committed runs of up and one of fresh.
func TestHistoryViews(t *testing.T) {
	t.Parallel()
	wh := sharedWarehouse(t)
	db := duck(t, wh)
	r0, r1 := shared.runs[0], shared.runs[1]
	equalSets(t, "installations_history", rowsOf(t, db, `SELECT installation_id, run_id, activation_state, subagent_rows, subagent_rows_backfill FROM installations_history`),
		[]string{"fresh|" + r0 + "|activated|253|0", "up|" + r0 + "|activated|51|29", "up|" + r1 + "|activated|51|29"})
	want := one(t, db, `SELECT count(*) || '|' || count(*) FILTER (WHERE fanout_completeness = 'complete') || '|' || count(*) FILTER (WHERE fanout_completeness = 'unknown')
		|| '|' || sum(subagents_observed_backfill) || '|' || printf('%.6f', avg(fanout)) FROM fanout_by_turn WHERE installation_id = 'up'`)
	equalSets(t, "fanout_history of up", rowsOf(t, db, `SELECT run_id, turns || '|' || turns_complete || '|' || turns_unknown || '|' || subagents_observed_backfill || '|' || printf('%.6f', avg_fanout_complete)
		FROM fanout_history WHERE installation_id = 'up'`), []string{r0 + "|" + want, r1 + "|" + want})
	// Snapshots order the history.
	if got := one(t, db, `SELECT count(*) FROM (SELECT run_id, lag(snapshot_at) OVER (ORDER BY snapshot_at) AS prev, snapshot_at FROM fanout_history WHERE installation_id = 'up') WHERE prev >= snapshot_at`); got != "0" {
		t.Errorf("fanout_history snapshots out of order")
	}
}
