//go:build !linux

package extract

// readAheadVFS is the VFS the bulk reads open the store with: the default
// one here (the read-ahead of readahead_linux.go was measured on Linux only).
func readAheadVFS() string { return "" }
