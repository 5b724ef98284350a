package load

import "path/filepath"

// LockHolder reports whether a run holds the warehouse's lock, and what
// the holder wrote in it ("pid N"), without taking the lock and without
// creating anything: a warehouse with no lock file is not locked. It is
// for readers (status): a run still takes the lock with OpenWarehouse.
//
// The check tries a shared, non-blocking lock on a separate read-only open
// of the lock file and releases it at once. A run that starts within that
// instant (microseconds) finds the warehouse locked, as it would had
// another run held it: it waits with --wait, or exits with ErrLocked.
func LockHolder(dir string) (held bool, holder string, err error) {
	path := filepath.Join(dir, lockFile)
	held, err = lockHeld(path)
	if err != nil || !held {
		return false, "", err
	}
	return true, readHolder(path), nil
}
