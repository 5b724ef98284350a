package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/load"
)

// The test binary doubles as the real CLI (and as an analyst's reader
// process) when re-executed with KX_TEST_ROLE set, so these tests drive
// real processes: kill -9, signals, two runs at once, a reader holding the
// database open.
func TestMain(m *testing.M) {
	switch os.Getenv("KX_TEST_ROLE") {
	case "cli":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(exitCode(err, os.Stderr))
	case "reader":
		os.Exit(readerLoop(os.Args[1], os.Getenv("KX_READER_STOP")))
	}
	pgtest.Main(m)
}

// readerLoop holds warehouse.duckdb open read-only and queries until the
// stop file appears; it exits non-zero on any error.
func readerLoop(path, stopFile string) int {
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		fmt.Println("conn:", err)
		return 1
	}
	n := 0
	for {
		var c int
		if err := conn.QueryRowContext(context.Background(), `SELECT count(*) FROM subagent_contexts`).Scan(&c); err != nil {
			fmt.Println("query:", err)
			return 1
		}
		n++
		if _, err := os.Stat(stopFile); err == nil {
			fmt.Printf("queries=%d rows=%d\n", n, c)
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proc starts the CLI as a real process.
func proc(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "KX_TEST_ROLE=cli", "CI="+os.Getenv("CI"), childRace()), env...)
	return cmd
}

// childRace is the GORACE setting for a re-executed test binary. Under
// -race a process sleeps atexit_sleep_ms (1 s by default) before it exits,
// so that goroutines still running can report a race; the CLI's goroutines
// have all finished by then (a race they hit is reported as it happens and
// makes the exit status 66), and these tests start about a hundred
// processes. The caller's own GORACE options come after, so an explicit
// atexit_sleep_ms still wins.
func childRace() string {
	return strings.TrimSpace("GORACE=atexit_sleep_ms=0 " + os.Getenv("GORACE"))
}

func exitStatus(err error) (code int, signaled bool) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, true
		}
		return ee.ExitCode(), false
	}
	if err != nil {
		return -2, false
	}
	return 0, false
}

// snapshotState is what a reader of the warehouse sees.
func snapshotState(t *testing.T, wh string) string {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(wh, load.DatabaseFile)+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s []string
	for _, q := range []string{
		`SELECT string_agg(installation_id || ':' || run_id || ':' || status, ',' ORDER BY installation_id, run_id) FROM runs WHERE status = 'committed'`,
		`SELECT count(*) || '/' || count(DISTINCT task_session_id) || '/' || coalesce(sum(total_tokens), 0) FROM subagent_contexts`,
		`SELECT count(*) || '/' || sum(subagents_observed) FROM fanout_by_turn`,
		// Rules about what changed across runs (these tests alternate two
		// stores under one name, with --rebind) are left out.
		`SELECT string_agg(rule, ',' ORDER BY installation_id, rule) FROM disclosures WHERE rule NOT IN ('source_rebound', 'deletions', 'archived_rows')`,
	} {
		var v sql.NullString
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		s = append(s, v.String)
	}
	return strings.Join(s, " | ")
}

// assertClean checks a warehouse holds nothing a crash left behind.
func assertClean(t *testing.T, wh string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(wh, "_staging", "*")); len(m) != 0 {
		t.Errorf("staging leftovers: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(wh, load.DatabaseFile+".tmp*")); len(m) != 0 {
		t.Errorf("half-built database left: %v", m)
	}
	manifests, err := load.ReadManifests(wh)
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, m := range manifests {
		for _, f := range m.Files {
			claimed[filepath.Dir(filepath.Join(wh, f))] = true
		}
	}
	parts, _ := filepath.Glob(filepath.Join(wh, "*", "installation_id=*", "run_id=*"))
	for _, p := range parts {
		if !claimed[p] {
			t.Errorf("unclaimed partition: %s", p)
		}
	}
}

