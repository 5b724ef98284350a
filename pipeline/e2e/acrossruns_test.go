package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

func acrossRun(t *testing.T, wh string, in pipeline.Installation) (pipeline.Result, error) {
	t.Helper()
	res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{in}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, res.Outcomes[0].Err
}

// Two different stores, both called kandev.db (Kandev's default name), do
// not merge into one installation: the second is refused, naming both
// sources and how to rebind; a rebind is disclosed at every later run.
func TestInstallationIsBoundToItsSource(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a := filepath.Join(root, "laptop", "kandev.db")
	b := filepath.Join(root, "server", "kandev.db")
	for p, fixture := range map[string]string{a: "fresh-activated.db", b: "upgraded-backfill.db"} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, err := os.ReadFile(testkit.Fixture(t, fixture))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, data, 0o644)
	}
	wh := filepath.Join(root, "wh")
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "kandev", Source: a}); err != nil {
		t.Fatal(err)
	}
	_, err := acrossRun(t, wh, pipeline.Installation{Name: "kandev", Source: b})
	if !errors.Is(err, load.ErrSourceChanged) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) ||
		!strings.Contains(err.Error(), "--rebind") || !strings.Contains(err.Error(), "--installation") {
		t.Fatalf("second store: %v", err)
	}
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count(*) || ' ' || count(DISTINCT source_location) FROM runs WHERE status = 'committed'`); got != "1 1" {
		t.Errorf("committed runs / sources: %s", got)
	}
	db.Close()
	// The same store again is fine; an explicit rebind is accepted and
	// disclosed then and at every later run.
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "kandev", Source: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "kandev", Source: b, Rebind: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "kandev", Source: b}); err != nil {
		t.Fatal(err)
	}
	db = testkit.Duck(t, wh)
	got := testkit.One(t, db, `SELECT severity || '|' || count || '|' || (text LIKE '%'||?||'%'||?||'%') FROM disclosures WHERE rule = 'source_rebound'`, a, b)
	if got != "warning|1|true" {
		t.Errorf("source_rebound disclosure: %s", got)
	}
	bd, err := load.ReadBinding(wh, "kandev")
	if err != nil || bd.Source.Location != b || len(bd.Rebinds) != 1 || bd.Rebinds[0].From.Location != a {
		t.Errorf("binding %+v, %v", bd, err)
	}
}

// capture_since or backfill_through changing between runs is an alarm
// disclosure with both raw values.
func TestActivationKeyChangeIsAnAlarm(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	first, err := acrossRun(t, wh, pipeline.Installation{Name: "lab", Source: store})
	if err != nil {
		t.Fatal(err)
	}
	testkit.SQLiteExec(t, store, `UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "lab", Source: store}); err != nil {
		t.Fatal(err)
	}
	db := testkit.Duck(t, wh)
	got := testkit.RowsOf(t, db, `SELECT severity, text LIKE '%"2026-08-03T15:00:00.123456789Z"%"2026-08-05T00:00:00Z"%', text LIKE '%'||?||'%' FROM disclosures WHERE rule = 'activation_key_changed'`, first.RunID)
	if strings.Join(got, ",") != "alarm|true|true" {
		t.Errorf("activation_key_changed: %v", got)
	}
}

