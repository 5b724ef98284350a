package transform

import (
	"strings"
	"testing"
)

// TestStepAtStartMatchesDecoded: the fast path for Kandev's own form says
// what decoding the JSON says, on that form and on everything near it.
func TestStepAtStartMatchesDecoded(t *testing.T) {
	steps := []string{"d12672d8-4b11-4dee-a6e8-d7e7f13f0cf5", "", "a", "é", "\xff", "a\"b", `a\"b`, `a\\b`, "a\tb", "a\x00b", `\u0041`, "\u2028", " ", "null"}
	forms := []func(string) string{
		func(s string) string { return stepObjectPrefix + s + `"}` },
		func(s string) string { return " " + stepObjectPrefix + s + `"}` },
		func(s string) string { return stepObjectPrefix + s + `"} ` },
		func(s string) string { return stepObjectPrefix + s + `","other":1}` },
		func(s string) string { return stepObjectPrefix + s + `"}}` },
		func(s string) string { return stepObjectPrefix + s + `"` },
		func(s string) string { return `{"workflow_step_id_at_start": "` + s + `"}` },
		func(s string) string { return `{"Workflow_step_id_at_start":"` + s + `"}` },
		func(s string) string { return stepObjectPrefix + s + `","workflow_step_id_at_start":"x"}` },
	}
	fast := 0
	for _, step := range steps {
		for i, form := range forms {
			in := form(step)
			got, gotOK, gotProblem := StepAtStart(in)
			want, wantOK, wantProblem := stepAtStartDecoded(in, true)
			if got != want || gotOK != wantOK || gotProblem != wantProblem {
				t.Errorf("form %d, step %q: %q %v %q, decoded %q %v %q", i, step, got, gotOK, gotProblem, want, wantOK, wantProblem)
			}
			if _, plain := plainStepObject(in); plain {
				fast++
			}
		}
	}
	if fast < 3 {
		t.Errorf("only %d inputs took the fast path: the test does not exercise it", fast)
	}
	if _, plain := plainStepObject(strings.Repeat("x", 5)); plain {
		t.Error("a short string is Kandev's form")
	}
}
