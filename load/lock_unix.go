//go:build unix

package load

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openLock opens (creating it if needed) the warehouse's lock file without
// following a symbolic link, and takes an exclusive, non-blocking flock.
// errLockHeld means another process holds it.
func openLock(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: %w", path, errOutside)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file: %w", path, errOutside)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errLockHeld
		}
		return nil, err
	}
	return f, nil
}

// unlock releases the lock taken by openLock.
func unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
