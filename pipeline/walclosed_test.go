package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// A WAL-mode store with no connection open (read without locks, since a
// usual open would create -wal and -shm beside it) that is written while
// the run reads it: the run fails saying so, commits nothing, and the
// previous run stays current; the next run, undisturbed, commits the
// store as it is then.
func TestClosedWALStoreWrittenDuringTheRunCommitsNothing(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	testkit.SQLiteExec(t, store, `PRAGMA journal_mode = WAL`)
	wh := filepath.Join(t.TempDir(), "wh")
	opts := Options{Warehouse: wh, Installations: []Installation{{Name: "lab", Source: store}}}
	first, err := Run(context.Background(), opts)
	if err != nil || first.Failed() {
		t.Fatal(err, first.Outcomes)
	}
	written := false
	opts.Phase = func(installation, phase string) {
		if phase == PhaseDeletions && !written {
			written = true
			testkit.SQLiteExec(t, store, `UPDATE tasks SET state = 'kx-during'`)
		}
	}
	second, err := Run(context.Background(), opts)
	if err != nil || !second.Failed() || !written {
		t.Fatalf("the run over a store written meanwhile did not fail (written %v, error %v, failed %v)", written, err, second.Failed())
	}
	if msg := second.Outcomes[0].Err.Error(); !strings.Contains(msg, "the file changed while it was read") || !strings.Contains(msg, "run again") {
		t.Errorf("error %q does not say the store changed while it was read", msg)
	}
	db := testkit.Duck(t, wh)
	if got := testkit.One(t, db, `SELECT run_id || '|' || latest_attempt_failed FROM current_runs`); got != first.RunID+"|true" {
		t.Errorf("current after the refused snapshot: %s, want %s|true", got, first.RunID)
	}
	if got := testkit.One(t, db, `SELECT count(*) FROM dim_task WHERE state = 'kx-during'`); got != "0" {
		t.Errorf("%s tasks of the refused snapshot are current", got)
	}
	db.Close()
	entries, _ := os.ReadDir(filepath.Dir(store))
	if len(entries) != 1 {
		t.Errorf("%d files beside the store after the runs, want none", len(entries)-1)
	}

	opts.Phase = nil
	third, err := Run(context.Background(), opts)
	if err != nil || third.Failed() {
		t.Fatal(err, third.Outcomes)
	}
	db = testkit.Duck(t, wh)
	defer db.Close()
	if got := testkit.One(t, db, `SELECT (SELECT run_id FROM current_runs) = ? AND count(*) > 0 AND count(*) = count(*) FILTER (WHERE state = 'kx-during') FROM dim_task`, third.RunID); got != "true" {
		t.Errorf("the undisturbed run after it: %s", got)
	}
}
