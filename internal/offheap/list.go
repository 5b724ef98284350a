// Package offheap keeps large lists of plain values outside the Go heap.
//
// The message pass appends millions of small keys to a handful of lists
// whose length it cannot know in advance. In the Go heap each such list
// grows by copying into a fresh, larger array: about four times its final
// size is allocated, copied and faulted in, and the arrays it leaves are
// garbage the collector and the scavenger hand back to the system. On the
// 1M-row store that growth was ~1.8 s of a run's CPU (docs/benchmarks.md).
// Here, on Linux, a list lives in an anonymous mapping that mremap(2)
// enlarges in place or moves without copying a byte, pages are touched
// once, and Free returns them at once. Elsewhere it is a Go slice.
//
// Memory kept here is memory the Go runtime cannot see, so its soft limit
// is lowered by it while it is held (internal/memlimit): a run stays within
// the budget the limit was set for.
//
// The values must hold no pointers (checked when a list first grows): the
// collector does not scan this memory.
package offheap

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/kandev/kandev-extract/internal/memlimit"
)

// List is an append-only list of values of T, kept outside the Go heap
// where the platform allows. Its zero value is empty and ready to use; a
// List must not be copied once used, and must be freed (Free) when done.
type List[T any] struct {
	s     []T     // the values; its array is the mapping's, or a Go array
	m     mapping // the mapping (empty on the Go heap)
	taken int64   // bytes taken from the Go soft memory limit for the mapping
}

// growStep is the least a mapping grows by; it grows by an eighth of its
// size beyond that (mremap copies no values, so small steps cost little
// and leave little unused).
const growStep = 4 << 20

// Append adds v at the end of the list.
func (l *List[T]) Append(v T) {
	if len(l.s) == cap(l.s) {
		l.grow()
	}
	l.s = append(l.s, v)
}

// All is the list's values, to read, sort or compact in place (Truncate
// then keeps what Compact kept). The slice is valid until the next Append
// or Free.
func (l *List[T]) All() []T { return l.s }

// Len is the number of values.
func (l *List[T]) Len() int { return len(l.s) }

// Truncate keeps the first n values.
func (l *List[T]) Truncate(n int) { l.s = l.s[:n] }

// Free empties the list and gives its memory back to the system (a
// mapping) or to the collector (a Go array). Slices from All must not be
// used after.
func (l *List[T]) Free() {
	l.s = nil
	l.m.free()
	memlimit.Give(l.taken)
	l.taken = 0
}

func (l *List[T]) grow() {
	size := int(unsafe.Sizeof(*new(T)))
	if cap(l.s) == 0 {
		checkPlain(reflect.TypeFor[T]())
	}
	if size > 0 && !goHeapOnly && (l.m.mapped() || cap(l.s) == 0) {
		old := cap(l.s) * size
		n := pageAlign(max(old+growStep, old+old/8))
		if b, ok := l.m.resize(n); ok {
			// The limit is lowered by the whole mapping: its unused tail is
			// at most a step, touched only as the list fills it.
			if memlimit.Take(int64(len(b) - old)) {
				l.taken += int64(len(b) - old)
			}
			l.s = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)[:len(l.s)]
			return
		}
	}
	// On the Go heap: no mapping on this platform, or it failed (then the
	// values move to a Go array and the mapping goes).
	s := make([]T, len(l.s), max(256, 2*cap(l.s)))
	copy(s, l.s)
	l.s = s
	l.m.free()
	memlimit.Give(l.taken)
	l.taken = 0
}

// goHeapOnly keeps new lists on the Go heap, as on a platform without
// mremap (a test sets it).
var goHeapOnly = false

func pageAlign(n int) int { return (n + pageSize - 1) &^ (pageSize - 1) }

const pageSize = 64 << 10 // a multiple of every platform's page size

// checkPlain panics when values of t hold pointers: the collector would
// not see them in a mapping. It is a programming error, caught by the
// first append of any test that uses the list.
func checkPlain(t reflect.Type) {
	if hasPointers(t) {
		panic(fmt.Sprintf("offheap.List of %s: its values hold pointers", t))
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
