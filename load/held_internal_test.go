package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// isHeldOpen recognises the simulated refusal through any wrapping, and
// nothing else on this system: a permission error or a missing file is
// not "held open" (on Windows the OS codes are added, held_windows.go).
func TestIsHeldOpen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	t.Setenv(HeldOpenEnv, p)
	err := removeFile(p)
	if !isHeldOpen(err) || !isHeldOpen(fmt.Errorf("prune: %w", err)) {
		t.Errorf("simulated refusal not recognised: %v", err)
	}
	if _, serr := os.Stat(p); serr != nil {
		t.Errorf("the held file was removed: %v", serr)
	}
	if err := renameFile(filepath.Join(dir, "g"), p); !isHeldOpen(err) {
		t.Errorf("rename over a held file: %v", err)
	}
	if err := removeAllFiles(dir); !isHeldOpen(err) {
		t.Errorf("RemoveAll of a directory holding a held file: %v", err)
	}
	for _, e := range []error{nil, os.ErrPermission, os.ErrNotExist, errors.New("held open")} {
		if isHeldOpen(e) {
			t.Errorf("isHeldOpen(%v) = true", e)
		}
	}
	t.Setenv(HeldOpenEnv, "")
	if err := removeFile(p); err != nil {
		t.Errorf("released: %v", err)
	}
}

func TestUniqueIDs(t *testing.T) {
	now := time.Date(2026, 11, 30, 23, 0, 0, 5, time.UTC)
	a, b := uniqueID(now), uniqueID(now.Add(time.Nanosecond))
	if !validID(a) || !validID(b) || a >= b {
		t.Errorf("ids %q %q", a, b)
	}
	for _, bad := range []string{"", "x", "../20261130T230000.000000005Z-abcdef", "20261130T230000.000000005Z-abcdeg", a + "x"} {
		if validID(bad) {
			t.Errorf("validID(%q)", bad)
		}
	}
}
