//go:build windows

package pgtest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Windows: Start refuses with ErrUnsupported before it touches anything.
// Running PostgreSQL there would need a different design throughout (no
// Unix-domain socket for the trust-authenticated helpers, no process groups
// or signals for the fast/immediate shutdown and clean-up, .exe names, a job
// object instead of the parent-death signal). The PostgreSQL tests run on
// Linux (CI) and macOS; the definitions below only keep the package, and
// every test that imports it, compiling.

const maxSocketPath = 107

// credential is never set on Windows (os.Geteuid is -1 there).
type credential struct{ Uid, Gid uint32 }

func platformSupported() error {
	return fmt.Errorf("pgtest: %w (windows: the test servers need Unix-domain sockets, process groups and signals; "+
		"the PostgreSQL tests run on Linux and macOS)", ErrUnsupported)
}

func serverCredential(string) (*credential, error) { return nil, nil }

func sysProcAttr(*credential, syscall.Signal) *syscall.SysProcAttr { return nil }

var errNoSignals = errors.New("pgtest: signals other than kill are not available on windows")

func signalProcess(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return errNoSignals
	}
	return killGroup(pid)
}

// killGroup kills the process alone: Windows has no process groups in the
// Unix sense.
func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}

// processAlive reports whether a process with this id can be opened.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

func suspendProcess(int) error {
	return fmt.Errorf("pgtest: Freeze: %w (windows has no SIGSTOP)", ErrUnsupported)
}
func resumeProcess(int) error { return nil }
