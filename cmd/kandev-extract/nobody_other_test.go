//go:build !unix

package main

import "os/exec"

// asNobody is a no-op where processes have no Unix credentials (the test
// that uses it runs as root only on Unix).
func asNobody(*exec.Cmd) {}
