package demo

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "copy testdata/demo/kandev-demo.db here (after regenerating it with go test ./storegen -run TestDemoStoreUpToDate -update)")

func TestBundledIsTheRepositoryDemo(t *testing.T) {
	repo, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(FileName, repo, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Skip("copied; rebuild to embed it")
	}
	if !bytes.Equal(repo, Bytes()) {
		t.Fatalf("internal/demo/%s (%d bytes) differs from testdata/demo/%s (%d bytes): after regenerating the demo, run go test ./internal/demo -update",
			FileName, len(Bytes()), FileName, len(repo))
	}
	if len(repo) < 1<<20 {
		t.Errorf("demo store of %d bytes: not the reference population", len(repo))
	}
}

func TestPathWritesOnceAndRepairs(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	t.Setenv("LocalAppData", cache)
	want, err := Location()
	if err != nil {
		t.Fatal(err)
	}
	if Current(want) {
		t.Fatal("Current before anything was written")
	}
	p, err := Path()
	if err != nil || p != want {
		t.Fatalf("Path() = %q, %v; want %q", p, err, want)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o444 || fi.Size() != int64(len(Bytes())) {
		t.Fatalf("written demo: %v %v", fi, err)
	}
	// A second call does not rewrite a current file.
	if p2, err := Path(); err != nil || p2 != p {
		t.Fatal(p2, err)
	}
	fi2, _ := os.Stat(p)
	if !os.SameFile(fi, fi2) {
		t.Error("a current demo store was rewritten")
	}
	// A changed file is replaced with the bundled store.
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, []byte("SQLite format 3\x00 not the demo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Path(); err != nil || !Current(p) {
		t.Fatalf("changed demo store not repaired: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
