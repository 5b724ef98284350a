package transform

import (
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/models"
)

// TestDisclosureCountsAgree: a count of one reads in the singular, with its
// verb ("1 turn (1 session) holds"), any other count in the plural, zero
// included ("0 turns").
func TestDisclosureCountsAgree(t *testing.T) {
	text := func(f Facts, rule string) string {
		t.Helper()
		for _, d := range Disclose(f) {
			if d.Rule == rule {
				return d.Text
			}
		}
		t.Fatalf("no %s disclosure", rule)
		return ""
	}
	f := Facts{State: models.InstallationState{Shape: models.ShapeExecutionAware}}
	f.Turns.RowsBeyond, f.Sessions.RowsBeyond = 1, 1
	f.Turns.Overlap, f.Sessions.Overlap = 2, 1
	f.Turns.MessagesOnly = 1
	f.Subagent.SentinelVariants = 1
	f.Subagent.Rows, f.Subagent.Orphans, f.Turns.Orphans = 5, 1, 0
	f.Rejected, f.RejRows = 1, 1
	for rule, want := range map[string]string{
		"rows_beyond_tool_calls": "1 turn (1 session) holds more subagent rows",
		"live_backfill_overlap":  "2 turns (1 session) have a live row",
		"messages_lower_bound":   "1 turn (0 sessions) has subagent-task messages",
		"sentinel_variants":      "1 row has an agent_execution_id",
		"orphan_rows":            "1 row references a session that is not in task_sessions (1 subagent row, 0 turns;",
		"rejects":                "1 entry in the rejects view: 1 whole row quarantined (not in the fact tables) and 0 values set to NULL",
	} {
		if got := text(f, rule); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want it to begin %q", rule, got, want)
		}
	}
	f.Turns.RowsBeyond, f.Sessions.RowsBeyond = 3, 2
	if got, want := text(f, "rows_beyond_tool_calls"), "3 turns (2 sessions) hold more"; !strings.HasPrefix(got, want) {
		t.Errorf("%q, want it to begin %q", got, want)
	}
}
