//go:build windows

package pgtest_test

import "os"

// Windows never starts a cluster (pgtest.ErrUnsupported: the tests skip);
// these only keep pgtest_test.go compiling.

func ownerUID(os.FileInfo) (uint32, bool) { return 0, false }

func processExists(int) (bool, string) { return false, "not checked on windows" }
