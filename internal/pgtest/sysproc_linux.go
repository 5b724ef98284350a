//go:build linux

package pgtest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxSocketPath is sizeof(sockaddr_un.sun_path) - 1 on Linux: the longest
// Unix-socket path PostgreSQL can listen on.
const maxSocketPath = 107

// sysProcAttr runs a child in its own process group (so a terminal's Ctrl-C
// reaches the test binary, which then stops the server in order) as cred
// (nil: the current user). When deathSig is non-zero the kernel sends it to
// the child when the thread that started it exits; startLocked keeps that
// thread alive for the child's lifetime, so in practice it fires when the
// test binary dies (panic, os.Exit, kill, go test -timeout) without having
// called Stop. Go sets PR_SET_PDEATHSIG after switching credentials, so the
// setting survives the switch to the postgres user.
func sysProcAttr(cred *credential, deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: deathSig}
}

// processAlive reports whether pid is a running (not zombie) process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	// Format: pid (comm) state ...; comm may contain spaces and parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
