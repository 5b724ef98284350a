package transform

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/models"
)

// Benchmarks of the per-row hot paths. They report figures (b.SetBytes:
// bytes of source text per row); no test asserts a time.

// activatedState is an installation activated with nanosecond keys, the
// subagent table execution-aware.
func activatedState() models.InstallationState {
	return Installation([]models.MetaEntry{
		{Key: models.KeyCaptureSince, Value: "2026-02-24T07:12:00.123456789Z"},
		{Key: models.KeyBackfillThrough, Value: "2026-02-23T19:00:01.5Z"},
		{Key: models.KeyKandevVersion, Value: "dev"},
	}, models.ShapeExecutionAware)
}

func BenchmarkClassifyRow(b *testing.B) {
	c := Classifier{State: activatedState()}
	observed := []time.Time{
		time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC),           // before capture
		time.Date(2026, 2, 24, 7, 12, 0, 123456789, time.UTC),  // at capture
		time.Date(2026, 6, 1, 12, 30, 15, 987654321, time.UTC), // after
	}
	type in struct {
		source, exec, status string
		execValid            bool
	}
	rows := []in{
		{models.SourceLive, "6f1c2a9e-0d7b-4c8e-9a51-2b3f4c5d6e7f", "completed", true},
		{models.SourceBackfill, models.ExecutionSentinel, "async_launched", true},
		{models.SourceLive, models.ExecutionSentinel, "", false},
	}
	b.SetBytes(int64(len(rows[0].source) + len(rows[0].exec) + len(rows[0].status)))
	var sink int
	i := 0
	for b.Loop() {
		r := rows[i%len(rows)]
		rc := c.Row(observed[i%len(observed)], r.source, r.exec, r.execValid, r.status, r.status != "")
		if rc.Terminal {
			sink++
		}
		i++
	}
	_ = sink
}

func BenchmarkClassifyFanout(b *testing.B) {
	c := Classifier{State: activatedState()}
	started := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var n int64
	for b.Loop() {
		if _, f, ok := c.Fanout(started, true, n&7); ok {
			n += f + 1
		}
	}
}

// discardSink releases nothing (the Builder releases its batch after
// Write) and counts rows.
type discardSink struct{ rows int64 }

func (d *discardSink) Write(rec arrow.RecordBatch) error {
	d.rows += rec.NumRows()
	return nil
}

// subagentRows returns n source rows in SubagentSpec order, shaped like a
// large Kandev store's: uuids, RFC3339-ish stamps at nanosecond precision,
// NULL metrics on async launches, a live/backfill mix.
func subagentRows(n int) ([][]any, int64) {
	spec := SubagentSpec()
	col := func(name string) int {
		i := spec.Column(name)
		if i < 0 {
			panic("SubagentSpec lacks " + name)
		}
		return i
	}
	uuid := func(kind, i int) string {
		return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", kind*7919+i, i&0xffff, kind, i&0xfff, i*2654435761)
	}
	base := time.Date(2025, 11, 3, 8, 0, 0, 0, time.UTC)
	rows := make([][]any, n)
	var bytes int64
	for i := range rows {
		r := make([]any, len(spec.Columns))
		at := base.Add(time.Duration(i) * 23 * time.Second).Add(time.Duration(i*7919%1_000_000_000) * time.Nanosecond)
		stamp := at.Format("2006-01-02 15:04:05.999999999") + "+00:00"
		source, exec := models.SourceLive, uuid(5, i/3)
		if i%5 < 2 {
			source, exec = models.SourceBackfill, models.ExecutionSentinel
		}
		r[col("id")] = uuid(1, i)
		r[col("task_session_id")] = uuid(2, i/10)
		r[col("task_id")] = uuid(3, i/10)
		r[col("turn_id")] = uuid(4, i/3)
		r[col("tool_call_id")] = fmt.Sprintf("toolu_01%022d", i)
		r[col("agent_execution_id")] = exec
		r[col("parent_tool_call_id")] = nil
		r[col("subagent_type")] = "general-purpose"
		r[col("agent_id")] = nil
		r[col("child_session_id")] = nil
		r[col("agent_status")] = nil
		r[col("source")] = source
		r[col("observed_at")] = stamp
		r[col("updated_at")] = stamp
		if i%4 == 0 { // completed, measured
			r[col("model")] = "claude-sonnet-4-5"
			r[col("tool_status")] = "completed"
			r[col("is_async")] = int64(0)
			r[col("total_tokens")] = int64(20_000 + i%9000)
			r[col("tool_use_count")] = int64(i % 17)
			r[col("duration_ms")] = int64(30_000 + i%60_000)
			r[col("settled_at")] = at.Add(41*time.Second).Format("2006-01-02 15:04:05.999999999") + "+00:00"
		} else { // async launch: metrics NULL
			r[col("tool_status")] = "async_launched"
			r[col("is_async")] = int64(1)
		}
		r[col("rows_sharing_id")] = int64(1)
		r[col("rows_sharing_key")] = int64(1)
		r[col("session_missing")] = int64(0)
		for _, v := range r {
			if s, ok := v.(string); ok {
				bytes += int64(len(s))
			} else if v != nil {
				bytes += 8
			}
		}
		rows[i] = r
	}
	return rows, bytes / int64(n)
}

// BenchmarkSubagentsAppend is the fact transformer: conversion,
// classification and Arrow building of one task_session_subagents row
// (batches are flushed to a sink that drops them).
func BenchmarkSubagentsAppend(b *testing.B) {
	rows, perRow := subagentRows(4096)
	ctx := &Context{Installation: "bench", Run: "20260812T000000Z-abcdef", Class: Classifier{State: activatedState()}}
	mem := memory.NewGoAllocator()
	rb := NewBuilder(mem, RejectsSchema, &discardSink{})
	defer rb.Release()
	NewRejects(ctx, rb)
	sink := &discardSink{}
	fb := NewBuilder(mem, FactSchema, sink)
	fb.BatchRows = 16 * 1024 // as the pipeline flushes
	defer fb.Release()
	s := NewSubagents(ctx, fb)
	row := make([]any, len(rows[0]))
	b.SetBytes(perRow)
	i := 0
	for b.Loop() {
		copy(row, rows[i%len(rows)]) // Append may repair cells in place
		if err := s.Append(row); err != nil {
			b.Fatal(err)
		}
		i++
	}
	if err := fb.Flush(); err != nil {
		b.Fatal(err)
	}
	if ctx.Rejects.Count != 0 {
		b.Fatalf("benchmark rows were rejected: %d", ctx.Rejects.Count)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAsStamp is the stamp cell conversion the transformers use.
func BenchmarkAsStamp(b *testing.B) {
	var v any = "2026-11-30 06:13:38.331223024+00:00"
	b.SetBytes(int64(len(v.(string))))
	for b.Loop() {
		if _, ok, _ := asStamp(v); !ok {
			b.Fatal("not a stamp")
		}
	}
}
