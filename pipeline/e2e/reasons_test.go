package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// reasonStore is one store of the reason-code test: a real fixture, or one
// derived from a fixture with SQL so that a rule no fixture exercises
// applies to some of its rows.
type reasonStore struct {
	name, fixture string
	derive        []string
	// sqliteOnly: PostgreSQL's schema cannot hold it (a timestamp that
	// is no instant, a NULL in a NOT NULL column, the older table shape).
	sqliteOnly bool
	preAmend   bool
}

// preAmendment rebuilds task_session_subagents in its pre-amendment shape
// (the two-column key); nullableExecution without NOT NULL on
// agent_execution_id, so a hostile NULL can be stored.
var (
	preAmendment = []string{
		`CREATE TABLE tss_old (
			id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL, turn_id TEXT,
			tool_call_id TEXT NOT NULL, parent_tool_call_id TEXT, subagent_type TEXT, description TEXT,
			agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
			is_async INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER, tool_use_count INTEGER, duration_ms INTEGER,
			source TEXT NOT NULL DEFAULT 'live', observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
			UNIQUE (task_session_id, tool_call_id))`,
		`INSERT OR IGNORE INTO tss_old SELECT id, task_session_id, task_id, turn_id, tool_call_id, parent_tool_call_id, subagent_type,
			description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens, tool_use_count,
			duration_ms, source, observed_at, settled_at, updated_at FROM task_session_subagents`,
		`DROP TABLE task_session_subagents`,
		`ALTER TABLE tss_old RENAME TO task_session_subagents`,
	}
	nullableExecution = []string{
		`CREATE TABLE tss_new (
			id TEXT PRIMARY KEY, task_session_id TEXT NOT NULL, task_id TEXT NOT NULL, turn_id TEXT,
			tool_call_id TEXT NOT NULL, agent_execution_id TEXT, parent_tool_call_id TEXT, subagent_type TEXT, description TEXT,
			agent_id TEXT, child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
			is_async INTEGER NOT NULL DEFAULT 0, total_tokens INTEGER, tool_use_count INTEGER, duration_ms INTEGER,
			source TEXT NOT NULL DEFAULT 'live', observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
			UNIQUE (task_session_id, agent_execution_id, tool_call_id))`,
		`INSERT INTO tss_new SELECT id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, parent_tool_call_id,
			subagent_type, description, agent_id, child_session_id, model, agent_status, tool_status, is_async, total_tokens,
			tool_use_count, duration_ms, source, observed_at, settled_at, updated_at FROM task_session_subagents`,
		`DROP TABLE task_session_subagents`,
		`ALTER TABLE tss_new RENAME TO task_session_subagents`,
		`UPDATE task_session_subagents SET agent_execution_id = NULL WHERE id IN (SELECT id FROM task_session_subagents ORDER BY id LIMIT 2)`,
	}
)

var reasonStores = []reasonStore{
	{name: "fresh-activated", fixture: "fresh-activated.db"},
	{name: "not-activated", fixture: "not-activated.db"},
	{name: "capture-only", fixture: "capture-only.db"},
	{name: "upgraded-backfill", fixture: "upgraded-backfill.db"},
	{name: "legacy-second-precision", fixture: "legacy-second-precision.db"},
	{name: "pre-feature", fixture: "pre-feature.db"},
	{name: "execution-since", fixture: "execution-since.db"},
	// A turn with subagents moved into the second after the key.
	{name: "ambiguous-second", fixture: "legacy-second-precision.db", derive: []string{
		`UPDATE task_session_turns SET started_at = '2026-08-05 10:00:00.5+00:00' WHERE id = (SELECT t.id FROM task_session_turns t
			WHERE EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.turn_id = t.id) AND t.started_at >= '2026-08-05 10:00:01'
			ORDER BY t.started_at LIMIT 1)`}},
	// Rows of one session that name no turn, or none at all.
	{name: "unattributed", fixture: "fresh-activated.db", derive: []string{
		`UPDATE task_session_subagents SET turn_id = NULL WHERE id IN (SELECT id FROM task_session_subagents WHERE task_session_id =
			(SELECT task_session_id FROM task_session_subagents GROUP BY 1 HAVING count(*) >= 4 ORDER BY 1 LIMIT 1) ORDER BY id LIMIT 2)`,
		`UPDATE task_session_subagents SET turn_id = 'no-such-turn' WHERE id = (SELECT id FROM task_session_subagents WHERE turn_id IS NOT NULL ORDER BY id DESC LIMIT 1)`}},
	{name: "unparseable-key", fixture: "fresh-activated.db", derive: []string{
		`UPDATE kandev_meta SET value = 'yesterday' WHERE key = 'subagent_context_capture_since'`}},
	// The sentinel in three spellings that are not its own.
	{name: "sentinel-variants", fixture: "fresh-activated.db", derive: []string{
		`UPDATE task_session_subagents SET agent_execution_id = CASE rn WHEN 1 THEN '' WHEN 2 THEN 'UNKNOWN' ELSE ' unknown' END
			FROM (SELECT id AS rid, row_number() OVER (ORDER BY id) AS rn FROM task_session_subagents WHERE agent_execution_id <> 'unknown' ORDER BY id LIMIT 3) WHERE id = rid`}},
	{name: "no-start-time", fixture: "fresh-activated.db", sqliteOnly: true, derive: []string{
		`UPDATE task_session_turns SET started_at = 'not a time' WHERE id IN (SELECT turn_id FROM task_session_subagents ORDER BY id LIMIT 1)`,
		`UPDATE task_sessions SET started_at = 'not a time' WHERE id IN (SELECT task_session_id FROM task_session_subagents ORDER BY id DESC LIMIT 1)`}},
	{name: "null-execution", fixture: "fresh-activated.db", sqliteOnly: true, derive: nullableExecution},
	{name: "pre-amendment", fixture: "fresh-activated.db", sqliteOnly: true, preAmend: true, derive: preAmendment},
}

