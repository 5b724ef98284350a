package e2e_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/pipeline"
)

// Completeness is claimed only where the snapshot proves it (docs/design.md
// §3). Each case runs a real fixture, or a store derived from one with SQL,
// through the pipeline on SQLite and on PostgreSQL (the same store loaded
// into a real server), and checks the warehouse against values the test
// derives from the source itself.

// both runs a store on SQLite and PostgreSQL and checks each warehouse.
func both(t *testing.T, store string, check func(t *testing.T, db *sql.DB)) {
	t.Helper()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			source := store
			if dialect == "postgres" {
				source = copyToPostgres(t, store)
			}
			wh := filepath.Join(t.TempDir(), "wh")
			res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{{Name: "c", Source: source}}})
			if err != nil || res.Failed() {
				t.Fatalf("Run: %v %v", err, res.Outcomes[0].Err)
			}
			db := testkit.Duck(t, wh)
			check(t, db)
		})
	}
}

// subagentTaskMessages is the source's own count of distinct tool calls of
// subagent-task messages per turn (the health check's rule).
const subagentTaskMessages = `SELECT turn_id, count(DISTINCT json_extract(metadata, '$.tool_call_id'))
	FROM task_session_messages WHERE json_valid(metadata) AND json_extract(metadata, '$.normalized.kind') = 'subagent_task'
		AND coalesce(json_extract(metadata, '$.tool_call_id'), '') <> ''
	GROUP BY turn_id`