// A session deleted in the source between runs is counted and disclosed;
// it, its turns and its subagent rows stay in the archive, which later runs
// carry forward (retention 1 included); current views keep the source as it
// is now.
func TestDeletionsAreArchived(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	src := testkit.SourceDB(t, store)
	var session string
	var turns, subagents, total int
	if err := src.QueryRow(`SELECT s.id, (SELECT count(*) FROM task_session_turns WHERE task_session_id = s.id),
			(SELECT count(*) FROM task_session_subagents WHERE task_session_id = s.id), (SELECT count(*) FROM task_session_subagents)
		FROM task_sessions s WHERE (SELECT count(*) FROM task_session_subagents WHERE task_session_id = s.id) > 1 ORDER BY s.id LIMIT 1`).Scan(&session, &turns, &subagents, &total); err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(t.TempDir(), "wh")
	run := func() pipeline.Result {
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Retention: 1, Installations: []pipeline.Installation{{Name: "lab", Source: store}}})
		if err != nil || res.Failed() {
			t.Fatalf("Run: %v %v", err, res.Outcomes)
		}
		return res
	}
	first := run()
	testkit.SQLiteExec(t, store,
		`DELETE FROM task_session_subagents WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_session_messages WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_session_turns WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_sessions WHERE id = '`+session+`'`)
	second := run()
	check := func(detected string) {
		t.Helper()
		db := testkit.Duck(t, wh)
		want := fmt.Sprintf("1|%d|%d", turns, subagents)
		if got := testkit.One(t, db, `SELECT sessions_deleted || '|' || turns_deleted || '|' || subagent_rows_deleted FROM deletions`); got != want {
			t.Errorf("deletions %s, want %s", got, want)
		}
		if got := testkit.One(t, db, `SELECT deleted_detected_run_id || '|' || last_seen_run_id FROM deletions`); got != detected+"|"+first.RunID {
			t.Errorf("deletion runs %s", got)
		}
		if got := testkit.One(t, db, `SELECT count(*) || '|' || count(*) FILTER (WHERE is_deleted) FROM subagent_contexts_with_deleted`); got != fmt.Sprintf("%d|%d", total, subagents) {
			t.Errorf("with deleted: %s, want %d|%d", got, total, subagents)
		}
		if got := testkit.One(t, db, `SELECT count(*) FROM subagent_contexts`); got != fmt.Sprint(total-subagents) {
			t.Errorf("current rows %s, want %d", got, total-subagents)
		}
		if got := testkit.One(t, db, `SELECT count(*) FROM archive_session WHERE session_id = ?`, session); got != "1" {
			t.Errorf("archived session rows: %s", got)
		}
		db.Close()
	}
	check(second.RunID)
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count || '|' || severity FROM disclosures WHERE rule = 'deletions'`); got != fmt.Sprintf("%d|warning", subagents) {
		t.Errorf("deletions disclosure %s", got)
	}
	db.Close()
	// A later run (retention 1 removed the first two) still has them.
	third := run()
	run()
	_ = third
	check(second.RunID)
	db = testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT count(*) FROM disclosures WHERE rule = 'deletions'`); got != "0" {
		t.Errorf("a run with no new deletion discloses %s deletions", got)
	}
	if got := testkit.One(t, db, `SELECT count FROM disclosures WHERE rule = 'archived_rows'`); got != fmt.Sprint(subagents) {
		t.Errorf("archived_rows disclosure %s", got)
	}
}

// Every current view can tell how old its data is (current_runs), and
// stale_data is disclosed when the latest attempt failed or the snapshot
// is older than the threshold.
func TestStaleDataIsDisclosed(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	opts := pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{{Name: "lab", Source: store}}}
	first, err := pipeline.Run(context.Background(), opts)
	if err != nil || first.Failed() {
		t.Fatal(err, first.Outcomes)
	}
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT is_stale || '|' || latest_attempt_failed || '|' || (data_age_hours < 1) || '|' || (newest_source_activity_at IS NOT NULL) FROM current_runs`); got != "false|false|true|true" {
		t.Errorf("fresh data: %s", got)
	}
	if got := testkit.One(t, db, `SELECT count(*) FROM disclosures WHERE rule = 'stale_data'`); got != "0" {
		t.Errorf("stale_data on fresh data: %s", got)
	}
	db.Close()
	// The next attempt fails (the store is gone): stale, saying why.
	os.Rename(store, store+".gone")
	second, err := pipeline.Run(context.Background(), opts)
	if err != nil || !second.Failed() {
		t.Fatalf("the run on a missing store did not fail: %v", err)
	}
	db = testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT run_id || '|' || is_stale || '|' || latest_attempt_failed || '|' || latest_attempt_run_id FROM current_runs`); got != first.RunID+"|true|true|"+second.RunID {
		t.Errorf("after a failed attempt: %s", got)
	}
	if got := testkit.One(t, db, `SELECT severity || '|' || (text LIKE '%'||?||'%failed%') FROM disclosures WHERE rule = 'stale_data'`, second.RunID); got != "warning|true" {
		t.Errorf("stale_data after a failed attempt: %s", got)
	}
	db.Close()
	// A threshold the data is older than: stale too.
	os.Rename(store+".gone", store)
	opts.StaleAfter = time.Nanosecond
	if _, err := pipeline.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	db = testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT is_stale || '|' || latest_attempt_failed || '|' || count(*) OVER () FROM current_runs`); got != "true|false|1" {
		t.Errorf("old data: %s", got)
	}
	if got := testkit.One(t, db, `SELECT text LIKE '%older than the staleness threshold%' FROM disclosures WHERE rule = 'stale_data'`); got != "true" {
		t.Errorf("stale_data for old data: %s", got)
	}
}

// health reports a changed activation key (compared with the warehouse)
// and a writer whose newest row is older than the threshold.
func TestHealthKeyChangeAndStaleness(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	if _, err := acrossRun(t, wh, pipeline.Installation{Name: "lab", Source: store}); err != nil {
		t.Fatal(err)
	}
	// The fixture's newest row is from 2026-08-12: 110 days before
	// 2026-11-30.
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC) }
	r, err := pipeline.CheckHealth(context.Background(), store, pipeline.HealthOptions{Warehouse: wh, Installation: "lab", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "stale" || r.LastObservedAgeHours == nil || *r.LastObservedAgeHours < 110*24 || r.StaleAfterHours != 36 {
		t.Errorf("110 days without a row: status %s, age %v, threshold %v", r.Status, r.LastObservedAgeHours, r.StaleAfterHours)
	}
	r, err = pipeline.CheckHealth(context.Background(), store, pipeline.HealthOptions{Warehouse: wh, Installation: "lab", Now: now, StaleAfter: 365 * 24 * time.Hour})
	if err != nil || r.Status != "healthy" {
		t.Errorf("within a year's threshold: %s %v", r.Status, err)
	}
	testkit.SQLiteExec(t, store, `UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	r, err = pipeline.CheckHealth(context.Background(), store, pipeline.HealthOptions{Warehouse: wh, Installation: "lab", Now: now})
	if err != nil || r.Status != "activation_key_changed" || len(r.KeyChanges) != 1 ||
		!strings.Contains(r.KeyChanges[0], `"2026-08-03T15:00:00.123456789Z"`) || !strings.Contains(r.KeyChanges[0], `"2026-08-05T00:00:00Z"`) {
		t.Errorf("changed key: %s %v %v", r.Status, r.KeyChanges, err)
	}
}

