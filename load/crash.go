package load

import (
	"os"
	"syscall"
)

// CrashEnv names a test-only crash point: when set to a step name, the
// process kills itself with SIGKILL on reaching that step, so crash-safety
// tests can stop a real run exactly there. Steps: "staged", "renamed
// <table>", "before manifest", "committed", "database built".
const CrashEnv = "KANDEV_EXTRACT_TEST_CRASH_AT"

// CrashPoint marks a step of a run.
func CrashPoint(step string) {
	if v := os.Getenv(CrashEnv); v != "" && v == step {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns: the signal is on its way
	}
}
