//go:build !linux

package main

import (
	"os"
	"testing"
)

// openPTY skips the test: the tests open a pseudo-terminal the Linux way
// (/dev/ptmx).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	t.Skip("no pseudo-terminal for the tests on this system")
	return nil, nil
}
