//go:build unix

package pgtest_test

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ownerUID is the file's owner.
func ownerUID(fi os.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}

// processExists reports whether pid is still there, and how it found out.
func processExists(pid int) (bool, string) {
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH), fmt.Sprintf("kill 0: %v", err)
}
