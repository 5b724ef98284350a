package load

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Windows refuses to rename over, rename or delete a file that another
// process holds open without FILE_SHARE_DELETE, which is how DuckDB (its
// read-only sessions included), Excel, Power BI and most readers open
// files. Linux and macOS allow both: the reader keeps the old file. Every
// rename and delete of the warehouse goes through renameFile, removeFile
// and removeAllFiles, and every step treats a held file (isHeldOpen) as
// something to retry later, never as a failed run: see pending.go.

// HeldOpenEnv names a test-only list of absolute paths (separated by the
// system's path-list separator) that behave as if another process held them
// open on Windows: renaming them, renaming over them or deleting them (or a
// directory holding one) fails with an error isHeldOpen recognises. It lets
// the tests on Linux prove the Windows behaviour with real files and a real
// DuckDB; it is read at each operation and is never set in production.
const HeldOpenEnv = "KANDEV_EXTRACT_TEST_HELD_OPEN"

// errHeldOpen is the error of an operation on a path named in HeldOpenEnv.
var errHeldOpen = errors.New("the file is held open by another process (simulated: " + HeldOpenEnv + ")")

// isHeldOpen reports whether err says that another process holds the file
// open: on Windows ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION or
// ERROR_ACCESS_DENIED (which Windows also returns for a file being deleted
// while open, and which cannot be told apart from a permission refusal:
// either way the step is retried later); anywhere, the simulated one.
func isHeldOpen(err error) bool {
	return err != nil && (errors.Is(err, errHeldOpen) || isHeldOpenOS(err))
}

// heldPaths returns the paths HeldOpenEnv names.
func heldPaths() []string {
	v := os.Getenv(HeldOpenEnv)
	if v == "" {
		return nil
	}
	var out []string
	for _, p := range filepath.SplitList(v) {
		if p != "" {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// held reports whether path is, or (for a directory) holds, a path named
// in HeldOpenEnv.
func held(path string, tree bool) bool {
	path = filepath.Clean(path)
	for _, h := range heldPaths() {
		if h == path || tree && strings.HasPrefix(h, path+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

func heldErr(op, path string) error {
	return &os.PathError{Op: op, Path: path, Err: errHeldOpen}
}

// renameFile is os.Rename for the warehouse: it fails as Windows would when
// either name is held open (a directory: when it holds a held file).
var renameFile = func(from, to string) error {
	if held(from, true) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errHeldOpen}
	}
	if held(to, false) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errHeldOpen}
	}
	return os.Rename(from, to)
}

// removeFile is os.Remove for the warehouse.
var removeFile = func(path string) error {
	if held(path, false) {
		return heldErr("remove", path)
	}
	return os.Remove(path)
}

// removeAllFiles is os.RemoveAll for the warehouse. Like Windows, it
// removes what is not held and fails on what is.
var removeAllFiles = func(path string) error {
	hs := heldPaths()
	var inTree []string
	for _, h := range hs {
		if h == filepath.Clean(path) || strings.HasPrefix(h, filepath.Clean(path)+string(filepath.Separator)) {
			inTree = append(inTree, h)
		}
	}
	if len(inTree) == 0 {
		return os.RemoveAll(path)
	}
	// Remove every file that is not held, keep the held ones and their
	// directories.
	var firstErr error
	filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if held(p, false) {
			if firstErr == nil {
				firstErr = heldErr("unlinkat", p)
			}
			return nil
		}
		os.Remove(p)
		return nil
	})
	return firstErr
}

// uniqueID is a fresh, sortable, tool-derived name: UTC time to the
// nanosecond and 3 random bytes. New build and work directories get one,
// so a leftover that another process holds open never blocks a run.
func uniqueID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

// validID reports whether name has uniqueID's form (so a directory entry
// that is not one is never treated as ours).
func validID(name string) bool {
	if len(name) != len("20060102T150405.000000000Z")+7 || name[len(name)-7] != '-' {
		return false
	}
	if _, err := time.Parse("20060102T150405.000000000Z", name[:len(name)-7]); err != nil {
		return false
	}
	_, err := hex.DecodeString(name[len(name)-6:])
	return err == nil
}

// heldHint is appended to errors about a held file.
func heldHint(rel string) string {
	return fmt.Sprintf("%s is held open by another process (a DuckDB session, Excel, Power BI)", filepath.ToSlash(rel))
}