// Every turn's and session's completeness_reasons, and every row's
// execution_identity_reasons, are exactly what the rules give when
// derived in the test with SQL on the source, on SQLite and on
// PostgreSQL; the lists are empty exactly on complete (recorded) rows;
// and every code is produced by one of the stores.
func TestReasonCodesOnEveryStore(t *testing.T) {
	t.Parallel()
	paths := map[string]string{}
	for _, s := range reasonStores {
		p := testkit.CopyFixture(t, s.fixture)
		if len(s.derive) > 0 {
			testkit.SQLiteExec(t, p, s.derive...)
		}
		paths[s.name] = p
	}
	// The rules derived once per store (SQLite's SQL on the source; under
	// the race detector this is most of the test's time), then compared
	// with both dialects' warehouses.
	type derived struct{ turns, sessions, identities []string }
	want := map[string]derived{}
	for _, s := range reasonStores {
		src := testkit.SourceDB(t, paths[s.name])
		feature := one(t, src, `SELECT count(*) FROM sqlite_master WHERE name = 'task_session_subagents'`) == "1"
		d := derived{turns: rowsOf(t, src, expectedReasons("task_session_turns", "turn_id", feature)),
			sessions: rowsOf(t, src, expectedReasons("task_sessions", "task_session_id", feature))}
		if feature {
			d.identities = rowsOf(t, src, expectedIdentityReasons(s.preAmend))
		}
		want[s.name] = d
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			var ins []pipeline.Installation
			for _, s := range reasonStores {
				switch {
				case dialect == "sqlite":
					ins = append(ins, pipeline.Installation{Name: s.name, Source: paths[s.name]})
				case !s.sqliteOnly:
					ins = append(ins, pipeline.Installation{Name: s.name, Source: copyToPostgres(t, paths[s.name])})
				}
			}
			wh := filepath.Join(t.TempDir(), "wh")
			res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: ins})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range res.Outcomes {
				if o.Err != nil {
					t.Fatalf("%s: %v", o.Installation, o.Err)
				}
			}
			db := testkit.Duck(t, wh)
			for _, s := range reasonStores {
				if dialect == "postgres" && s.sqliteOnly {
					continue
				}
				d := want[s.name]
				testkit.EqualSets(t, s.name+" turn reasons",
					rowsOf(t, db, `SELECT turn_id, array_to_string(completeness_reasons, ',') FROM fanout_by_turn WHERE installation_id = ?`, s.name), d.turns)
				testkit.EqualSets(t, s.name+" session reasons",
					rowsOf(t, db, `SELECT session_id, array_to_string(completeness_reasons, ',') FROM fanout_by_session WHERE installation_id = ?`, s.name), d.sessions)
				if d.identities != nil {
					testkit.EqualSets(t, s.name+" execution identity reasons",
						rowsOf(t, db, `SELECT subagent_id, array_to_string(execution_identity_reasons, ',') FROM subagent_contexts WHERE installation_id = ?`, s.name), d.identities)
				}
			}
			// Empty exactly when complete (recorded); no_evidence exactly when unknown.
			for _, q := range []string{
				`SELECT count(*) FROM fanout_by_turn WHERE (len(completeness_reasons) = 0) <> (fanout_completeness = 'complete')
					OR list_contains(completeness_reasons, 'no_evidence') <> (fanout_completeness = 'unknown')`,
				`SELECT count(*) FROM fanout_by_session WHERE (len(completeness_reasons) = 0) <> (fanout_completeness = 'complete')
					OR list_contains(completeness_reasons, 'no_evidence') <> (fanout_completeness = 'unknown')`,
				`SELECT count(*) FROM subagent_contexts WHERE (len(execution_identity_reasons) = 0) <> (execution_identity = 'recorded')`,
			} {
				if n := one(t, db, q); n != "0" {
					t.Errorf("%s rows break the empty-exactly-when rule: %s", n, q)
				}
			}
			// The capture_boundary disclosure counts the turns that started
			// before capture_since, by their completeness.
			for _, s := range reasonStores {
				text := rowsOf(t, db, `SELECT text FROM disclosures WHERE installation_id = ? AND rule = 'capture_boundary'`, s.name)
				if len(text) == 0 {
					continue
				}
				n := func(c string) int {
					return atoi(one(t, db, `SELECT count(*) FROM fanout_by_turn WHERE installation_id = ? AND fanout_completeness = ?
						AND list_contains(completeness_reasons, 'started_before_capture')`, s.name, c))
				}
				lower := fmt.Sprintf("a lower bound (%s, ", counted(n("lower_bound"), "turn", "turns"))
				unknown := fmt.Sprintf("UNKNOWN, not zero (%s, ", counted(n("unknown"), "turn", "turns"))
				if !strings.Contains(text[0], lower) || !strings.Contains(text[0], unknown) {
					t.Errorf("%s capture_boundary: %q, want %q and %q", s.name, text[0], lower, unknown)
				}
			}
			if dialect != "sqlite" {
				return
			}
			got := rowsOf(t, db, `SELECT DISTINCT unnest(completeness_reasons) FROM fanout_by_turn
				UNION SELECT DISTINCT unnest(completeness_reasons) FROM fanout_by_session
				UNION SELECT DISTINCT unnest(execution_identity_reasons) FROM subagent_contexts ORDER BY 1`)
			var want []string
			for _, r := range append(append([]models.Reason{}, models.CompletenessReasonList...), models.ExecutionReasonList...) {
				want = append(want, string(r.Code))
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("codes produced by the stores:\n got  %v\n want %v", got, want)
			}
		})
	}
}

