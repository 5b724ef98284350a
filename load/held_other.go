//go:build !windows

package load

// isHeldOpenOS is false: Linux and macOS let a file that another process
// holds open be renamed over and deleted (the reader keeps the old file).
func isHeldOpenOS(error) bool { return false }
