package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// Helper processes for the tests below, run as a copy of this test binary.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("PGTEST_HELPER") {
	case "":
		t.Skip("helper for other tests")
	case "shared-missing":
		Shared(t)
		t.Log("not reached")
	case "unsupported":
		failOrSkip(t, platformSupportedOr(fmt.Errorf("pgtest: %w (simulated)", ErrUnsupported)))
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

// platformSupportedOr is this platform's refusal, or fallback where the
// platform is supported (so the skip path is exercised on Linux too).
func platformSupportedOr(fallback error) error {
	if err := platformSupported(); err != nil {
		return err
	}
	return fallback
}

// On a platform without throwaway servers (Windows) the PostgreSQL tests
// skip, in CI too: CI=true must not turn a platform limit into a failure.
// On Linux, where CI runs, platformSupported is nil, so nothing skips there
// for this reason (TestMissingBinariesSkipLocallyFailInCI covers the rest).
func TestUnsupportedPlatformSkipsEvenInCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			out, err := runHelper(t, "unsupported", "CI="+ci)
			if err != nil {
				t.Errorf("helper failed (%v), want a skip:\n%s", err, out)
			}
			for _, w := range []string{"--- SKIP: TestHelperProcess", "not supported on this operating system"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if runtime.GOOS == "windows" {
		if _, err := Start(t.Context(), Options{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Start on windows: %v, want ErrUnsupported", err)
		}
	} else if err := platformSupported(); err != nil {
		t.Errorf("platformSupported on %s: %v, want nil", runtime.GOOS, err)
	}
}
