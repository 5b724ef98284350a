package load

// SetRebuildMemoryLimit sets the memory limit of the first attempt of the
// rebuilds that follow, and returns what restores it (for the test that
// makes a rebuild run out of memory; not for parallel tests).
func SetRebuildMemoryLimit(limit string) (restore func()) {
	old := rebuildMemoryLimit
	rebuildMemoryLimit = limit
	return func() { rebuildMemoryLimit = old }
}
