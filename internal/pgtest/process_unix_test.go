//go:build unix

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests in this file drive fake PostgreSQL programs (shell scripts) and
// real server processes through signals and process groups: Unix only.

func writeExec(t *testing.T, path, script string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// publicTempDir is a temp dir the unprivileged server user can read (when
// running as root, t.TempDir's 0700 parents are not).
func publicTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "pgtest-fake-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFindBinaries(t *testing.T) {
	root := publicTempDir(t)
	mk := func(dir string, names ...string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			writeExec(t, filepath.Join(dir, n), "exit 0\n")
		}
		return dir
	}
	lib := filepath.Join(root, "lib")
	mk(filepath.Join(lib, "9.6", "bin"), "initdb", "pg_ctl", "postgres", "psql")
	v15 := mk(filepath.Join(lib, "15", "bin"), "initdb", "pg_ctl", "postgres", "psql")
	mk(filepath.Join(lib, "16", "bin"), "initdb", "postgres", "psql") // no pg_ctl: client-only-ish
	partial := mk(filepath.Join(root, "partial"), "initdb")
	empty := mk(filepath.Join(root, "empty"))
	glob := filepath.Join(lib, "*", "bin")

	tests := []struct {
		name, pgBin, glob, path string
		wantInitdb              string
		wantErr                 bool
	}{
		{"highest complete lib dir wins, numerically", "", glob, empty, filepath.Join(v15, "initdb"), false},
		{"PG_BIN wins", v15, filepath.Join(root, "nothing", "*"), empty, filepath.Join(v15, "initdb"), false},
		{"PG_BIN incomplete is an error, no fallback", partial, glob, empty, "", true},
		{"PATH fallback", "", filepath.Join(root, "nothing", "*"), v15, filepath.Join(v15, "initdb"), false},
		{"nothing anywhere", "", filepath.Join(root, "nothing", "*"), empty, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			b, err := findBinaries(tc.pgBin, tc.glob)
			if tc.wantErr {
				if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install postgresql") {
					t.Fatalf("err = %v, want ErrNotInstalled with the install hint", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Initdb != tc.wantInitdb || b.Psql != filepath.Join(filepath.Dir(tc.wantInitdb), "psql") {
				t.Errorf("initdb, psql = %s, %s; want %s and psql beside it", b.Initdb, b.Psql, tc.wantInitdb)
			}
		})
	}
}

