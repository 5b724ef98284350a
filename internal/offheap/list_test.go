package offheap

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

type pair struct {
	a uint64
	b uint32
}

// Two lists grown in turns (so the system must move one mapping or the
// other to enlarge it) keep every value in order, on a mapping and on
// the Go heap; Truncate keeps what an in-place Compact kept; Free empties.
func TestListKeepsItsValues(t *testing.T) {
	for _, heap := range []bool{false, true} {
		goHeapOnly = heap
		var x, y List[pair]
		const n = 1_500_000 // 24 MB each: several steps of growth
		for i := range n {
			x.Append(pair{uint64(i), uint32(i) * 3})
			y.Append(pair{uint64(n - i), uint32(i) / 2})
		}
		if x.Len() != n || y.Len() != n {
			t.Fatalf("heap %v: lengths %d and %d, want %d", heap, x.Len(), y.Len(), n)
		}
		for i, v := range x.All() {
			if v != (pair{uint64(i), uint32(i) * 3}) {
				t.Fatalf("heap %v: x[%d] = %v", heap, i, v)
			}
		}
		for i, v := range y.All() {
			if v != (pair{uint64(n - i), uint32(i) / 2}) {
				t.Fatalf("heap %v: y[%d] = %v", heap, i, v)
			}
		}
		// y's b repeats each value twice: compacting on b alone halves it.
		ys := y.All()
		y.Truncate(len(slices.CompactFunc(ys, func(p, q pair) bool { return p.b == q.b })))
		if y.Len() != n/2 || y.All()[7].b != 7 {
			t.Fatalf("heap %v: after Compact and Truncate %d values, [7].b = %d", heap, y.Len(), y.All()[7].b)
		}
		y.Append(pair{1, 2}) // appends after a Truncate overwrite the rest
		if got := y.All()[n/2]; got != (pair{1, 2}) || y.Len() != n/2+1 {
			t.Fatalf("heap %v: appended %v, length %d", heap, got, y.Len())
		}
		x.Free()
		y.Free()
		if x.Len() != 0 || x.All() != nil {
			t.Fatalf("heap %v: %d values after Free", heap, x.Len())
		}
		x.Append(pair{5, 5}) // a freed list is empty and usable again
		if x.Len() != 1 || x.All()[0] != (pair{5, 5}) {
			t.Fatalf("heap %v: a freed list took %v", heap, x.All())
		}
		x.Free()
	}
	goHeapOnly = false
}

// A mapped list lowers the Go soft memory limit by its mapping — at least
// what it holds, at most a growth step and an eighth more — and Free gives
// it back. On the Go heap, and where there is no mapping, the limit does
// not move. (Not parallel: it sets the process's limit.)
func TestListSharesTheMemoryLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer func() { goHeapOnly = false }()
	const limit = 1 << 30
	for _, heap := range []bool{false, true} {
		goHeapOnly = heap
		debug.SetMemoryLimit(limit)
		var l List[[4]uint64] // 32 bytes a value
		const n = 400_000     // 12.8 MB
		for i := range n {
			l.Append([4]uint64{uint64(i)})
		}
		taken := limit - debug.SetMemoryLimit(-1)
		held := int64(n * 32)
		if heap || runtime.GOOS != "linux" {
			if taken != 0 {
				t.Errorf("heap %v: the limit moved by %d bytes for a list on the Go heap", heap, taken)
			}
		} else if taken < held || taken > held+held/8+growStep+pageSize {
			t.Errorf("limit lowered by %d bytes for %d held in a mapping", taken, held)
		}
		l.Free()
		if got := debug.SetMemoryLimit(-1); got != limit {
			t.Errorf("heap %v: limit %d after Free, want %d", heap, got, limit)
		}
	}
}

// Values with pointers are refused at the first Append: the collector
// does not scan a mapping.
func TestListRefusesPointers(t *testing.T) {
	refused := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s accepted", name)
			}
		}()
		f()
	}
	refused("*int", func() { var l List[*int]; l.Append(nil) })
	refused("string", func() { var l List[string]; l.Append("") })
	refused("a struct with a slice", func() {
		var l List[struct {
			a int
			b []byte
		}]
		l.Append(struct {
			a int
			b []byte
		}{})
	})
	refused("an array of maps", func() { var l List[[2]map[int]int]; l.Append([2]map[int]int{}) })
	var ok List[struct {
		k [2]uint64
		f uint8
	}]
	ok.Append(struct {
		k [2]uint64
		f uint8
	}{})
	ok.Free()
}
