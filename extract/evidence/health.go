package evidence

import (
	"context"
	"time"

	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/models"
)

// healthColumns are what the comparison reads, by table.
var healthColumns = []struct {
	table string
	cols  []string
}{
	{"task_session_messages", []string{"id", "task_session_id", "task_id", "metadata", "created_at"}},
	{"task_session_subagents", []string{"task_session_id", "tool_call_id", "observed_at"}},
}

// checkHealthSchema fails with an error naming the store, table and column
// when the comparison cannot run on this schema, instead of an SQL error.
func checkHealthSchema(ctx context.Context, snap models.Snapshot, source string) error {
	for _, h := range healthColumns {
		ok, err := snap.TableExists(ctx, h.table)
		if err != nil {
			return err
		}
		if !ok {
			return &models.MissingTableError{Source: source, Table: h.table}
		}
		cols, err := snap.Columns(ctx, h.table)
		if err != nil {
			return err
		}
		if err := sqlkit.RequireColumns(source, h.table, cols, h.cols...); err != nil {
			return err
		}
	}
	return nil
}

// maxMessageMetadata bounds the message metadata SQLite reads: a longer
// value is measured (octet_length reads no content) and counted as
// malformed, never loaded. Kandev's subagent-task metadata is a few hundred
// bytes.
const maxMessageMetadata = "1048576"

// instantLayout is a fixed-width UTC form: lexical order is time order.
const instantLayout = "2006-01-02T15:04:05.000000000Z"

// HealthAggregates is the spec's comparison (AC-28, AC-29) over the CTEs
// expected, accounted and since, written once for both dialects: shortfall
// and excess as two directed set differences over distinct keys, never
// netted; the expected and observed key counts; the collision count; the
// scoped MAX(observed_at), NULL when nothing was observed since activation.
// (Exported for the benchmark's floor, which runs the same comparison.)
const HealthAggregates = `
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM expected
		EXCEPT SELECT task_session_id, tool_call_id FROM since) AS shortfall),
	(SELECT COUNT(*) FROM (SELECT task_session_id, tool_call_id FROM since GROUP BY 1, 2
		EXCEPT SELECT task_session_id, tool_call_id FROM accounted) AS excess),
	(SELECT COUNT(*) FROM expected),
	(SELECT COUNT(*) FROM (SELECT DISTINCT task_session_id, tool_call_id FROM since) AS observed),
	(SELECT COUNT(*) - COUNT(DISTINCT task_session_id || ':' || tool_call_id) FROM since),
	(SELECT MAX(observed) FROM since)`

func ceilMicro(t time.Time) time.Time {
	t = t.UTC()
	if tr := t.Truncate(time.Microsecond); !tr.Equal(t) {
		return tr.Add(time.Microsecond)
	}
	return t
}
