package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/lake/laketest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestUsage: missing settings are usage errors (exit 2) that name what is
// missing; the catalog's password never appears in any output.
func TestUsage(t *testing.T) {
	t.Setenv("KANDEV_LAKE_BUCKET", "")
	t.Setenv("KANDEV_LAKE_CATALOG", "")
	for _, args := range [][]string{
		{"ingest"},
		{"maintain", "--bucket", "file:///tmp/x"},
		{"duckdb", "--catalog", "postgres://u@h/db"},
		{"publish", "--bucket", "file:///tmp/x"},
		{"ingest", "--no-such-flag"},
		{"no-such-command"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, stderr)
		}
	}
	code, _, stderr := runCLI(t, "ingest", "--bucket", "file://"+filepath.ToSlash(t.TempDir()),
		"--catalog", "postgres://kandev:hunter2@127.0.0.1:1/catalog?sslmode=disable&connect_timeout=1")
	if code != exitFailure || strings.Contains(stderr, "hunter2") {
		t.Errorf("unreachable catalog: exit %d, stderr %q", code, stderr)
	}
	if code, out, _ := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "kandev-lake ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// TestPublishIngestDuckDB: the commands a spoke and the hub run, in order,
// on a file:// bucket and the tests' PostgreSQL.
func TestPublishIngestDuckDB(t *testing.T) {
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, ""))
	bucket := "file://" + filepath.ToSlash(t.TempDir())
	wh := filepath.Join(t.TempDir(), "wh")
	m := laketest.Run(t, wh, "fresh-activated.db", "laptop-1")
	// A mistyped installation is a usage error naming the ones there are,
	// not "nothing to publish".
	code, out, stderr := runCLI(t, "publish", "--bucket", bucket, "--warehouse", wh, "--installation", "laptop-l")
	if code != exitUsage || !strings.Contains(stderr, `no run of installation "laptop-l" (it has laptop-1)`) {
		t.Errorf("publish of an unknown installation: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "publish", "--bucket", bucket, "--warehouse", wh, "--installation", "laptop-1")
	if code != 0 || !strings.Contains(out, "published laptop-1/"+m.RunID) {
		t.Fatalf("publish: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "ingest", "--bucket", bucket, "--catalog", dsn, "--maintain")
	if code != 0 || !strings.Contains(out, "ingested 1 run(s)") || !strings.Contains(out, "kandev.dim_task_history:") {
		t.Fatalf("ingest: %d %q %q", code, out, stderr)
	}
	if strings.Contains(stderr, c.DSN("")) {
		t.Error("the catalog DSN (with its password) was printed")
	}
	dir := t.TempDir()
	code, out, stderr = runCLI(t, "duckdb", "--bucket", bucket, "--catalog", dsn, "--out", dir)
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "warehouse.duckdb")) {
		t.Fatalf("duckdb: %d %q %q", code, out, stderr)
	}
}
