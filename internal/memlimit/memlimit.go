// Package memlimit lowers the Go runtime's soft memory limit while memory
// the runtime cannot see is in use — DuckDB's, or lists kept outside the
// Go heap (internal/offheap) — and raises it again after, so that the two
// together stay within what the limit was set for.
//
// Every change is relative and made under one lock, so holders that come
// and go in any order (the message pass's lists, then DuckDB; tests that
// run passes at once) never undo each other's share.
package memlimit

import (
	"math"
	"runtime/debug"
	"sync"
)

var (
	mu   sync.Mutex
	held int64 // bytes taken from the limit and not yet given back
)

// Take lowers the soft memory limit by n bytes and reports whether it
// did. It does not when no limit is set (GOMEMLIMIT=off), or when what is
// held, n included, would be more than half of the limit as it was before
// anything was taken: the Go heap keeps at least half of it, and memory
// beyond that share is not taken from it.
func Take(n int64) bool {
	if n <= 0 {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 || 2*(held+n) > limit+held {
		return false
	}
	held += n
	debug.SetMemoryLimit(limit - n)
	return true
}

// Give raises the soft memory limit by n bytes that Take took.
func Give(n int64) {
	if n <= 0 {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	held -= n
	debug.SetMemoryLimit(debug.SetMemoryLimit(-1) + n)
}