// The same across-runs rules on a PostgreSQL source: a session deleted
// between runs is archived and disclosed; a changed capture_since is an
// alarm; another database under the same name is refused.
func TestAcrossRunsPostgres(t *testing.T) {
	t.Parallel()
	dsn := copyToPostgres(t, testkit.Fixture(t, "fresh-activated.db"))
	wh := filepath.Join(t.TempDir(), "wh")
	run := func(in pipeline.Installation) (pipeline.Result, error) {
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: []pipeline.Installation{in}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res, res.Outcomes[0].Err
	}
	first, err := run(pipeline.Installation{Name: "team", Source: dsn})
	if err != nil {
		t.Fatal(err)
	}
	rows := pgRows(t, dsn, `SELECT s.id, (SELECT count(*) FROM task_session_turns WHERE task_session_id = s.id), (SELECT count(*) FROM task_session_subagents WHERE task_session_id = s.id)
		FROM task_sessions s WHERE (SELECT count(*) FROM task_session_subagents WHERE task_session_id = s.id) > 1 ORDER BY s.id LIMIT 1`)
	p := strings.Split(rows[0], "|")
	session, turns, subagents := p[0], p[1], p[2]
	pgExec(t, dsn,
		`DELETE FROM task_session_subagents WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_session_messages WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_session_turns WHERE task_session_id = '`+session+`'`,
		`DELETE FROM task_sessions WHERE id = '`+session+`'`,
		`UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	second, err := run(pipeline.Installation{Name: "team", Source: dsn})
	if err != nil {
		t.Fatal(err)
	}
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT sessions_deleted || '|' || turns_deleted || '|' || subagent_rows_deleted || '|' || deleted_detected_run_id || '|' || last_seen_run_id FROM deletions`); got != "1|"+turns+"|"+subagents+"|"+second.RunID+"|"+first.RunID {
		t.Errorf("deletions on PostgreSQL: %s", got)
	}
	if got := testkit.One(t, db, `SELECT severity || '|' || (text LIKE '%"2026-08-05T00:00:00Z"%') FROM disclosures WHERE rule = 'activation_key_changed'`); got != "alarm|true" {
		t.Errorf("activation_key_changed on PostgreSQL: %s", got)
	}
	db.Close()
	other := copyToPostgres(t, testkit.Fixture(t, "upgraded-backfill.db"))
	if _, err := run(pipeline.Installation{Name: "team", Source: other}); !errors.Is(err, load.ErrSourceChanged) {
		t.Errorf("another database under the same name: %v", err)
	}
}
