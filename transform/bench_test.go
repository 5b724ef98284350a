package transform_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/internal/benchdata"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// Benchmarks of the per-row hot paths. They report figures (b.SetBytes:
// bytes of source text per row); no test asserts a time.

func BenchmarkClassifyRow(b *testing.B) {
	c := transform.Classifier{State: benchdata.ActivatedState()}
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
	c := transform.Classifier{State: benchdata.ActivatedState()}
	started := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var n int64
	for b.Loop() {
		if r := c.Fanout(transform.FanoutInput{Started: started, StartedOK: true, Rows: n & 7, Distinct: n & 7}); r.Exact {
			n += r.Fanout + 1
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

// BenchmarkSubagentsAppend is the fact transformer: conversion,
// classification and Arrow building of one task_session_subagents row
// (batches are flushed to a sink that drops them).
func BenchmarkSubagentsAppend(b *testing.B) {
	gen := benchdata.NewSubagents()
	rows := make([][]any, 4096)
	var perRow int64
	for i := range rows {
		rows[i] = make([]any, gen.Columns())
		perRow += gen.Row(i, rows[i])
	}
	perRow /= int64(len(rows))
	ctx := &transform.Context{Installation: "bench", Run: "20260812T000000Z-abcdef", Class: transform.Classifier{State: benchdata.ActivatedState()}}
	mem := memory.NewGoAllocator()
	rb := transform.NewBuilder(mem, transform.RejectsSchema, &discardSink{})
	defer rb.Release()
	transform.NewRejects(ctx, rb)
	sink := &discardSink{}
	fb := transform.NewBuilder(mem, transform.FactSchema, sink)
	fb.BatchRows = 16 * 1024 // as the pipeline flushes
	defer fb.Release()
	s := transform.NewSubagents(ctx, fb)
	row := make([]any, gen.Columns())
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
