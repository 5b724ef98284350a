package main

import (
	"strings"
	"testing"
)

// The floors split into the statements the tools time, and every
// capture_since is substituted.
func TestNaiveFloor(t *testing.T) {
	for _, c := range []struct {
		script string
		parts  map[string]int
	}{
		{floorSQLite, map[string]int{"dimension scans": 5, "subagent scan": 1, "writer health": 2}},
		{floorPostgres, map[string]int{"dimension scans": 6, "subagent scan": 1, "writer health": 2}},
	} {
		q := naiveFloor(c.script, "2026-01-02 03:04:05.000000")
		got := map[string]int{}
		for _, x := range q {
			got[x.Name]++
			if strings.Contains(x.SQL, "{{") || strings.Contains(x.SQL, "\n") {
				t.Errorf("statement not rendered: %s", x.SQL)
			}
			if x.Name == "writer health" && strings.Count(x.SQL, "'2026-01-02 03:04:05.000000'") != 2 {
				t.Errorf("health statement without the instant twice: %s", x.SQL)
			}
		}
		for k, v := range c.parts {
			if got[k] != v {
				t.Errorf("%s: %d statements, want %d (%v)", k, got[k], v, got)
			}
		}
	}
}
