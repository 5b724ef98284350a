package evidence

import (
	"fmt"
	"testing"

	"github.com/kandev/kandev-extract/extract/internal/golden"
)

// The SQL of the message pass and of its oracle, kept under
// testdata/sql/<dialect>/ so a reviewer reads what runs, and a change to it
// shows in the diff (the scans': extract). `go test ./extract/evidence -run
// TestRenderedSQL -update` rewrites the files.

func TestRenderedSQLSQLite(t *testing.T) {
	check := func(name, q string) { golden.Check(t, "extract/evidence", "sqlite", name, q) }
	check("writer_health", sqliteHealth)
	check("message_evidence", fmt.Sprintf(sqliteEvidence, "<rows: the subagent rows' bounded ids>", "<found: a row observed at or after ?1>"))
	check("message_pass_raw", msgPassRaw)
	check("message_pass_messages", msgPassMessages)
	check("message_pass_subagents", msgPassSubagents)
	check("message_pass_subagents_fanout", msgPassSubagentsFanout)
}

func TestRenderedSQLPostgres(t *testing.T) {
	check := func(name, q string) { golden.Check(t, "extract/evidence", "postgres", name, q) }
	check("writer_health", fmt.Sprintf(pgHealth, "<exclusion of messages whose metadata is not JSON, after a failed first try>"))
	check("message_evidence", fmt.Sprintf(pgEvidence, "<exclusion of messages whose metadata is not JSON, after a failed first try>",
		"<rows: the subagent rows' ids>", "<found: a row observed at or after $1>"))
	check("message_pass_messages", fmt.Sprintf(pgPassMessages, "<exclusion of messages whose metadata is not JSON, after a failed first try>"))
	check("message_pass_subagents", pgPassSubagents)
	check("message_pass_subagents_fanout", pgPassSubagentsFanout)
}
