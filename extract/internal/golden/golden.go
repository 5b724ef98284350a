// Package golden checks rendered SQL against the files a reviewer reads
// (testdata/sql/<dialect>/<name>.sql beside a package's tests): the tests
// of extract (the scans) and of extract/evidence (the message pass) use it.
// `go test -run TestRenderedSQL -update` rewrites the files.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden SQL files")

// readable breaks the one-line scans at their select items and joins (the
// files are for reading; what runs is the unbroken text).
var readable = strings.NewReplacer(", CASE ", ",\n\tCASE ", ", COALESCE(", ",\n\tCOALESCE(", " LEFT JOIN ", "\nLEFT JOIN ",
	` FROM "`, "\nFROM \"")

// Check compares got, the SQL of name in dialect, with its file under
// testdata/sql/ (pkg names the package for the -update hint).
func Check(t *testing.T, pkg, dialect, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "sql", dialect, name+".sql")
	got = strings.TrimSpace(readable.Replace(got)) + "\n"
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s: the rendered SQL differs from %s (run `go test ./%s -run TestRenderedSQL -update` and review the diff)%s", name, path, pkg, firstDifference(string(want), got))
	}
}

// firstDifference names the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("\n  line %d, file:     %.300s\n  line %d, rendered: %.300s", i+1, a, i+1, b)
		}
	}
	return ""
}
