//go:build !linux

package main

import "sync/atomic"

// sampleHWM: outside Linux the bench keeps wait4's figure (rusage_*.go).
func sampleHWM(_ int, stop <-chan struct{}, _ *atomic.Int64) { <-stop }
