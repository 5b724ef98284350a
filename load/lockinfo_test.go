package load

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestLockHolderReadsWithoutTakingOrCreating(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// No lock file: not held, and none is created.
	if held, who, err := LockHolder(dir); held || who != "" || err != nil {
		t.Errorf("no lock file: %v %q %v", held, who, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, lockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LockHolder created the lock file: %v", err)
	}
	w, err := OpenWarehouse(dir)
	if err != nil {
		t.Fatal(err)
	}
	held, who, err := LockHolder(dir)
	want := "pid " + strconv.Itoa(os.Getpid())
	if runtime.GOOS == "windows" {
		want = "unknown" // the holder's lock covers the bytes that name it
	}
	if !held || who != want || err != nil {
		t.Errorf("held: %v %q %v, want true %q", held, who, err, want)
	}
	// The holder keeps it: another run cannot take it.
	if _, err := OpenWarehouse(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("a second OpenWarehouse while held: %v", err)
	}
	w.Close()
	if held, _, err := LockHolder(dir); held || err != nil {
		t.Errorf("released: %v %v", held, err)
	}
	// LockHolder left the lock free.
	w, err = OpenWarehouse(dir)
	if err != nil {
		t.Fatalf("after LockHolder: %v", err)
	}
	w.Close()
}

func TestLockHolderRefusesALinkedLockFile(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need a privilege on Windows")
	}
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere")
	os.WriteFile(target, []byte("pid 1\n"), 0o644)
	if err := os.Symlink(target, filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	if held, _, err := LockHolder(dir); held || !errors.Is(err, errOutside) {
		t.Errorf("linked lock file: %v %v", held, err)
	}
}
