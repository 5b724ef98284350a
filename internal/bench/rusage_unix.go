//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is the finished child's peak resident set in bytes (0 if unknown).
// getrusage's ru_maxrss is in KiB on Linux and the BSDs, in bytes on macOS.
func maxRSS(st *os.ProcessState) int64 {
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
