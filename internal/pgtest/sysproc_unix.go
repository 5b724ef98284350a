//go:build unix

package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// credential is what the server's child processes run as when the tests run
// as root.
type credential = syscall.Credential

// platformSupported: throwaway servers work on every Unix system.
func platformSupported() error { return nil }

// signalProcess sends sig to the process pid alone.
func signalProcess(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// killGroup sends SIGKILL to the process group pgid: the postmaster (or
// initdb) started by this package leads its own group (Setpgid), so this
// reaches its backends and bootstrap children too.
func killGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }

// serverCredential returns nil when not root, else the credentials of
// osUser, creating it as a system user if it does not exist.
func serverCredential(osUser string) (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(osUser)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return nil, fmt.Errorf("pgtest: look up user %q: %w", osUser, err)
		}
		out, uerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
			"--home-dir", "/var/lib/postgresql", "--shell", "/bin/sh", osUser).CombinedOutput()
		// A concurrent test binary may have created it meanwhile: look again.
		if u, err = user.Lookup(osUser); err != nil {
			return nil, fmt.Errorf("pgtest: running as root, and the user %q to run PostgreSQL as does not exist; useradd failed: %v %s",
				osUser, uerr, bytes.TrimSpace(out))
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: user %q uid %q: %w", osUser, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: user %q gid %q: %w", osUser, u.Gid, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("pgtest: user %q is root; PostgreSQL refuses to run as root", osUser)
	}
	// Groups: empty drops root's supplementary groups.
	return &credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// suspendProcess and resumeProcess stop and continue pid (Freeze).
func suspendProcess(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }
func resumeProcess(pid int) error  { return syscall.Kill(pid, syscall.SIGCONT) }
