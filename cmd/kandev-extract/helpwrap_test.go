package main

import (
	"io"
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