// upgraded-backfill: writer health measures a shortfall of 2, and the two
// turns it lies in are lower_bound (not complete), with their messages'
// tool calls as the lower bound; health and the per-turn flags agree.
func TestShortfallDowngradesItsTurns(t *testing.T) {
	t.Parallel()
	store := testkit.Fixture(t, "upgraded-backfill.db")
	src := testkit.SourceDB(t, store)
	msgs := map[string]string{}
	for _, r := range testkit.RowsOf(t, src, subagentTaskMessages) {
		p := strings.SplitN(r, "|", 2)
		msgs[p[0]] = p[1]
	}
	both(t, store, func(t *testing.T, db *sql.DB) {
		got := testkit.RowsOf(t, db, `SELECT turn_id, fanout_completeness, messages_expected, fanout_lower_bound, writer_shortfall, coalesce(fanout::VARCHAR, 'NULL')
			FROM fanout_by_turn WHERE writer_shortfall > 0`)
		if len(got) != 2 {
			t.Fatalf("turns with a shortfall: %v", got)
		}
		for _, r := range got {
			p := strings.Split(r, "|")
			if !strings.HasPrefix(p[0], "b5eba0fc") && !strings.HasPrefix(p[0], "b9c1c3c9") {
				t.Errorf("unexpected turn %s", r)
			}
			if p[1] != "lower_bound" || p[2] != msgs[p[0]] || p[3] != msgs[p[0]] || p[4] != "1" || p[5] != "NULL" {
				t.Errorf("turn %s, want lower_bound with %s messages as the lower bound", r, msgs[p[0]])
			}
		}
		if got := testkit.One(t, db, `SELECT (SELECT sum(writer_shortfall) FROM fanout_by_turn) || '|' || (SELECT shortfall FROM writer_health) || '|' || (SELECT sum(missing) FROM writer_shortfall_turns)`); got != "2|2|2" {
			t.Errorf("per-turn shortfall | health shortfall | listed: %s", got)
		}
		// No complete turn or session has a message without a row.
		if got := testkit.One(t, db, `SELECT count(*) FROM dim_turn WHERE fanout_completeness = 'complete' AND (writer_shortfall > 0 OR messages_expected > fanout)`); got != "0" {
			t.Errorf("%s complete turns contradicted by their messages", got)
		}
		if got := testkit.One(t, db, `SELECT count(*) FROM dim_session WHERE fanout_completeness = 'complete' AND writer_shortfall > 0`); got != "0" {
			t.Errorf("%s complete sessions with a shortfall", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'writer_shortfall_turns'`); got != "2" {
			t.Errorf("writer_shortfall_turns disclosure count %s", got)
		}
		// The fan-out distribution's exact rows are the complete turns only.
		if got := testkit.One(t, db, `SELECT (SELECT sum(turns) FROM fanout_distribution WHERE fanout_completeness = 'complete') = (SELECT count(*) FROM fanout_by_turn WHERE fanout_completeness = 'complete')`); got != "true" {
			t.Errorf("fanout_distribution complete turns differ")
		}
	})
}

// pre-feature: no subagent table, but subagent-task messages: their turns
// are lower bounds from the messages, not unknown.
func TestMessagesAreALowerBound(t *testing.T) {
	t.Parallel()
	store := testkit.Fixture(t, "pre-feature.db")
	src := testkit.SourceDB(t, store)
	want := testkit.RowsOf(t, src, subagentTaskMessages)
	both(t, store, func(t *testing.T, db *sql.DB) {
		got := testkit.RowsOf(t, db, `SELECT turn_id, messages_expected FROM fanout_by_turn WHERE fanout_completeness = 'lower_bound'`)
		testkit.EqualSets(t, "lower-bound turns and their messages", got, want)
		if got := testkit.One(t, db, `SELECT count(*) FROM fanout_by_turn WHERE fanout_completeness = 'unknown' AND messages_expected > 0`); got != "0" {
			t.Errorf("%s turns with messages still unknown", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'messages_lower_bound'`); got != fmt.Sprint(len(want)) {
			t.Errorf("messages_lower_bound disclosure %s, want %d", got, len(want))
		}
	})
}

// Rows whose turn_id is NULL (ordinary, AC-2a) or names no turn are kept,
// marked, counted in their session, and keep the other turns of that
// session from being complete.
func TestUnattributedRows(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	src := testkit.SourceDB(t, store)
	var session string
	if err := src.QueryRow(`SELECT task_session_id FROM task_session_subagents GROUP BY 1 HAVING count(*) >= 4 ORDER BY 1 LIMIT 1`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	testkit.SQLiteExec(t, store,
		`UPDATE task_session_subagents SET turn_id = NULL WHERE id IN (SELECT id FROM task_session_subagents WHERE task_session_id = '`+session+`' ORDER BY id LIMIT 3)`,
		`UPDATE task_session_subagents SET turn_id = 'no-such-turn' WHERE id = (SELECT id FROM task_session_subagents WHERE task_session_id = '`+session+`' AND turn_id IS NOT NULL ORDER BY id LIMIT 1)`)
	total := testkit.One(t, src, `SELECT count(*) FROM task_session_subagents`)
	sessionRows := testkit.One(t, src, `SELECT count(*) FROM task_session_subagents WHERE task_session_id = ?`, session)
	sessionTurns := testkit.One(t, src, `SELECT count(*) FROM task_session_turns WHERE task_session_id = ?`, session)
	both(t, store, func(t *testing.T, db *sql.DB) {
		if got := testkit.RowsOf(t, db, `SELECT turn_attribution, count(*) FROM subagent_contexts GROUP BY 1`); strings.Join(got, ",") != fmt.Sprintf("attributed|%d,missing_turn|1,null_turn|3", atoi(total)-4) {
			t.Errorf("turn_attribution: %v", got)
		}
		if got := testkit.One(t, db, `SELECT subagents_observed FROM fanout_by_session WHERE session_id = ?`, session); got != sessionRows {
			t.Errorf("session counts %s rows, want all %s", got, sessionRows)
		}
		if got := testkit.One(t, db, `SELECT count(*) || '|' || count(*) FILTER (WHERE fanout_completeness = 'complete') || '|' || min(unattributed_session_rows) FROM fanout_by_turn WHERE session_id = ?`, session); got != sessionTurns+"|0|4" {
			t.Errorf("turns of the session (count|complete|unplaced): %s", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'unattributed_rows'`); got != "4" {
			t.Errorf("unattributed_rows disclosure %s", got)
		}
		if got := testkit.One(t, db, `SELECT sum(subagents_observed) FROM fanout_by_session`); got != total {
			t.Errorf("sessions count %s rows, want %s", got, total)
		}
	})
}

// A live row with a real execution id and a backfill row for the same
// (session, tool_call_id) are one invocation: counted both ways and
// disclosed.
func TestLiveBackfillOverlap(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	src := testkit.SourceDB(t, store)
	var id, turn string
	if err := src.QueryRow(`SELECT s.id, s.turn_id FROM task_session_subagents s WHERE s.source = 'live' AND s.agent_execution_id <> 'unknown'
		AND (SELECT count(*) FROM task_session_subagents x WHERE x.turn_id = s.turn_id) = 2 ORDER BY s.id LIMIT 1`).Scan(&id, &turn); err != nil {
		t.Fatal(err)
	}
	testkit.SQLiteExec(t, store, `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id, subagent_type, is_async, source, observed_at, updated_at)
		SELECT id || '-backfill', task_session_id, task_id, turn_id, tool_call_id, 'unknown', subagent_type, 0, 'backfill', observed_at, updated_at
		FROM task_session_subagents WHERE id = '`+id+`'`)
	both(t, store, func(t *testing.T, db *sql.DB) {
		if got := testkit.One(t, db, `SELECT subagents_observed || '|' || distinct_tool_calls || '|' || live_backfill_overlap || '|' || fanout_completeness || '|' || fanout FROM fanout_by_turn WHERE turn_id = ?`, turn); got != "3|2|1|complete|2" {
			t.Errorf("turn with a duplicated tool call (rows|distinct|overlap|completeness|fanout): %s", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'live_backfill_overlap'`); got != "1" {
			t.Errorf("live_backfill_overlap disclosure %s", got)
		}
	})
}

// agent_execution_id values that only look like the sentinel are never
// executions (AC-31): unrecorded, execution_id NULL, flagged.
func TestSentinelVariantsAreNotExecutions(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	testkit.SQLiteExec(t, store, `UPDATE task_session_subagents SET agent_execution_id = CASE rn WHEN 1 THEN '' WHEN 2 THEN 'UNKNOWN' ELSE ' unknown' END
		FROM (SELECT id AS rid, row_number() OVER (ORDER BY id) AS rn FROM task_session_subagents WHERE agent_execution_id <> 'unknown' ORDER BY id LIMIT 3) WHERE id = rid`)
	both(t, store, func(t *testing.T, db *sql.DB) {
		got := testkit.RowsOf(t, db, `SELECT '[' || agent_execution_id || ']', execution_identity, coalesce(execution_id, 'NULL') FROM subagent_contexts WHERE agent_execution_id IN ('', 'UNKNOWN', ' unknown')`)
		if strings.Join(got, ",") != "[ unknown]|unrecorded_live|NULL,[UNKNOWN]|unrecorded_live|NULL,[]|unrecorded_live|NULL" {
			t.Errorf("variants: %v", got)
		}
		if got := testkit.One(t, db, `SELECT count(*) FROM rejects WHERE column_name = 'agent_execution_id' AND action = 'flagged'`); got != "3" {
			t.Errorf("%s flagged rejects", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'sentinel_variants'`); got != "3" {
			t.Errorf("sentinel_variants disclosure %s", got)
		}
	})
}

// A turn that started inside the second after a second-precision
// capture_since is lower_bound and flagged, like the rows in it.
func TestAmbiguousSecondTurn(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "legacy-second-precision.db")
	src := testkit.SourceDB(t, store)
	var turn string
	if err := src.QueryRow(`SELECT t.id FROM task_session_turns t WHERE EXISTS (SELECT 1 FROM task_session_subagents s WHERE s.turn_id = t.id)
		AND t.started_at >= '2026-08-05 10:00:01' ORDER BY t.started_at LIMIT 1`).Scan(&turn); err != nil {
		t.Fatal(err)
	}
	testkit.SQLiteExec(t, store, `UPDATE task_session_turns SET started_at = '2026-08-05 10:00:00.5+00:00' WHERE id = '`+turn+`'`)
	both(t, store, func(t *testing.T, db *sql.DB) {
		if got := testkit.One(t, db, `SELECT fanout_completeness || '|' || capture_boundary_ambiguous || '|' || coalesce(fanout::VARCHAR, 'NULL') FROM fanout_by_turn WHERE turn_id = ?`, turn); got != "lower_bound|true|NULL" {
			t.Errorf("turn in the ambiguous second: %s", got)
		}
		if got := testkit.One(t, db, `SELECT count(*) FROM fanout_by_turn WHERE capture_boundary_ambiguous`); got != "1" {
			t.Errorf("%s ambiguous turns", got)
		}
		if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'capture_boundary_ambiguous_activity'`); got != "1" {
			t.Errorf("disclosure %s", got)
		}
	})
}

// Execution ids are trusted without execution_since on an execution-aware
// table; the disclosure says so. Provenance counts what was read.
func TestExecutionIdsTrustedAndRowsRead(t *testing.T) {
	t.Parallel()
	store := testkit.Fixture(t, "fresh-activated.db")
	src := testkit.SourceDB(t, store)
	recorded := testkit.One(t, src, `SELECT count(*) FROM task_session_subagents WHERE agent_execution_id <> 'unknown'`)
	messages := testkit.One(t, src, `SELECT count(*) FROM task_session_messages`)
	metaRows := testkit.One(t, src, `SELECT count(*) FROM kandev_meta WHERE key IN ('subagent_context_capture_since', 'subagent_context_backfill_through', 'subagent_context_execution_since', 'kandev_version', 'schema_initialized_at')`)
	wh := filepath.Join(t.TempDir(), "wh")
	res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{{Name: "c", Source: store}}})
	if err != nil || res.Failed() {
		t.Fatal(err)
	}
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count || '|' || (text LIKE '%execution_aware%') FROM disclosures WHERE rule = 'execution_ids_trusted'`); got != recorded+"|true" {
		t.Errorf("execution_ids_trusted: %s, want %s recorded", got, recorded)
	}
	p := res.Outcomes[0].Manifest.Provenance
	if got := fmt.Sprint(p.Tables["fact_writer_health"].RowsRead, "|", p.Tables["fact_installation_state"].RowsRead); got != messages+"|"+metaRows {
		t.Errorf("rows_read messages|kandev_meta = %s, want %s|%s", got, messages, metaRows)
	}
	// The extractor's version comes from the build, never a bare "dev".
	if p.ExtractorVersion == "dev" || p.ExtractorVersion == "" || p.ExtractorVersion != pipeline.ExtractorVersion() {
		t.Errorf("extractor_version %q (build says %q)", p.ExtractorVersion, pipeline.ExtractorVersion())
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// upgraded-backfill with the messages of its two shortfall turns naming no
// turn (turn_id ”: Kandev's schema makes it NOT NULL, and on PostgreSQL a
// foreign key to the turns, so SQLite only): the shortfall is still
// measured (it is keyed by session and tool call), and
// fact_writer_shortfall and writer_shortfall_turns give its turn_id as
// NULL, as the catalog says.
func TestShortfallWithoutTurnIsNull(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "upgraded-backfill.db")
	testkit.SQLiteExec(t, store,
		`UPDATE task_session_messages SET turn_id = '' WHERE turn_id LIKE 'b5eba0fc%' OR turn_id LIKE 'b9c1c3c9%'`)
	src := testkit.SourceDB(t, store)
	if got := testkit.One(t, src, `SELECT count(*) FROM task_session_messages WHERE turn_id LIKE 'b5eba0fc%' OR turn_id LIKE 'b9c1c3c9%'`); got != "0" {
		t.Fatalf("%s messages still name the turns", got)
	}
	wh, _ := extractTo(t, store, "c")
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count(*) || '|' || count(turn_id) FROM fact_writer_shortfall`); got != "2|0" {
		t.Errorf("shortfall rows | with a turn_id: %s, want 2|0", got)
	}
	if got := testkit.One(t, db, `SELECT (SELECT shortfall FROM writer_health) || '|' || (SELECT sum(missing) FROM writer_shortfall_turns WHERE turn_id IS NULL AND turn_started_at IS NULL) || '|' || (SELECT count(*) FROM writer_shortfall_turns WHERE turn_id IS NOT NULL)`); got != "2|2|0" {
		t.Errorf("health shortfall | listed without a turn | listed with one: %s, want 2|2|0", got)
	}
}
