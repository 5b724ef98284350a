package report

import (
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/load"
)

// The banner of current data says when a healthy writer's newest
// subagent row is older than WriterStaleAfter, as 'kandev-extract health'
// does with its default threshold; no other writer state is judged so.
func TestBannerSaysWhenTheWriterIsQuiet(t *testing.T) {
	if WriterStaleAfter != load.DefaultStaleAfter {
		t.Fatalf("WriterStaleAfter %s, health's default %s", WriterStaleAfter, load.DefaultStaleAfter)
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	age := 2.0
	at := func(h float64) *time.Time { t := now.Add(-time.Duration(h * float64(time.Hour))); return &t }
	for _, c := range []struct {
		name   string
		writer *WriterState
		level  string
	}{
		{"no writer_health row", nil, "ok"},
		{"healthy, 35 h", &WriterState{Status: "healthy", LastObserved: at(35)}, "ok"},
		{"healthy, exactly 36 h", &WriterState{Status: "healthy", LastObserved: at(36)}, "ok"},
		{"healthy, 37 h", &WriterState{Status: "healthy", LastObserved: at(37)}, "stale"},
		{"healthy, nothing observed", &WriterState{Status: "healthy"}, "ok"},
		{"shortfall, 300 h", &WriterState{Status: "shortfall", LastObserved: at(300)}, "ok"},
		{"nothing since activation", &WriterState{Status: "nothing_since_activation"}, "ok"},
	} {
		in := &Installation{ID: "a", Served: true, Writer: c.writer,
			Fresh: &Freshness{RunID: "r", SnapshotAt: now.Add(-2 * time.Hour), AgeHours: &age, LatestRunID: "r", LatestStatus: "committed"}}
		b := banner(in, "#i-a", now)
		if b.Level != c.level {
			t.Errorf("%s: level %s, want %s (%s)", c.name, b.Level, c.level, b.Headline)
		}
		if c.level == "stale" && b.Headline != "Nothing new from the writer: the snapshot is 2.0 h old, but the newest subagent row is 37.0 h old, older than 36.0 h: nothing shows Kandev's subagent writer still works (is Kandev in use?); writer health counts only what was written" {
			t.Errorf("%s: headline %q", c.name, b.Headline)
		}
		if c.level == "ok" && !strings.HasPrefix(b.Headline, "The snapshot is 2.0 h old") {
			t.Errorf("%s: headline %q", c.name, b.Headline)
		}
	}
	// Stale or failed data is said first: the writer's age is not the news.
	in := &Installation{ID: "a", Served: true, Writer: &WriterState{Status: "healthy", LastObserved: at(300)},
		Fresh: &Freshness{RunID: "r", SnapshotAt: now.Add(-80 * time.Hour), AgeHours: &age, LatestRunID: "r", LatestStatus: "committed", Stale: true}}
	if b := banner(in, "#i-a", now); !strings.HasPrefix(b.Headline, "Stale data:") {
		t.Errorf("stale data with a quiet writer: %q", b.Headline)
	}
}
