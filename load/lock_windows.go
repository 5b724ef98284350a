//go:build windows

package load

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockOffsetHigh places the locked byte far past the pid the file holds
// (offset 1<<40), so another process can still read who holds the lock.
const lockOffsetHigh = 1 << 8

// openLock opens (creating it if needed) the warehouse's lock file without
// following a reparse point (symbolic link or junction), and takes an
// exclusive, non-blocking LockFileEx lock. errLockHeld means another
// process holds it.
func openLock(path string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_ALWAYS,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(h), path)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		f.Close()
		return nil, err
	}
	if info.FileAttributes&(windows.FILE_ATTRIBUTE_REPARSE_POINT|windows.FILE_ATTRIBUTE_DIRECTORY) != 0 {
		f.Close()
		return nil, fmt.Errorf("%s is a link or a directory: %w", path, errOutside)
	}
	var ol windows.Overlapped
	ol.OffsetHigh = lockOffsetHigh
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol); err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, errLockHeld
		}
		return nil, err
	}
	return f, nil
}

// unlock releases the lock taken by openLock.
func unlock(f *os.File) {
	var ol windows.Overlapped
	ol.OffsetHigh = lockOffsetHigh
	windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
