// Package demo bundles the demo Kandev store (testdata/demo/kandev-demo.db:
// the spec's reference population; see testdata/demo/README.md) into the
// binary, so `kandev-extract run` with no source works from any directory.
//
// kandev-demo.db here is a byte-identical copy of the repository's
// testdata/demo/kandev-demo.db (go:embed reads only files inside the
// package's directory); TestBundledIsTheRepositoryDemo keeps them equal,
// and storegen's TestDemoStoreUpToDate keeps that one equal to a fresh
// generation. Git stores the two as one blob.
package demo

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FileName is the demo store's file name.
const FileName = "kandev-demo.db"

//go:embed kandev-demo.db
var store []byte

// Bytes returns the bundled store (the caller must not modify it).
func Bytes() []byte { return store }

// Location is where Path writes the demo store: kandev-extract/kandev-demo.db
// in the user's cache directory ($XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows). It is always the
// same path, so the "demo" installation stays bound to one store across
// runs (and across upgrades that change the demo).
func Location() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the bundled demo store needs a cache directory to be written to: %w", err)
	}
	return filepath.Join(dir, "kandev-extract", FileName), nil
}

// Current reports whether the file at path holds the bundled store, byte
// for byte (a regular file, not a link).
func Current(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(store)) {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && bytes.Equal(b, store)
}

// Path returns Location, writing the bundled store there first (read-only,
// atomically: a temporary file renamed into place) when the file is
// missing or differs from it.
func Path() (string, error) {
	path, err := Location()
	if err != nil {
		return "", err
	}
	if Current(path) {
		return path, nil
	}
	if err := WriteTo(path); err != nil {
		return "", fmt.Errorf("write the bundled demo store to %s: %w", path, err)
	}
	return path, nil
}

// WriteTo writes the bundled store to path (mode 0444) through a temporary
// file in the same directory, renamed into place.
func WriteTo(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+FileName+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(store)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o444)
	}
	if err == nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.IsDir() {
			err = errors.New("a directory is in the way")
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
