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
// long help: a prose line that ends well short of the width although the
// next line's first word would have fitted on it (left behind when a
// sentence is edited in place).
func TestHelpIsWrappedEvenly(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines := strings.Split(c.Long, "\n")
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
