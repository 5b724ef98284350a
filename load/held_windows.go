//go:build windows

package load

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isHeldOpenOS recognises Windows' refusals to rename or delete a file
// that another process holds open.
func isHeldOpenOS(err error) bool {
	return errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_LOCK_VIOLATION) ||
		errors.Is(err, windows.ERROR_ACCESS_DENIED)
}