// expectedReasons derives (id, reasons) for every turn or session by the
// rules of the data dictionary's Reason codes, in the source's own SQL.
func expectedReasons(table, key string, feature bool) string {
	validC := keyC + ` IS NOT NULL AND ` + keyC + ` GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z'`
	startOK := `t.started_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9][ T][0-9][0-9]:[0-9][0-9]:[0-9][0-9]*'`
	tc := `json_extract(m.metadata, '$.tool_call_id')`
	isTask := `json_valid(m.metadata) AND json_extract(m.metadata, '$.normalized.kind') = 'subagent_task' AND coalesce(` + tc + `, '') <> ''`
	msgs := `(SELECT count(DISTINCT ` + tc + `) FROM task_session_messages m WHERE m.` + key + ` = t.id AND ` + isTask + `)`
	rows, distinct, overlap, unplaced, short := `0`, `0`, `0`, `0`, `0`
	lb := msgs
	if feature {
		rows = `(SELECT count(*) FROM task_session_subagents s WHERE s.` + key + ` = t.id)`
		distinct = `(SELECT count(DISTINCT nullif(s.tool_call_id, '')) FROM task_session_subagents s WHERE s.` + key + ` = t.id)`
		overlap = `(SELECT count(*) FROM (SELECT 1 FROM task_session_subagents s WHERE s.` + key + ` = t.id AND coalesce(s.tool_call_id, '') <> ''
			GROUP BY s.tool_call_id HAVING count(*) FILTER (WHERE s.source = 'live') > 0 AND count(*) FILTER (WHERE s.source = 'backfill') > 0))`
		if key == "turn_id" {
			unplaced = `(SELECT count(*) FROM task_session_subagents s WHERE s.task_session_id = t.task_session_id
				AND (coalesce(s.turn_id, '') = '' OR s.turn_id NOT IN (SELECT id FROM task_session_turns)))`
		}
		short = `(SELECT count(DISTINCT ` + tc + `) FROM task_session_messages m WHERE m.` + key + ` = t.id AND ` + isTask + `
			AND ` + validC + ` AND ` + normCol("m.created_at") + ` >= ` + normKey(keyC) + `
			AND coalesce(m.task_session_id, '') <> '' AND coalesce(m.task_id, '') <> ''
			AND NOT EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.task_session_id = m.task_session_id AND s.tool_call_id = ` + tc + `
				AND ` + normCol("s.observed_at") + ` >= ` + normKey(keyC) + `))`
		lb = `(SELECT count(*) FROM (SELECT s.tool_call_id FROM task_session_subagents s WHERE s.` + key + ` = t.id AND coalesce(s.tool_call_id, '') <> ''
			UNION SELECT ` + tc + ` FROM task_session_messages m WHERE m.` + key + ` = t.id AND ` + isTask + `))`
	}
	rule := func(cond, code string) string { return `CASE WHEN ` + cond + ` THEN '` + code + `,' ELSE '' END` }
	return `SELECT id, rtrim(` + strings.Join([]string{
		rule(`NOT feature`, "feature_absent"),
		rule(`NOT c_present`, "no_capture_key"),
		rule(`c_present AND NOT c_valid`, "capture_key_unparseable"),
		rule(`NOT start_ok`, "no_start_time"),
		rule(`before`, "started_before_capture"),
		rule(`ambiguous`, "ambiguous_capture_second"),
		rule(`short > 0`, "writer_shortfall"),
		rule(`n - o > d`, "rows_beyond_tool_calls"),
		rule(`u > 0`, "unattributed_rows_in_session"),
		rule(`NOT complete AND lb > d`, "messages_without_rows"),
		rule(`NOT complete AND n = 0 AND msgs = 0`, "no_evidence"),
	}, " || ") + `, ',')
		FROM (SELECT *, (feature AND c_valid AND start_ok AND NOT before AND NOT ambiguous AND short = 0 AND n - o <= d AND u = 0) AS complete
		FROM (SELECT *, (c_valid AND start_ok AND ` + normCol("started_at") + ` < ` + normKey(keyC) + `) AS before,
				(c_valid AND length(` + keyC + `) = 20 AND start_ok AND ` + normCol("started_at") + ` >= ` + normKey(keyC) + `
					AND substr(` + normCol("started_at") + `, 1, 19) = substr(` + keyC + `, 1, 19)) AS ambiguous
		FROM (SELECT t.id, t.started_at, ` + boolSQL(feature) + ` AS feature, ` + keyC + ` IS NOT NULL AS c_present,
				coalesce(` + validC + `, 0) AS c_valid, coalesce(` + startOK + `, 0) AS start_ok,
				` + rows + ` AS n, ` + distinct + ` AS d, ` + overlap + ` AS o, ` + unplaced + ` AS u, ` + short + ` AS short,
				` + msgs + ` AS msgs, ` + lb + ` AS lb
			FROM ` + table + ` t)))`
}

