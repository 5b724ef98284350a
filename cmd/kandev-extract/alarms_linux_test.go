package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tmpfs mounts a file system of its own for a test (root only; CI runs as
// root, and there the test must not skip).
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
			t.Skipf("mounting a tmpfs needs root (%v); skipped locally, runs under CI=true", err)
		}
		t.Fatalf("mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// remount changes a test's tmpfs: its size, or read-only.
func remount(t *testing.T, dir string, flags uintptr, data string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|flags, data); err != nil {
		t.Fatalf("remount %s (%s): %v", dir, data, err)
	}
}

// fill writes a file until the disk is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// On a full disk every run fails (exit 1) and the previous data stays
// served; status says so, from what could still be recorded: a run whose
// Parquet committed but whose database rebuild failed, then failures whose
// manifests could not be written (the pre-allocated journal), then a
// read-only remount where nothing can be written. With room again the next
// run commits and status is clean, the failed nights still listed.
func TestFullDiskFailuresAreRecorded(t *testing.T) {
	t.Parallel()
	root := tmpfs(t, "64m")
	wh := filepath.Join(root, "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	run := func() (string, string, int) {
		return cli(t, "run", "-s", src, "-w", wh, "-i", "disk", "--log-format", "text")
	}
	if out, errOut, code := run(); code != 0 {
		t.Fatalf("first run: code %d\n%s%s", code, out, errOut)
	}
	first, _ := statusOf(t, wh)
	served := first.CurrentRun.RunID

	// Room for a run's Parquet files, not for a second warehouse.duckdb.
	var fs syscall.Statfs_t
	if err := syscall.Statfs(root, &fs); err != nil {
		t.Fatal(err)
	}
	used := (fs.Blocks - fs.Bfree) * uint64(fs.Bsize)
	remount(t, root, 0, "size="+strconv.FormatUint(used+1<<20, 10))
	out, errOut, code := run()
	st, scode := statusOf(t, wh)
	committed := st.LatestAttempt.RunID
	if want := "run committed; warehouse.duckdb still serves run " + served + "; will rebuild next run"; code != 1 || !strings.Contains(out, want) ||
		!strings.Contains(errOut, "No space left on device") {
		t.Errorf("run whose rebuild failed: code %d, summary lacks %q\n%s%s", code, want, out, errOut)
	}
	if b := st.DatabaseBehind; scode != 1 || st.ExitStatus != 1 || b == nil || b.CommittedRun != committed || committed == served ||
		b.ServesRun != served || b.Error == nil || !strings.Contains(*b.Error, "No space left on device") ||
		st.LatestAttempt.Status != "committed" || st.LatestAttempt.RecordedIn != inManifest || st.LatestAttemptFailed || st.CurrentRun.RunID != served {
		t.Errorf("status after the failed rebuild: code %d, %+v, behind %+v", scode, st.LatestAttempt, st.DatabaseBehind)
	}

	// Nothing fits any more, not even a failure's manifest: four nights.
	filler := filepath.Join(root, "filler")
	fill(t, filler)
	for night := range 4 {
		if out, errOut, code := run(); code != 1 || !strings.Contains(errOut, "no space left on device") {
			t.Fatalf("night %d on a full disk: code %d\n%s%s", night, code, out, errOut)
		}
	}
	st, scode = statusOf(t, wh)
	journaled := 0
	for _, r := range st.Runs {
		if r.RecordedIn == inJournal && r.Status == "failed" && r.Error != nil && strings.Contains(*r.Error, "no space left on device") {
			journaled++
		}
	}
	if la := st.LatestAttempt; scode != 1 || !st.LatestAttemptFailed || la.Status != "failed" || la.RecordedIn != inJournal ||
		la.Error == nil || !strings.Contains(*la.Error, "no space left on device") || journaled != 4 || st.CurrentRun.RunID != served {
		t.Errorf("status after four full nights: code %d, latest %+v, %d journaled failures, current %+v", scode, la, journaled, st.CurrentRun)
	}
	if out, _, code := cli(t, "query", "-w", wh, "-f", "csv", "SELECT count(*) AS n FROM subagent_contexts"); code != 0 || out != "n\n253\n" {
		t.Errorf("the served data: code %d, %q", code, out)
	}

	// Remounted read-only: the run cannot even lock; status says why its
	// view may miss failures.
	remount(t, root, syscall.MS_RDONLY, "")
	if _, errOut, code := run(); code != 1 || !strings.Contains(errOut, filepath.Join(wh, ".lock")) || !strings.Contains(errOut, "read-only file system") {
		t.Errorf("run on a read-only warehouse: code %d\n%s", code, errOut)
	}
	if st, scode = statusOf(t, wh); scode != 1 || st.WarehouseReadOnly == nil || !strings.Contains(*st.WarehouseReadOnly, "read-only file system") {
		t.Errorf("status on a read-only warehouse: code %d, %v", scode, st.WarehouseReadOnly)
	}

	// Room again.
	remount(t, root, 0, "size=64m")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := run(); code != 0 {
		t.Fatalf("run with room again: code %d\n%s%s", code, out, errOut)
	}
	st, scode = statusOf(t, wh)
	journaled = 0
	for _, r := range st.Runs {
		if r.RecordedIn == inJournal {
			journaled++
		}
	}
	if scode != 0 || st.LatestAttemptFailed || st.DatabaseBehind != nil || st.WarehouseReadOnly != nil || st.LatestAttempt.RecordedIn != inDatabase ||
		st.CurrentRun.RunID == served || journaled != 4 {
		t.Errorf("status with room again: code %d, latest %+v, behind %+v, %d journaled failures listed", scode, st.LatestAttempt, st.DatabaseBehind, journaled)
	}
}
