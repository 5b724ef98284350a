package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Store text cannot reach the page as bidi or other control characters.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"Explore":                   "Explore",
		"ab\u202Ecd":                "ab⟦U+202E⟧cd",
		"\u2066x\u2069":             "⟦U+2066⟧x⟦U+2069⟧",
		"a\u200Fb\u061Cc\u200Ed":    "a⟦U+200F⟧b⟦U+061C⟧c⟦U+200E⟧d",
		"nul\x00bell\x07esc\x1b":    "nul⟦U+0000⟧bell⟦U+0007⟧esc⟦U+001B⟧",
		"tab\tnewline\n":            "tab\tnewline\n",
		"שלום":                      "שלום",
		"bad \xff utf-8":            "bad \uFFFD utf-8",
		"<b>&'\"\u202Dx</b>":        "<b>&'\"⟦U+202D⟧x</b>",
		"c1 \u0085 control \u009b!": "c1 ⟦U+0085⟧ control ⟦U+009B⟧!",
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
	if got := string(storeHTML("<x>\u202E")); got != "<bdi>&lt;x&gt;⟦U+202E⟧</bdi>" {
		t.Errorf("storeHTML = %q", got)
	}
}

func TestNumbers(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 24000: "24,000", 1234567: "1,234,567", -5000: "-5,000", 2.5: "2.50", 1234.6: "1,235"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{1: "1 session", 1.5: "1.50 sessions", 0: "0 sessions", 2: "2 sessions", 0.999: "1.00 sessions"} {
		if got := numOf(v, "session", "sessions"); got != want {
			t.Errorf("numOf(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{2500: "2,500", 12500: "12.5k", 250000: "250k", 1250000: "1.25M"} {
		if got := tick(v); got != want {
			t.Errorf("tick(%v) = %q, want %q", v, got, want)
		}
	}
	for _, m := range []float64{0, 0.4, 1, 3, 7.5, 8000, 24000, 1234567} {
		ticks := niceTicks(m)
		if ticks[0] != 0 || ticks[len(ticks)-1] < m || len(ticks) > 7 {
			t.Errorf("niceTicks(%v) = %v", m, ticks)
		}
	}
}

// Ids stay unique whatever the installation names.
func TestIDsUnique(t *testing.T) {
	d := &Data{GeneratedAt: time.Now()}
	for _, id := range []string{"a-b", "a_b", "a b", "a-b-fanout", "a", "a-2"} {
		d.Installations = append(d.Installations, &Installation{ID: id, Served: true,
			Disclosures: []Disclosure{{Rule: "stale_data", Severity: "warning", Text: "x"}, {Rule: "stale_data", Severity: "warning", Text: "y"}}})
	}
	var b bytes.Buffer
	if err := Render(&b, d); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(b.String(), -1) {
		if seen[m[1]] {
			t.Errorf("id %q twice", m[1])
		}
		seen[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(b.String(), -1) {
		if !seen[m[1]] {
			t.Errorf("link to #%s, which the page does not have", m[1])
		}
	}
	if strings.Count(b.String(), `<figure id=`) != 6*6 {
		t.Errorf("%d figures", strings.Count(b.String(), `<figure id=`))
	}
}