// expectedIdentityReasons derives (id, reasons) for every subagent row.
func expectedIdentityReasons(preAmend bool) string {
	if preAmend {
		return `SELECT id, 'no_execution_column' FROM task_session_subagents`
	}
	validE := keyE + ` IS NOT NULL AND ` + keyE + ` GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z'`
	return `SELECT id, CASE WHEN NOT sentinel THEN '' ELSE rtrim(
			CASE WHEN agent_execution_id IS NULL THEN 'execution_id_null,' WHEN agent_execution_id = 'unknown' THEN 'execution_id_sentinel,'
				ELSE 'execution_id_sentinel_variant,' END ||
			CASE WHEN source = 'backfill' THEN 'backfill_source,' ELSE '' END ||
			CASE WHEN e_valid AND ` + normCol("observed_at") + ` < ` + normKey(keyE) + ` THEN 'before_execution_since,' ELSE '' END ||
			CASE WHEN source <> 'backfill' AND NOT e_valid THEN 'no_execution_since_key,' ELSE '' END, ',') END
		FROM (SELECT *, agent_execution_id IS NULL OR lower(trim(agent_execution_id)) IN ('', 'unknown') AS sentinel,
			coalesce(` + validE + `, 0) AS e_valid FROM task_session_subagents)`
}

func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func boolSQL(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
