//go:build !unix

package main

import "os"

// maxRSS: Windows reports no peak memory for a finished child in its
// ProcessState, so the bench reports 0 there.
func maxRSS(*os.ProcessState) int64 { return 0 }
