package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestParseVersionAndRestrictSupport(t *testing.T) {
	tests := []struct {
		in       string
		want     version
		restrict bool
	}{
		{"psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", version{15, 18}, true},
		{"psql (PostgreSQL) 15.13", version{15, 13}, false},
		{"psql (PostgreSQL) 15.14", version{15, 14}, true},
		{"psql (PostgreSQL) 16.9", version{16, 9}, false},
		{"psql (PostgreSQL) 16.10", version{16, 10}, true},
		{"psql (PostgreSQL) 17.6", version{17, 6}, true},
		{"psql (PostgreSQL) 14.18", version{14, 18}, false},
		{"psql (PostgreSQL) 13.22", version{13, 22}, true},
		{"psql (PostgreSQL) 12.22", version{12, 22}, false},
		{"psql (PostgreSQL) 18.0", version{18, 0}, true},
		{"psql (PostgreSQL) 19devel", version{19, 0}, true},
		{"psql (PostgreSQL) 9.6.24", version{9, 6}, false},
		{"15", version{15, 0}, false},
	}
	for _, tc := range tests {
		got := parseVersion(tc.in)
		if got != tc.want {
			t.Errorf("parseVersion(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if r := understandsRestrict(got); r != tc.restrict {
			t.Errorf("understandsRestrict(%v) = %v, want %v", got, r, tc.restrict)
		}
	}
}

func TestStripRestrict(t *testing.T) {
	in := "--\n\\restrict abcKEY\n\nSET x = 1;\n" +
		"COPY public.t (a) FROM stdin;\n\\restrict-looking row\n\\restrict data row\n\\.\n" +
		"SELECT 1;\n\\restrictive_not_a_command\n\\unrestrict abcKEY\n"
	want := "--\n\nSET x = 1;\n" +
		"COPY public.t (a) FROM stdin;\n\\restrict-looking row\n\\restrict data row\n\\.\n" +
		"SELECT 1;\n\\restrictive_not_a_command\n"
	var out bytes.Buffer
	n, err := stripRestrict(&out, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want || n != 2 {
		t.Errorf("stripRestrict dropped %d lines, got\n%s\nwant 2 lines dropped, got\n%s", n, got, want)
	}

	// The real fixtures: exactly the first \restrict and last \unrestrict go.
	for _, name := range []string{"fresh-activated.pg.sql", "upgraded-backfill.pg.sql"} {
		path := Fixture(t, name)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		n, err := stripRestrict(&out, bytes.NewReader(orig))
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 || bytes.Contains(out.Bytes(), []byte("\n\\restrict ")) || bytes.Contains(out.Bytes(), []byte("\n\\unrestrict ")) {
			t.Errorf("%s: dropped %d lines, want 2 and none left", name, n)
		}
		if got, want := bytes.Count(out.Bytes(), []byte("\n")), bytes.Count(orig, []byte("\n"))-2; got != want {
			t.Errorf("%s: %d lines after stripping, want %d", name, got, want)
		}
	}
}

// The path taken with a psql older than 15.14 (this machine's is newer, so
// force it).
func TestLoadDumpStrippedCopy(t *testing.T) {
	c := Shared(t)
	db := NewDatabase(t, c, "")
	start := time.Now()
	if err := c.loadDump(t.Context(), db, Fixture(t, "upgraded-backfill.pg.sql"), true); err != nil {
		t.Fatal(err)
	}
	t.Logf("stripped load took %s", time.Since(start).Round(time.Millisecond))
	conn, err := pgx.Connect(t.Context(), c.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	var since string
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM task_session_subagents),
		(SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since')`).Scan(&n, &since); err != nil {
		t.Fatal(err)
	}
	if n != 51 || since != "2026-11-30T06:38:08.285997307Z" {
		t.Errorf("subagents, capture_since = %d, %q; want 51, 2026-11-30T06:38:08.285997307Z", n, since)
	}
	entries, _ := filepath.Glob(filepath.Join(c.Dir(), "dump-*.sql"))
	if len(entries) != 0 {
		t.Errorf("stripped copies left behind: %v", entries)
	}
}

func TestLoadDumpErrorStops(t *testing.T) {
	c := Shared(t)
	db := NewDatabase(t, c, "")
	bad := filepath.Join(t.TempDir(), "bad.sql")
	if err := os.WriteFile(bad, []byte("CREATE TABLE ok (x int);\nSELECT no_such_column FROM ok;\nCREATE TABLE never (x int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := c.LoadDump(t.Context(), db, bad)
	if err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Fatalf("LoadDump error = %v, want psql's message about no_such_column", err)
	}
	var exists bool
	conn, cerr := pgx.Connect(t.Context(), c.DSN(db))
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass('public.never') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Error("statements after the error ran: ON_ERROR_STOP not in effect")
	}
}

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

// FixturesDir finds the repository's own testdata/kandev (two levels up
// from this package), whatever directory the clone sits in.
func TestFixturesDir(t *testing.T) {
	t.Setenv(FixturesEnv, "")
	d, err := FixturesDir()
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Abs(filepath.Join("..", "..", "testdata", "kandev"))
	if err != nil {
		t.Fatal(err)
	}
	if d != want {
		t.Errorf("FixturesDir() = %s, want %s", d, want)
	}
	for _, name := range []string{"fresh-activated.pg.sql", "upgraded-backfill.pg.sql", "SHA256SUMS"} {
		if _, err := os.Stat(filepath.Join(d, name)); err != nil {
			t.Errorf("fixture %s: %v", name, err)
		}
	}

	other := t.TempDir()
	t.Setenv(FixturesEnv, other)
	if got, err := FixturesDir(); err != nil || got != other {
		t.Errorf("with %s=%s: %q, %v", FixturesEnv, other, got, err)
	}
	t.Setenv(FixturesEnv, filepath.Join(other, "missing"))
	if _, err := FixturesDir(); err == nil {
		t.Error("missing KANDEV_FIXTURES dir: no error")
	}
}

// The walk stops at the first go.mod: a nested module root without
// testdata/kandev is an error naming it, and no go.mod at all is an error.
func TestFixturesDirFrom(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := fixturesDirFrom(deep); err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Errorf("no go.mod above %s: err = %v", deep, err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fixturesDirFrom(deep); err == nil || !strings.Contains(err.Error(), "no testdata/kandev") {
		t.Errorf("module root without fixtures: err = %v", err)
	}
	fix := filepath.Join(root, "testdata", "kandev")
	if err := os.MkdirAll(fix, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{root, deep} {
		if got, err := fixturesDirFrom(from); err != nil || got != fix {
			t.Errorf("fixturesDirFrom(%s) = %q, %v; want %s", from, got, err, fix)
		}
	}
}

func TestDatabaseName(t *testing.T) {
	tests := []struct {
		seq  int64
		name string
		want string
	}{
		{1, "TestX/sub case", "t1_testx_sub_case"},
		{12, strings.Repeat("A", 100), "t12_" + strings.Repeat("a", 59)},
	}
	for _, tc := range tests {
		if got := databaseName(tc.seq, tc.name); got != tc.want {
			t.Errorf("databaseName(%d, %q) = %q, want %q", tc.seq, tc.name, got, tc.want)
		}
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

// Helper processes for the tests below, run as a copy of this test binary.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("PGTEST_HELPER") {
	case "":
		t.Skip("helper for other tests")
	case "shared-missing":
		Shared(t)
		t.Log("not reached")
	case "shared-panic", "new-panic":
		var c *Cluster
		if os.Getenv("PGTEST_HELPER") == "new-panic" {
			c = New(t, Options{})
		} else {
			c = Shared(t)
		}
		fmt.Printf("PGTEST pid=%d dir=%s\n", c.PID(), c.Dir())
		os.Stdout.Sync()
		panic("deliberate panic with a running cluster")
	}
}

func runHelper(t *testing.T, mode string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"PGTEST_HELPER=" + mode}, env...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
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
func groupAlive(pgid int) bool {
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
