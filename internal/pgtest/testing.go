package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// InCI reports whether the CI environment variable is set to a true value.
// In CI a missing PostgreSQL is a failure, never a skip.
func InCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

var shared struct {
	once sync.Once
	mu   sync.Mutex
	c    *Cluster
	err  error
}

// Shared returns the test binary's shared cluster, starting it on first use.
// Stop it at the end with Main (or StopShared in your own TestMain);
// otherwise the server still dies with the test binary (parent-death
// signal) and the next Start removes its directory.
//
// Without PostgreSQL binaries it skips the test, or fails it when CI is set.
// On Windows (ErrUnsupported) it always skips.
// Tests sharing the cluster should each use their own database
// (NewDatabase).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		c, err := Start(context.Background(), Options{Logf: t.Logf})
		if c != nil {
			c.logf = func(string, ...any) {} // t.Logf is invalid once t ends
		}
		shared.mu.Lock()
		shared.c, shared.err = c, err
		shared.mu.Unlock()
	})
	shared.mu.Lock()
	c, err := shared.c, shared.err
	shared.mu.Unlock()
	if err != nil {
		failOrSkip(t, err)
	}
	if c == nil {
		t.Fatal("pgtest: Shared called after StopShared")
	}
	return c
}

// StopShared stops the shared cluster if it was started.
func StopShared() error {
	shared.mu.Lock()
	c := shared.c
	shared.c = nil
	shared.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Stop()
}

// Main runs the package's tests and then stops the shared cluster:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// A failure to stop it cleanly fails the run.
func Main(m *testing.M) {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// New starts a private cluster for one test and stops it in t.Cleanup,
// which also runs when the test fails or panics. Missing binaries: as Shared.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		failOrSkip(t, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: stop: %v", err)
		}
	})
	return c
}

func failOrSkip(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("skipping: %v", err)
	}
	if errors.Is(err, ErrNotInstalled) {
		if InCI() {
			t.Fatalf("%v\n(CI is set, so a missing PostgreSQL fails instead of skipping; .ci/run installs it)", err)
		}
		t.Skipf("skipping: %v", err)
	}
	t.Fatal(err)
}

var dbSeq atomic.Int64

// NewDatabase creates a database with a unique name derived from the test's
// name in c, with the contents of the plain-format dump at dumpPath (empty:
// an empty database), and returns its name (use c.DSN(name)). Errors fail t.
//
// The first call for a dump loads it into a template database
// (pgtest_tpl_N, connections disallowed); every call then copies that
// template with CREATE DATABASE ... TEMPLATE, which is several times faster
// than running psql again. Each database is an independent copy.
func NewDatabase(t testing.TB, c *Cluster, dumpPath string) string {
	t.Helper()
	ctx := context.Background()
	name := databaseName(dbSeq.Add(1), t.Name())
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if dumpPath != "" {
		tpl, err := c.dumpTemplate(ctx, dumpPath)
		if err != nil {
			t.Fatal(err)
		}
		stmt += " TEMPLATE " + pgx.Identifier{tpl}.Sanitize()
	}
	if err := c.Exec(ctx, "postgres", stmt); err != nil {
		t.Fatalf("pgtest: create database %q: %v", name, err)
	}
	return name
}

type templateKey struct {
	path  string
	size  int64
	mtime time.Time
}

type dumpTemplate struct {
	once sync.Once
	name string
	err  error
}

// dumpTemplate returns the name of a template database holding the dump,
// loading it on first use (concurrent callers wait for that load).
func (c *Cluster) dumpTemplate(ctx context.Context, dumpPath string) (string, error) {
	abs, err := filepath.Abs(dumpPath)
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("pgtest: load dump: %w", err)
	}
	key := templateKey{abs, fi.Size(), fi.ModTime()}
	c.tplMu.Lock()
	if c.templates == nil {
		c.templates = map[templateKey]*dumpTemplate{}
	}
	tpl, ok := c.templates[key]
	if !ok {
		tpl = &dumpTemplate{name: fmt.Sprintf("pgtest_tpl_%d", len(c.templates)+1)}
		c.templates[key] = tpl
	}
	c.tplMu.Unlock()
	tpl.once.Do(func() {
		start := time.Now()
		if tpl.err = c.CreateDatabase(ctx, tpl.name); tpl.err != nil {
			return
		}
		if tpl.err = c.LoadDump(ctx, tpl.name, abs); tpl.err != nil {
			return
		}
		// A session connected to a template makes copying it fail.
		tpl.err = c.Exec(ctx, "postgres", "ALTER DATABASE "+pgx.Identifier{tpl.name}.Sanitize()+" ALLOW_CONNECTIONS false")
		c.logf("pgtest: loaded %s into template %s in %s", abs, tpl.name, time.Since(start).Round(time.Millisecond))
	})
	return tpl.name, tpl.err
}

// databaseName is "t<seq>_<test name in [a-z0-9_]>", at most 63 bytes.
func databaseName(seq int64, testName string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "t%d_", seq)
	for _, r := range strings.ToLower(testName) {
		if b.Len() >= 63 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// FixturesEnv overrides the fixtures directory FixturesDir finds.
const FixturesEnv = "KANDEV_FIXTURES"

// FixturesDir locates the real Kandev stores the tests load: $KANDEV_FIXTURES
// if set, else testdata/kandev of the module root, the first directory
// holding go.mod walking up from the working directory (a test's package
// directory). The fixtures are part of the repository, so a clone anywhere
// finds them.
func FixturesDir() (string, error) {
	if d := os.Getenv(FixturesEnv); d != "" {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("pgtest: %s=%s is not a directory", FixturesEnv, d)
		}
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	return fixturesDirFrom(wd)
}

// fixturesDirFrom is FixturesDir's walk up from dir to the module root.
func fixturesDirFrom(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			fix := filepath.Join(d, "testdata", "kandev")
			if fi, err := os.Stat(fix); err != nil || !fi.IsDir() {
				return "", fmt.Errorf("pgtest: module root %s has no testdata/kandev directory; set %s", d, FixturesEnv)
			}
			return fix, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("pgtest: no go.mod found walking up from %s; set %s", dir, FixturesEnv)
		}
	}
}

// Fixture returns the path of a file in FixturesDir, failing t if the
// directory or file is missing (fixtures are part of the checkout, so this
// fails rather than skips, in CI and locally alike).
func Fixture(t testing.TB, name string) string {
	t.Helper()
	dir, err := FixturesDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("pgtest: fixture: %v", err)
	}
	return p
}

// Freeze stops process pid — a backend (pg_backend_pid()) or the
// postmaster (Cluster.PID) — with SIGSTOP: a server that stops answering
// without closing anything, which no server-side timeout can see. The
// returned func resumes it (SIGCONT); t.Cleanup resumes it too, so a failing
// test never leaves a stopped server behind. Unix only: on Windows (where
// no cluster starts anyway) it skips t.
func Freeze(t testing.TB, pid int) (resume func()) {
	t.Helper()
	if err := suspendProcess(pid); err != nil {
		if errors.Is(err, ErrUnsupported) {
			t.Skipf("skipping: %v", err)
		}
		t.Fatalf("pgtest: freeze %d: %v", pid, err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = resumeProcess(pid) }) }
	t.Cleanup(resume)
	return resume
}
