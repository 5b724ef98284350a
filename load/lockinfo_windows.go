//go:build windows

package load

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows"
)

// lockHeld reports whether another handle holds openLock's lock. It opens
// path for reading without following a reparse point and never creates it
// (absent: not held).
func lockHeld(path string) (bool, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return false, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if info.FileAttributes&(windows.FILE_ATTRIBUTE_REPARSE_POINT|windows.FILE_ATTRIBUTE_DIRECTORY) != 0 {
		return false, fmt.Errorf("%s is a link or a directory: %w", path, errOutside)
	}
	var ol windows.Overlapped
	ol.OffsetHigh = lockOffsetHigh
	// A shared lock on the byte openLock locks exclusively.
	if err := windows.LockFileEx(h, windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol); err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	windows.UnlockFileEx(h, 0, 1, 0, &ol)
	return false, nil
}
