package load

import "os"

// CrashEnv names a test-only crash point: when set to a step name, the
// process kills itself on reaching that step (SIGKILL on Unix), so
// crash-safety tests can stop a real run exactly there. Steps: "staged",
// "renamed <table>", "before manifest", "committed", "database built",
// "database in place", "pruning".
const CrashEnv = "KANDEV_EXTRACT_TEST_CRASH_AT"

// CrashPoint marks a step of a run.
func CrashPoint(step string) {
	if v := os.Getenv(CrashEnv); v != "" && v == step {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		select {} // never returns: the kill is on its way
	}
}
