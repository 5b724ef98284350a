package releaseconfig

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const workflow = ".github/workflows/release.yml"

var matrixEntry = regexp.MustCompile(`(?m)^\s*- \{ os: ([\w.-]+), goos: (\w+), goarch: (\w+), shell: (?:"[^"]*"|\w+) \}\s*$`)

// The matrix builds every platform the DuckDB bindings exist for, each on
// a runner of its own kind.
func TestMatrix(t *testing.T) {
	wf := read(t, workflow)
	if strings.Contains(wf, "\t") {
		t.Error("the workflow contains a tab: YAML indents with spaces only")
	}
	got := map[string]string{}
	for _, m := range matrixEntry.FindAllStringSubmatch(wf, -1) {
		platform := m[2] + "/" + m[3]
		if prev, dup := got[platform]; dup {
			t.Errorf("%s is built twice (%s, %s)", platform, prev, m[1])
		}
		got[platform] = m[1]
	}
	for platform, runner := range map[string]string{
		"linux/amd64": "ubuntu", "linux/arm64": "ubuntu", "darwin/arm64": "macos",
		"darwin/amd64": "macos", "windows/amd64": "windows",
	} {
		if !strings.HasPrefix(got[platform], runner) {
			t.Errorf("%s: runner %q, want a %s runner", platform, got[platform], runner)
		}
	}
	if len(got) != 5 {
		t.Errorf("matrix has %d platforms (%v), want the 5 above", len(got), got)
	}
}

// The version stamp is the Makefile's (the workflow asks make for VERSION
// and LDFLAGS), the binary is stripped, and each archive gets a checksum.
func TestStampStripChecksum(t *testing.T) {
	wf := read(t, workflow)
	mk := read(t, "Makefile")
	for _, want := range []string{"print-VERSION", "print-LDFLAGS", `-ldflags "-s -w $ldflags"`, "sha256", "tags: [\"v*\"]"} {
		if !strings.Contains(wf, want) {
			t.Errorf("the workflow lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^VERSION\s*\?=`).MatchString(mk) {
		t.Error("the Makefile no longer defines VERSION")
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS\s*:?=\s*-X ([\w./-]+)\.(\w+)=\$\(VERSION\)\s*$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile's LDFLAGS is not `-X <package>.<var>=$(VERSION)`")
	}
	pkg, name := m[1], m[2]
	dir, ok := strings.CutPrefix(pkg, "github.com/kandev/kandev-extract/")
	if !ok {
		t.Fatalf("LDFLAGS stamps %s, outside this module", pkg)
	}
	found := false
	files, _ := filepath.Glob(filepath.Join(root(t), filepath.FromSlash(dir), "*.go"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !strings.HasSuffix(f, "_test.go") && regexp.MustCompile(`(?m)^var `+name+` = "`).Match(b) {
			found = true
		}
	}
	if !found {
		t.Errorf("LDFLAGS stamps %s.%s, which is not a string variable there", pkg, name)
	}
}

// Every package the workflow tests and every file it copies exists.
func TestNamedPathsExist(t *testing.T) {
	wf := read(t, workflow)
	r := root(t)
	var testLines []string
	for _, l := range strings.Split(wf, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "go test ") || (len(testLines) > 0 && strings.HasSuffix(testLines[len(testLines)-1], `\`)) {
			testLines = append(testLines, l)
		}
	}
	n := 0
	for _, l := range testLines {
		for _, f := range strings.Fields(l) {
			p, ok := strings.CutPrefix(f, "./")
			if !ok {
				continue
			}
			n++
			p = strings.TrimSuffix(p, "/...")
			files, _ := filepath.Glob(filepath.Join(r, filepath.FromSlash(p), "*.go"))
			if len(files) == 0 {
				t.Errorf("the workflow tests %s, which holds no Go package", f)
			}
		}
	}
	if n < 5 {
		t.Errorf("found %d packages on the workflow's go test lines; the test no longer reads them", n)
	}
	copied := regexp.MustCompile(`(?m)^\s*cp (?:-R )?(.+) "dist/`)
	for _, m := range copied.FindAllStringSubmatch(wf, -1) {
		for _, f := range strings.Fields(m[1]) {
			if _, err := os.Stat(filepath.Join(r, filepath.FromSlash(f))); err != nil {
				t.Errorf("the workflow copies %s into the archive: %v", f, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(r, "testdata", "kandev", "fresh-activated.db")); err != nil || !strings.Contains(wf, `testdata\kandev\fresh-activated.db`) {
		t.Errorf("the Windows smoke test's fixture: %v", err)
	}
}
