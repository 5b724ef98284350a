package main

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// A store whose file and directory are not writable is still extracted,
// and left byte-identical with nothing created beside it, in either
// journal mode (a WAL-mode store as Kandev leaves it when it quits: no
// -wal or -shm beside it, which a usual read-only open would have to
// create). As root (CI), permissions do not bind root, so the run is made
// as the unprivileged user nobody.
func TestUnwritableStoreAndDirectory(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			unwritableStore(t, mode)
		})
	}
}

func unwritableStore(t *testing.T, journalMode string) {
	base, err := os.MkdirTemp("", "kx-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "store"), 0o755); os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	storeDir := filepath.Join(base, "store")
	os.Mkdir(storeDir, 0o755)
	store := filepath.Join(storeDir, "kandev.db")
	copyFile(t, repoFile(t, "testdata/kandev/upgraded-backfill.db"), store, 0o644)
	testkit.SQLiteExec(t, store, `PRAGMA journal_mode = `+journalMode)
	os.Chmod(store, 0o444)
	os.Chmod(storeDir, 0o555)
	wh := filepath.Join(base, "wh")
	home := filepath.Join(base, "home")
	os.Mkdir(wh, 0o755)
	os.Mkdir(home, 0o755)
	before := sum(t, store)

	bin := os.Args[0]
	cmd := exec.Command(bin, "run", "-s", store, "-w", wh, "-i", "ro")
	cmd.Env = append(os.Environ(), "KX_TEST_ROLE=cli", "HOME="+home, childRace())
	if os.Geteuid() == 0 {
		// nobody must be able to execute the test binary and write the warehouse.
		bin = filepath.Join(base, "kx")
		copyFile(t, os.Args[0], bin, 0o755)
		cmd.Path, cmd.Args[0] = bin, bin
		for _, d := range []string{wh, home} {
			os.Chown(d, 65534, 65534)
		}
		asNobody(cmd)
		// Prove the permissions bind this user: it cannot create a file there.
		probe := exec.Command("/bin/sh", "-c", "touch "+filepath.Join(storeDir, "probe"))
		probe.SysProcAttr = cmd.SysProcAttr
		if probe.Run() == nil {
			t.Fatal("the store directory is writable by the test user; the test proves nothing")
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run on an unwritable store: %v\n%s", err, out)
	}
	if after := sum(t, store); after != before {
		t.Error("the store changed")
	}
	entries, _ := os.ReadDir(storeDir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("files beside the store: %s", strings.Join(names, ", "))
	}
	if got := queryCSV(t, wh, `SELECT count(*) FROM subagent_contexts`); got != "count_star()\n51\n" {
		t.Errorf("rows: %s", got)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	os.Chmod(to, mode)
}

func sum(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// A warehouse directory that becomes unwritable: the run fails (exit 1)
// naming the path and the errno, the previous run stays served, and
// status reports the failed attempt with its error. As root the runs are
// made as nobody, whom the permissions bind.
func TestUnwritableWarehouseDirectory(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "kx-rowh-")
	if err != nil {
		t.Fatal(err)
	}
	wh, home := filepath.Join(base, "wh"), filepath.Join(base, "home")
	t.Cleanup(func() { os.Chmod(wh, 0o755); os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	os.Mkdir(wh, 0o755)
	os.Mkdir(home, 0o755)
	store := filepath.Join(base, "kandev.db")
	copyFile(t, repoFile(t, "testdata/kandev/upgraded-backfill.db"), store, 0o644)
	bin := os.Args[0]
	if os.Geteuid() == 0 {
		bin = filepath.Join(base, "kx")
		copyFile(t, os.Args[0], bin, 0o755)
		for _, d := range []string{wh, home} {
			os.Chown(d, 65534, 65534)
		}
	}
	runAs := func() ([]byte, error) {
		cmd := exec.Command(bin, "run", "-s", store, "-w", wh, "-i", "team", "--log-format", "text")
		cmd.Env = append(os.Environ(), "KX_TEST_ROLE=cli", "HOME="+home, childRace())
		if os.Geteuid() == 0 {
			asNobody(cmd)
		}
		return cmd.CombinedOutput()
	}
	if out, err := runAs(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	if err := os.Chmod(wh, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		probe := exec.Command("/bin/sh", "-c", "touch "+filepath.Join(wh, "probe"))
		asNobody(probe)
		if probe.Run() == nil {
			t.Fatal("the warehouse is writable by the test user; the test proves nothing")
		}
	}
	out, err := runAs()
	if code, _ := exitStatus(err); code != 1 || !strings.Contains(string(out), wh) || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("run into an unwritable warehouse: exit %d, want 1 naming %s and the errno:\n%s", code, wh, out)
	}
	if got := queryCSV(t, wh, `SELECT count(*) FROM subagent_contexts`); got != "count_star()\n51\n" {
		t.Errorf("the previous run is not served: %s", got)
	}
	statusOut, _, code := cli(t, "status", "-w", wh, "--json")
	var st struct { // one installation: one object

		LatestAttemptFailed bool `json:"latest_attempt_failed"`
		LatestAttempt       struct {
			Status string
			Error  *string
		} `json:"latest_attempt"`
	}
	if err := json.Unmarshal([]byte(statusOut), &st); err != nil || code != 1 || !st.LatestAttemptFailed || st.LatestAttempt.Status != "failed" ||
		st.LatestAttempt.Error == nil || !strings.Contains(*st.LatestAttempt.Error, "permission denied") {
		t.Errorf("status --json after the failure: exit %d, %v\n%s", code, err, statusOut)
	}
}
