package e2e_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
)

// The binding file cannot be written (permissions, which do not bind
// root, so through internal/seams.CreateFile) when a run must save it:
// here, to record a changed activation key. The run fails naming the file
// and the errno, the failure is recorded, the previous run stays served,
// and nothing is lost: the next run with a writable binding sees the
// change and records it. Serial: seams.CreateFile is one process-wide
// seam.
func TestUnwritableBindingFailsTheRunAndLosesNothing(t *testing.T) {
	store := testkit.CopyFixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	first := faultRun(t, wh, store)
	if first.Failed() {
		t.Fatal(first.Outcomes[0].Err)
	}
	testkit.SQLiteExec(t, store, `UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	binding := filepath.Join(wh, "_installations", "disk.json")
	t.Cleanup(seams.SetCreateFile(func(path string) (seams.File, error) {
		if strings.HasPrefix(path, binding) {
			return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EACCES}
		}
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}))
	second := faultRun(t, wh, store)
	err := second.Outcomes[0].Err
	if err == nil || !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), binding+".tmp") || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("run with an unwritable binding: %v", err)
	}
	if got := faultQuery(t, wh, `SELECT (SELECT run_id FROM current_runs) || '|' || (SELECT status FROM runs WHERE run_id = '`+second.RunID+`')`); got != first.RunID+"|failed" {
		t.Errorf("current run | the failed run's record = %s", got)
	}
	if b, err := load.ReadBinding(wh, "disk"); err != nil || len(b.KeyChanges) != 0 {
		t.Errorf("binding after the failed run: %+v, %v", b, err)
	}
	t.Cleanup(seams.SetCreateFile(func(path string) (seams.File, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}))
	third := faultRun(t, wh, store)
	b, err := load.ReadBinding(wh, "disk")
	if third.Failed() || err != nil || len(b.KeyChanges) != 1 || b.KeyChanges[0].SeenByRun != third.RunID || b.KeyChanges[0].PreviousRun != first.RunID {
		t.Errorf("the run after: %v; binding %+v, %v", third.Outcomes[0].Err, b, err)
	}
}
