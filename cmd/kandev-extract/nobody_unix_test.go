//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// asNobody makes cmd run as the unprivileged user nobody (65534).
func asNobody(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
