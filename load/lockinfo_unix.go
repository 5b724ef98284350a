//go:build unix

package load

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockHeld reports whether another open of path holds openLock's lock. It
// opens path read-only without following a symbolic link and never
// creates it (absent: not held).
func lockHeld(path string) (bool, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return false, nil
		case errors.Is(err, unix.ELOOP):
			return false, fmt.Errorf("%s is a symbolic link: %w", path, errOutside)
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file: %w", path, errOutside)
	}
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	unix.Flock(fd, unix.LOCK_UN)
	return false, nil
}
