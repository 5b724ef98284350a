//go:build !linux

package main

// Outside Linux the bench leaves the page cache as it is
// (pagecache_linux.go).
func evictBinary(string) error   { return nil }
func prereadBinary(string) error { return nil }

const binaryStates = false