func TestCrashAtEveryPublishStepLeavesThePreviousRun(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	first := repoFile(t, "testdata/kandev/fresh-activated.db")
	second := repoFile(t, "testdata/kandev/upgraded-backfill.db")
	if out, err := proc(t, nil, "run", "-s", first, "-w", wh, "-i", "prod").CombinedOutput(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	base := snapshotState(t, wh)
	committed := 1
	for _, step := range []string{"staged", "renamed dim_session", "renamed fact_subagent_context", "before manifest", "committed", "database built"} {
		t.Run(step, func(t *testing.T) {
			before := snapshotState(t, wh)
			err := proc(t, []string{load.CrashEnv + "=" + step}, "run", "-s", second, "-w", wh, "-i", "prod", "--rebind").Run()
			if _, killed := exitStatus(err); !killed {
				t.Fatalf("process was not killed at %q: %v", step, err)
			}
			// Readers see exactly the previous state.
			if got := snapshotState(t, wh); got != before {
				t.Errorf("after a crash at %q readers see\n  %s\nwant\n  %s", step, got, before)
			}
			// The next run succeeds and cleans up.
			if out, err := proc(t, nil, "run", "-s", first, "-w", wh, "-i", "prod", "--rebind").CombinedOutput(); err != nil {
				t.Fatalf("run after crash: %v\n%s", err, out)
			}
			assertClean(t, wh)
			committed++
			if step == "committed" || step == "database built" {
				committed++ // its manifest was written: that run is committed
			}
			ms, _ := load.ReadManifests(wh)
			if len(ms) != committed {
				t.Errorf("%d runs recorded, want %d", len(ms), committed)
			}
			// Current data is the latest run's: the first store again.
			if got := snapshotState(t, wh); strings.SplitN(got, " | ", 2)[1] != strings.SplitN(base, " | ", 2)[1] {
				t.Errorf("current data %s, want %s", got, base)
			}
		})
	}
}

// A crash after the new warehouse.duckdb is in place (before or during
// retention) leaves a whole, readable database serving the new run; the
// next run finishes the pruning and cleans up.
func TestCrashAfterTheDatabaseIsInPlace(t *testing.T) {
	t.Parallel()
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	for _, step := range []string{"database in place", "pruning"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			wh := filepath.Join(t.TempDir(), "wh")
			if out, err := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod").CombinedOutput(); err != nil {
				t.Fatalf("first run: %v\n%s", err, out)
			}
			base := snapshotState(t, wh)
			err := proc(t, []string{load.CrashEnv + "=" + step}, "run", "-s", src, "-w", wh, "-i", "prod", "--retention", "1").Run()
			if _, killed := exitStatus(err); !killed {
				t.Fatalf("process was not killed at %q: %v", step, err)
			}
			ms, _ := load.ReadManifests(wh)
			if len(ms) != 2 {
				t.Fatalf("%d manifests after the crash, want 2 (nothing pruned yet)", len(ms))
			}
			got := snapshotState(t, wh)
			if !strings.Contains(got, ms[1].RunID) || strings.Contains(got, ms[0].RunID) {
				t.Errorf("after a crash at %q readers see %s: want the new run %s only (retention 1)", step, got, ms[1].RunID)
			}
			if strings.SplitN(got, " | ", 2)[1] != strings.SplitN(base, " | ", 2)[1] {
				t.Errorf("data %s, want %s", got, base)
			}
			if out, err := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod", "--retention", "1").CombinedOutput(); err != nil {
				t.Fatalf("run after crash: %v\n%s", err, out)
			}
			assertClean(t, wh)
			if ms, _ := load.ReadManifests(wh); len(ms) != 1 {
				t.Errorf("%d manifests after the next run, want 1", len(ms))
			}
			if _, err := os.Stat(filepath.Join(wh, "_build")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("_build left: %v", err)
			}
		})
	}
}

func TestRealSIGKILLMidRun(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	if out, err := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod").CombinedOutput(); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	base := snapshotState(t, wh)
	killed := 0
	for _, delay := range []time.Duration{30 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond, 400 * time.Millisecond} {
		cmd := proc(t, nil, "run", "-s", repoFile(t, "testdata/kandev/upgraded-backfill.db"), "-w", wh, "-i", "prod")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if _, sig := exitStatus(err); sig {
			killed++
			if got := snapshotState(t, wh); got != base {
				// A kill after the manifest commits the run; anything
				// earlier must leave the previous state.
				ms, _ := load.ReadManifests(wh)
				if len(ms) == 1 {
					t.Errorf("killed after %v: readers see %s, want %s", delay, got, base)
				}
			}
		}
		if out, err := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod").CombinedOutput(); err != nil {
			t.Fatalf("run after kill: %v\n%s", err, out)
		}
		assertClean(t, wh)
		base = snapshotState(t, wh)
	}
	if killed == 0 {
		t.Error("no run was killed mid-way: the delays are too long for this machine")
	}
}

