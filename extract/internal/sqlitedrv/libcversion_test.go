package sqlitedrv

import (
	"os/exec"
	"strings"
	"testing"
)

// This package calls modernc.org/libc directly, on handles
// modernc.org/sqlite made (Conn opens its own; DriverSnapshot reads the
// driver's): the two must be the
// versions that were built together. go.mod requires libc directly; this
// test fails when the libc the build selects is not the one the selected
// modernc.org/sqlite requires (say, a go get -u of one of them alone).
func TestLibcIsTheOneSQLiteRequires(t *testing.T) {
	list, err := exec.Command("go", "list", "-m", "modernc.org/sqlite", "modernc.org/libc").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	selected := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			selected[f[0]] = f[1]
		}
	}
	sqlite, libc := selected["modernc.org/sqlite"], selected["modernc.org/libc"]
	if sqlite == "" || libc == "" {
		t.Fatalf("modernc.org/sqlite %q, modernc.org/libc %q: not in the build list", sqlite, libc)
	}
	out, err := exec.Command("go", "mod", "graph").Output()
	if err != nil {
		t.Fatalf("go mod graph: %v", err)
	}
	prefix := "modernc.org/sqlite@" + sqlite + " modernc.org/libc@"
	for _, line := range strings.Split(string(out), "\n") {
		if want, ok := strings.CutPrefix(line, prefix); ok {
			if want != libc {
				t.Fatalf("modernc.org/sqlite %s requires modernc.org/libc %s; the build selects %s", sqlite, want, libc)
			}
			return
		}
	}
	t.Fatalf("go mod graph has no requirement of modernc.org/sqlite %s on modernc.org/libc", sqlite)
}
