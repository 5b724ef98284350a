package offheap

import "golang.org/x/sys/unix"

// mapping is an anonymous private mapping, enlarged by mremap(2): in
// place when the address space after it is free, else moved by its page
// tables — never by copying its bytes.
type mapping struct{ b []byte }

func (m *mapping) mapped() bool { return m.b != nil }

// resize makes the mapping n bytes (n a multiple of the page size), its
// contents kept; false when the system refuses.
func (m *mapping) resize(n int) ([]byte, bool) {
	var b []byte
	var err error
	if m.b == nil {
		b, err = unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	} else {
		b, err = unix.Mremap(m.b, n, unix.MREMAP_MAYMOVE)
	}
	if err != nil {
		return nil, false
	}
	m.b = b
	return b, true
}

func (m *mapping) free() {
	if m.b != nil {
		_ = unix.Munmap(m.b)
		m.b = nil
	}
}