func TestReaderHoldsDatabaseOpenDuringRuns(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	if _, _, code := cli(t, "run", "-s", src, "-w", wh, "-i", "prod"); code != 0 {
		t.Fatal("first run failed")
	}
	stop := filepath.Join(t.TempDir(), "stop")
	reader := exec.Command(os.Args[0], filepath.Join(wh, load.DatabaseFile))
	reader.Env = append(os.Environ(), "KX_TEST_ROLE=reader", "KX_READER_STOP="+stop, childRace())
	var out strings.Builder
	reader.Stdout = &out
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 2; i++ {
		if _, errOut, code := cli(t, "run", "-s", repoFile(t, "testdata/kandev/upgraded-backfill.db"), "-w", wh, "-i", "prod", "--rebind"); code != 0 {
			t.Fatalf("run %d while a reader holds the database: %s", i, errOut)
		}
	}
	os.WriteFile(stop, nil, 0o644)
	if err := reader.Wait(); err != nil {
		t.Fatalf("reader failed: %v: %s", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "queries=") {
		t.Errorf("reader output %q", out.String())
	}
	// A new reader sees the new data.
	if got := snapshotState(t, wh); !strings.Contains(got, "| 51/") {
		t.Errorf("after the runs: %s", got)
	}
}

func TestOnlyOneRunWritesAtATime(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	held, err := load.OpenWarehouse(wh)
	if err != nil {
		t.Fatal(err)
	}
	out, err := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod").CombinedOutput()
	if code, _ := exitStatus(err); code != exitLocked || !strings.Contains(string(out), "locked by another kandev-extract run") {
		t.Fatalf("locked warehouse: exit %d, %s", code, out)
	}
	// With --wait it waits for the lock, then runs.
	cmd := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod", "--wait", "20s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	held.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("--wait run: %v", err)
	}
	// Two real processes at once: every one that exits 0 committed, the
	// others exit 75, and nothing is corrupted.
	a := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod")
	b := proc(t, nil, "run", "-s", src, "-w", wh, "-i", "prod")
	a.Start()
	b.Start()
	ea, eb := a.Wait(), b.Wait()
	ca, _ := exitStatus(ea)
	cb, _ := exitStatus(eb)
	codes := []int{ca, cb}
	sort.Ints(codes)
	if !(codes[0] == 0 && (codes[1] == 0 || codes[1] == exitLocked)) {
		t.Fatalf("exit codes %v", codes)
	}
	ms, _ := load.ReadManifests(wh)
	want := 2
	if codes[1] == 0 {
		want = 3
	}
	if len(ms) != want {
		t.Errorf("%d runs recorded, want %d", len(ms), want)
	}
	assertClean(t, wh)
	snapshotState(t, wh)
}

func TestScheduleFiresHonoursTheLockAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/legacy-second-precision.db")
	cmd := proc(t, nil, "schedule", "-s", src, "-w", wh, "-i", "legacy", "--schedule", "@every 1s", "--wait", "0s")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				m = map[string]any{"msg": "NOT JSON: " + sc.Text()}
			}
			lines <- m
		}
		close(lines)
	}()
	waitFor := func(msg string, d time.Duration) map[string]any {
		deadline := time.After(d)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("schedule exited before %q", msg)
				}
				if s, _ := m["msg"].(string); strings.HasPrefix(s, "NOT JSON") {
					t.Errorf("log line is not JSON: %s", s)
				} else if s == msg {
					return m
				}
			case <-deadline:
				t.Fatalf("no %q within %v", msg, d)
			}
		}
	}
	// Each scheduled run logs its summary, as run does with JSON logs.
	if m := waitFor("run summary", 20*time.Second); m["installation"] != "legacy" || m["subagent_rows"] == nil {
		t.Errorf("scheduled run's summary: %v", m)
	}
	waitFor("scheduled run committed", 20*time.Second)
	// Hold the lock: the next tick must not write, and says why.
	held, err := load.OpenWarehouse(wh)
	if err != nil {
		t.Fatal(err)
	}
	m := waitFor("scheduled run failed", 20*time.Second)
	if !strings.Contains(fmt.Sprint(m["err"]), "locked") {
		t.Errorf("locked tick: %v", m)
	}
	held.Close()
	waitFor("scheduled run committed", 20*time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code, _ := exitStatus(err); code != 0 {
			t.Errorf("schedule exit %d after SIGTERM", code)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("schedule did not stop on SIGTERM")
	}
	assertClean(t, wh)
	ms, _ := load.ReadManifests(wh)
	if len(ms) < 2 {
		t.Errorf("%d runs recorded, want at least 2", len(ms))
	}
}

func pgExecCmd(t *testing.T, dsn, stmt string) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), stmt); err != nil {
		t.Fatal(err)
	}
}
