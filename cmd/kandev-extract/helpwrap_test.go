package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// helpWidth is the width the commands' long help is wrapped to.
const helpWidth = 76

// TestHelpIsWrappedEvenly fails on a ragged paragraph in any command's
// long help: a prose line over the width, or one that ends well short of
// it although the next line's first word would have fitted on it (left
// behind when a sentence is edited in place).
func TestHelpIsWrappedEvenly(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines := strings.Split(c.Long, "\n")
		for i, line := range lines {
			if n := len([]rune(line)); prose(line) && n > helpWidth+4 {
				t.Errorf("%q --help, line %d is %d characters long: %q", c.CommandPath(), i+1, n, line)
			}
		}
		for i := 0; i+1 < len(lines); i++ {
			line, next := lines[i], lines[i+1]
			if !prose(line) || !prose(next) || strings.HasSuffix(line, ":") {
				continue
			}
			first := strings.Fields(next)[0]
			if len([]rune(line))+1+len([]rune(first)) <= helpWidth-12 {
				t.Errorf("%q --help, line %d is ragged: %q could also hold %q", c.CommandPath(), i+1, line, first)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
}

// prose reports whether a help line is running text: not blank, not
// indented (examples, lists, tables).
func prose(line string) bool {
	return strings.TrimSpace(line) != "" && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t")
}

// A scheduled run waits for the warehouse lock by default and a run
// started by hand fails at once; each command's --help says its own.
func TestWaitDefaultsAsDocumented(t *testing.T) {
	t.Parallel()
	root := newRoot(io.Discard, io.Discard)
	for name, want := range map[string]string{"schedule": "30m0s", "run": "0s"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("wait")
		if f.Value.String() != want {
			t.Errorf("%s --wait is %s, want %s", name, f.Value, want)
		}
		if name == "schedule" && (f.DefValue != want || strings.Contains(f.Usage, "fail at once") || !strings.Contains(c.Long, "--wait (default 30m)")) {
			t.Errorf("schedule --help says --wait defaults to %q (%s)", f.DefValue, f.Usage)
		}
	}
}

// With JSON logs asked for (--log-format json, or the config's
// log_format), the error a command ends with is a JSON record like every
// other stderr line, with its exit status; with the default (auto) it
// stays the plain "kandev-extract: …" line.
func TestFailureIsAJSONRecordWithJSONLogs(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "kx.toml")
	if err := os.WriteFile(cfg, []byte("retention = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--log-format", "json", "--config", cfg}, 2, "retention"},
		{[]string{"run", "--log-format", "json", "-s", missing, "-w", filepath.Join(t.TempDir(), "wh"), "-i", "x"}, 1, "missing.db"},
		{[]string{"query", "--log-format", "json", "-w", t.TempDir(), "SELECT 1"}, 2, "no warehouse at"},
	} {
		_, errOut, code := cli(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
			t.Errorf("%v: the last stderr line is not JSON: %q", c.args, lines[len(lines)-1])
			continue
		}
		if code != c.code || rec["level"] != "ERROR" || rec["msg"] != "kandev-extract failed" || rec["exit_status"] != float64(c.code) ||
			!strings.Contains(fmt.Sprint(rec["err"]), c.want) || strings.Contains(errOut, "kandev-extract: ") {
			t.Errorf("%v: code %d, stderr %s", c.args, code, errOut)
		}
	}
	_, errOut, code := cli(t, "run", "--config", cfg)
	if code != 2 || !strings.HasPrefix(errOut, "kandev-extract: ") {
		t.Errorf("with the default log format: code %d, stderr %q", code, errOut)
	}
}

// check's text prints an error that spans lines (pgx's connection errors
// do) on one line.
func TestOneLine(t *testing.T) {
	t.Parallel()
	in := "failed to connect to `user=u database=k`:\n\thostname resolving error\r\n  x"
	if got, want := oneLine(in), "failed to connect to `user=u database=k`: hostname resolving error x"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}
