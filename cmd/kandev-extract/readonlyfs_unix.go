//go:build unix

package main

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// readOnlyFS says when dir lies on a file system mounted read-only (a
// remount after disk errors, say): no run can write, or record that it
// failed, there. Lack of permission is not reported: a reader may lack it.
func readOnlyFS(dir string) error {
	if err := unix.Access(dir, unix.W_OK); errors.Is(err, unix.EROFS) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
