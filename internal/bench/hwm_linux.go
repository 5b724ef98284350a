package main

import (
	"bytes"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// sampleHWM records the child's own peak resident set (VmHWM of
// /proc/PID/status, in bytes) until stop is closed. Why not wait4's
// ru_maxrss alone: on Linux a child's ru_maxrss starts from its parent's
// peak at exec (exec_mmap carries the old mm's high-water mark into the
// process's maxrss, and Go's exec shares the parent's mm until then), so
// after the driver itself grew — making the pathological store holds
// 300 MB values — every child it timed reported the driver's 1.4 GiB.
// VmHWM is the exec'd image's own high-water mark; sampled every 10 ms it
// misses at most the growth of a child's last 10 ms.
func sampleHWM(pid int, stop <-chan struct{}, peak *atomic.Int64) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			if v := vmHWM(b); v > peak.Load() {
				peak.Store(v)
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// vmHWM parses the "VmHWM:  123 kB" line (0 when absent: a zombie has no
// memory left to report).
func vmHWM(status []byte) int64 {
	for _, line := range bytes.Split(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0
		}
		return n * 1024
	}
	return 0
}
