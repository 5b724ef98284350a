//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr: see sysproc_linux.go. There is no parent-death signal here,
// so a test binary that dies without Stop can leave its server running.
func sysProcAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
