//go:build unix && !linux

package pgtest

import "syscall"

// maxSocketPath is sizeof(sockaddr_un.sun_path) - 1 on macOS and the BSDs.
const maxSocketPath = 103

// sysProcAttr: see sysproc_linux.go. There is no parent-death signal here,
// so a test binary that dies without Stop can leave its server running.
func sysProcAttr(cred *credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

// processAlive reports whether pid exists (zombies included: there is no
// portable /proc here).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
