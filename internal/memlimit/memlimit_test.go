package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
)

// Take lowers the limit while the Go heap keeps at least half of it, Give
// raises it back, and holders released in any order restore it exactly.
// (Not parallel: it sets the process's limit.)
func TestTakeAndGive(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const mib = 1 << 20
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	debug.SetMemoryLimit(160 * mib)
	if !Take(64 * mib) {
		t.Fatal("64 MiB of 160 not taken")
	}
	if got := limit(); got != 96*mib {
		t.Fatalf("limit %d MiB after taking 64, want 96", got/mib)
	}
	if !Take(16 * mib) {
		t.Fatal("16 more MiB (80 of 160) not taken")
	}
	if Take(1) {
		t.Fatal("a byte beyond half of 160 MiB taken")
	}
	if got := limit(); got != 80*mib {
		t.Fatalf("limit %d MiB, want 80", got/mib)
	}
	Give(64 * mib) // out of order
	if got := limit(); got != 144*mib {
		t.Fatalf("limit %d MiB after giving 64 back, want 144", got/mib)
	}
	Give(16 * mib)
	if got := limit(); got != 160*mib {
		t.Fatalf("limit %d MiB after giving everything back, want 160", got/mib)
	}

	debug.SetMemoryLimit(100 * mib)
	if Take(64 * mib) {
		t.Fatal("64 MiB of a 100 MiB limit taken: more than half")
	}
	if got := limit(); got != 100*mib {
		t.Fatalf("limit %d MiB, want it left at 100", got/mib)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if Take(mib) {
		t.Fatal("taken from no limit")
	}
	if got := limit(); got != math.MaxInt64 {
		t.Fatalf("no limit became %d", got)
	}
	Give(0)
	if held != 0 {
		t.Fatalf("held %d after everything was given back", held)
	}
}
