// Package benchdata makes the synthetic task_session_subagents rows the Go
// benchmarks of the transformer and the Parquet writer share, so both
// measure the same data.
package benchdata

import (
	"fmt"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// ActivatedState is an installation activated with nanosecond keys and an
// execution-aware subagent table.
func ActivatedState() models.InstallationState {
	return transform.Installation([]models.MetaEntry{
		{Key: models.KeyCaptureSince, Value: "2026-02-24T07:12:00.123456789Z"},
		{Key: models.KeyBackfillThrough, Value: "2026-02-23T19:00:01.5Z"},
		{Key: models.KeyKandevVersion, Value: "dev"},
	}, models.ShapeExecutionAware)
}

// Subagents fills rows in the fact scan's order (extract.Spec), shaped like a large
// Kandev store's: uuid-like ids (sessions of 10 rows, turns and executions
// of 3), stamps at nanosecond precision, two in five rows from the backfill
// with the execution sentinel, one in four completed and measured, the
// others async launches with NULL metrics.
type Subagents struct {
	col  map[string]int
	n    int
	base time.Time
}

// NewSubagents indexes SubagentSpec's columns.
func NewSubagents() *Subagents {
	spec := extract.Spec(models.MustTable(models.TableFact), true)
	s := &Subagents{col: map[string]int{}, n: len(spec.Columns), base: time.Date(2025, 11, 3, 8, 0, 0, 0, time.UTC)}
	for i, c := range spec.Columns {
		s.col[c.Name] = i
	}
	return s
}

// Columns is the length of a row.
func (s *Subagents) Columns() int { return s.n }

func uuid(kind, i int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", kind*7919+i, i&0xffff, kind, i&0xfff, i*2654435761)
}

// Row fills row (Columns() long) with source row i and returns its bytes
// of source text (8 per non-text value).
func (s *Subagents) Row(i int, row []any) int64 {
	clear(row)
	set := func(name string, v any) {
		j, ok := s.col[name]
		if !ok {
			panic("benchdata: SubagentSpec lacks " + name)
		}
		row[j] = v
	}
	at := s.base.Add(time.Duration(i) * 23 * time.Second).Add(time.Duration(i*7919%1_000_000_000) * time.Nanosecond)
	stamp := at.Format("2006-01-02 15:04:05.999999999") + "+00:00"
	source, exec := models.SourceLive, uuid(5, i/3)
	if i%5 < 2 {
		source, exec = models.SourceBackfill, models.ExecutionSentinel
	}
	set("id", uuid(1, i))
	set("task_session_id", uuid(2, i/10))
	set("task_id", uuid(3, i/10))
	set("turn_id", uuid(4, i/3))
	set("tool_call_id", fmt.Sprintf("toolu_01%022d", i))
	set("agent_execution_id", exec)
	set("subagent_type", "general-purpose")
	set("source", source)
	set("observed_at", stamp)
	set("updated_at", stamp)
	if i%4 == 0 { // completed, measured
		set("model", "claude-sonnet-4-5")
		set("tool_status", "completed")
		set("is_async", int64(0))
		set("total_tokens", int64(20_000+i%9000))
		set("tool_use_count", int64(i%17))
		set("duration_ms", int64(30_000+i%60_000))
		set("settled_at", at.Add(41*time.Second).Format("2006-01-02 15:04:05.999999999")+"+00:00")
	} else { // async launch: metrics NULL
		set("tool_status", "async_launched")
		set("is_async", int64(1))
	}
	set("rows_sharing_id", int64(1))
	set("rows_sharing_key", int64(1))
	set("session_missing", int64(0))
	var bytes int64
	for _, v := range row {
		if t, ok := v.(string); ok {
			bytes += int64(len(t))
		} else if v != nil {
			bytes += 8
		}
	}
	return bytes
}
