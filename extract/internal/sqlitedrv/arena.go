package sqlitedrv

import "unsafe"

// textArena holds the TEXT values copied out of SQLite: many values to
// one allocation instead of one each (the allocations and the collector's
// work for them were a tenth of a 1M-row run's CPU). A chunk is never
// written again once handed out, and is freed by the collector when no
// value in it is referenced any more: so whatever keeps a value beyond
// its row (a map keeping an id) keeps a copy (strings.Clone), not the
// chunk with other rows' values in it.
type textArena struct {
	chunks chunkedStrings
	hdrs   []string // the headers of the values handed out as any (box)
}

// chunkedStrings copies strings into shared chunks of arenaChunk bytes:
// one allocation per chunk instead of one per string, and no rounding up
// to an allocation size class (a 36-byte id takes 36 bytes, not 48). A
// value over arenaMaxValue gets an allocation of its own.
type chunkedStrings struct{ buf []byte }

const (
	arenaChunk    = 64 << 10
	arenaMaxValue = 4 << 10 // larger values get an allocation of their own
)

func appendChunked[T ~string | ~[]byte](c *chunkedStrings, src T) string {
	n := len(src)
	if n > arenaMaxValue {
		b := make([]byte, n)
		copy(b, src)
		return unsafe.String(unsafe.SliceData(b), n)
	}
	if n == 0 {
		return ""
	}
	if cap(c.buf)-len(c.buf) < n {
		c.buf = make([]byte, 0, arenaChunk)
	}
	off := len(c.buf)
	c.buf = append(c.buf, src...)
	return unsafe.String(&c.buf[off], n)
}

func (a *textArena) copy(p uintptr, n int) string {
	return appendChunked(&a.chunks, unsafe.Slice((*byte)(cPointer(p)), n))
}

// box returns s as an interface value without the allocation any(s)
// makes for the string header (a sixth of the reading's CPU with the
// collector's share): the header is kept in a slab of headers, which the
// interface points into as any(s) points to its own copy.
// TestLiteConnValuesOutliveRows reads values back through it.
func (a *textArena) box(s string) any {
	if len(a.hdrs) == cap(a.hdrs) {
		a.hdrs = make([]string, 0, arenaHeaders)
	}
	a.hdrs = append(a.hdrs, s)
	return boxAt(&a.hdrs[len(a.hdrs)-1])
}

// boxAt is the interface value holding the string at h, pointing to h as
// any(s) points to its own copy of the header. The layout used is the
// runtime's for every interface (a type word and a data word).
func boxAt(h *string) any {
	v := emptyInterface{typ: stringType, data: unsafe.Pointer(h)}
	return *(*any)(unsafe.Pointer(&v))
}

const arenaHeaders = 1024

// emptyInterface is the layout of an interface value (any).
type emptyInterface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// stringType is the type word of an interface holding a string.
var stringType = func() unsafe.Pointer {
	var v any = "type word"
	return (*emptyInterface)(unsafe.Pointer(&v)).typ
}()
