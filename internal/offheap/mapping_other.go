//go:build !linux

package offheap

// mapping is empty where mremap(2) is not available: lists are Go slices.
type mapping struct{}

func (m *mapping) mapped() bool              { return false }
func (m *mapping) resize(int) ([]byte, bool) { return nil, false }
func (m *mapping) free()                     {}
