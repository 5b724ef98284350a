package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// How an executable's pages came into the page cache changes how much of it
// a process maps: on the bench machine (Linux 6.18, ext4) a binary read
// sequentially — just linked by go build, copied, or read by any other
// program — sits in large folios, each mapped whole on the first touch, and
// kandev-extract then has ~90 MiB of its own file resident; the same file
// faulted in from disk by the process itself, ~50 MiB
// (docs/benchmarks.md, change 42). Every timed process starts from the
// second state, the state of a binary a nightly job runs from disk; one
// extra run per SQLite store measures the first (prereadBinary).

// evictBinary drops path's pages from the page cache (clean pages only;
// nothing is lost), so the next exec faults in what it touches.
func evictBinary(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// prereadBinary drops path's pages, then reads the file through once, as
// a copy or the linker would leave it.
func prereadBinary(path string) error {
	if err := evictBinary(path); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

const binaryStates = true