// A server that never becomes ready: Start gives up after StartTimeout with
// the log tail, kills the process and removes its directory.
func TestStartTimeoutIncludesLogTail(t *testing.T) {
	bin := publicTempDir(t)
	writeExec(t, filepath.Join(bin, "initdb"), `mkdir -p "$2" && : > "$2/postgresql.conf"`+"\n")
	writeExec(t, filepath.Join(bin, "pg_ctl"), "exit 0\n")
	writeExec(t, filepath.Join(bin, "postgres"), "echo 'FAKE: pretending to recover'; echo \"FAKE pid $$\"; exec sleep 60\n")
	base := publicTempDir(t)

	start := time.Now()
	c, err := Start(t.Context(), Options{BinDir: bin, BaseDir: base, StartTimeout: 1500 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded with a fake postgres")
	}
	for _, want := range []string{"did not accept connections within 1.5s", "FAKE: pretending to recover"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if elapsed > 10*time.Second {
		t.Errorf("Start took %s to give up, want about 1.5s", elapsed)
	}
	if m := regexp.MustCompile(`FAKE pid (\d+)`).FindStringSubmatch(err.Error()); m == nil {
		t.Error("no fake pid in the log tail")
	} else if pid, _ := strconv.Atoi(m[1]); processAlive(pid) {
		t.Errorf("fake server %d still running after Start gave up", pid)
	}
	if left, _ := filepath.Glob(filepath.Join(base, "pgtest-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	t.Logf("error as reported:\n%v", err)
}

func TestMissingBinariesSkipLocallyFailInCI(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		ci       string
		wantExit bool // non-zero exit
		want     []string
	}{
		{"", false, []string{"--- SKIP: TestHelperProcess", "apt-get install postgresql", "PG_BIN"}},
		{"true", true, []string{"--- FAIL: TestHelperProcess", "CI is set", "apt-get install postgresql"}},
	}
	for _, tc := range tests {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			out, err := runHelper(t, "shared-missing", "CI="+tc.ci, "PG_BIN="+empty)
			if (err != nil) != tc.wantExit {
				t.Errorf("exit error %v, want non-zero exit %v\n%s", err, tc.wantExit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// groupAlive reports whether any live process is in process group pgid.
// Without /proc (macOS), kill(-pgid, 0) answers, zombies included.
func groupAlive(pgid int) bool {
	if runtime.GOOS != "linux" {
		err := syscall.Kill(-pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// A test binary that panics must not leave postgres running: with New the
// t.Cleanup stops the server and removes the directory; with Shared (no
// Stop reached) the parent-death signal takes the server down and the next
// Start sweeps the directory.
func TestNoServerOutlivesPanickingTestBinary(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		failOrSkip(t, err)
	}
	pidRE := regexp.MustCompile(`PGTEST pid=(\d+) dir=(\S+)`)
	tests := []struct {
		mode        string
		dirLeftOver bool
	}{
		{"new-panic", false},
		{"shared-panic", true},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.mode == "shared-panic" && runtime.GOOS != "linux" {
				// sysproc_unix_other.go: no parent-death signal, so the
				// shared server would outlive the helper (and this test).
				t.Skipf("%s has no parent-death signal: a Shared server outlives a test binary that dies without Stop", runtime.GOOS)
			}
			out, err := runHelper(t, tc.mode)
			if err == nil || !strings.Contains(out, "deliberate panic") {
				t.Fatalf("helper did not panic (err %v):\n%s", err, out)
			}
			m := pidRE.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no pid in helper output:\n%s", out)
			}
			pid, _ := strconv.Atoi(m[1])
			dir := m[2]
			deadline := time.Now().Add(15 * time.Second)
			for (processAlive(pid) || groupAlive(pid)) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if processAlive(pid) || groupAlive(pid) {
				t.Fatalf("postgres pid %d (or its backends) still running after the test binary died", pid)
			}
			_, statErr := os.Stat(dir)
			if left := statErr == nil; left != tc.dirLeftOver {
				t.Errorf("dir %s left over = %v, want %v", dir, left, tc.dirLeftOver)
			}
			if tc.dirLeftOver {
				sweepStale(filepath.Dir(dir))
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("sweepStale left %s (%v)", dir, err)
				}
			}
		})
	}
}

// sweepStale must not touch a live cluster's directory.
func TestSweepKeepsLiveClusters(t *testing.T) {
	c := Shared(t)
	sweepStale(filepath.Dir(c.Dir()))
	if _, err := os.Stat(filepath.Join(c.Dir(), "data", "PG_VERSION")); err != nil {
		t.Fatalf("sweep removed a live cluster: %v", err)
	}
	// A dir whose owner is gone but whose postmaster is alive stays too.
	d := publicTempDir(t)
	stale := filepath.Join(d, "pgtest-x")
	if err := os.MkdirAll(filepath.Join(stale, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	ns, _ := os.Readlink("/proc/self/ns/pid")
	os.WriteFile(filepath.Join(stale, ownerFile), []byte(fmt.Sprintf("999999999 %s\n", ns)), 0o644)
	os.WriteFile(filepath.Join(stale, "data", "postmaster.pid"), []byte(fmt.Sprintf("%d\n", c.PID())), 0o644)
	sweepStale(d)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("sweep removed a dir with a live postmaster: %v", err)
	}
	os.Remove(filepath.Join(stale, "data", "postmaster.pid"))
	sweepStale(d)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("sweep kept a dead owner's dir: %v", err)
	}
}
