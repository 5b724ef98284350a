package transform_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/internal/benchdata"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// TestSpecsCapEveryStoredColumn: every column read from the store has a
// cap (so the source never hands a value over whole), by what it is;
// computed columns have none.
func TestSpecsCapEveryStoredColumn(t *testing.T) {
	var specs []models.TableSpec
	for _, t := range models.Scanned() {
		specs = append(specs, extract.Spec(t, true), extract.Spec(t, false))
	}
	for _, spec := range specs {
		for _, c := range spec.Columns {
			want := models.MaxLabelBytes
			switch {
			case c.Expr != "":
				want = 0
			case c.Name == "metadata":
				want = models.MaxMetadataBytes
			case c.Kind == models.KindStamp, c.Kind == models.KindInt:
				want = models.MaxScalarBytes
			}
			if c.MaxBytes != want {
				t.Errorf("%s.%s: MaxBytes %d, want %d", spec.Name, c.Name, c.MaxBytes, want)
			}
		}
	}
}

// collectSink keeps every batch written.
type collectSink struct{ recs []arrow.RecordBatch }

func (c *collectSink) Write(rec arrow.RecordBatch) error {
	rec.Retain()
	c.recs = append(c.recs, rec)
	return nil
}

// rows renders the named columns of every row as "a|b|c" (NULL for null).
func (c *collectSink) rows(t *testing.T, cols ...string) []string {
	t.Helper()
	var out []string
	for _, rec := range c.recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			var cells []string
			for _, name := range cols {
				idx := rec.Schema().FieldIndices(name)
				if len(idx) != 1 {
					t.Fatalf("no column %s", name)
				}
				col := rec.Column(idx[0])
				if col.IsNull(r) {
					cells = append(cells, "NULL")
					continue
				}
				switch a := col.(type) {
				case *array.String:
					cells = append(cells, a.Value(r))
				case *array.Int64:
					cells = append(cells, fmt.Sprint(a.Value(r)))
				default:
					cells = append(cells, col.ValueStr(r))
				}
			}
			out = append(out, strings.Join(cells, "|"))
		}
	}
	return out
}

func (c *collectSink) release() {
	for _, r := range c.recs {
		r.Release()
	}
}

// TestTruncatedCells: an identifier or label over its cap is kept cut (or
// NULL when no prefix was read) and listed as truncated_value with its
// length; an over-long timestamp or integer is refused as such, never cut
// into a value; over-long metadata is not read.
func TestTruncatedCells(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := &transform.Context{Installation: "i", Run: "r", Class: transform.Classifier{State: benchdata.ActivatedState()}}
	rejSink, factSink := &collectSink{}, &collectSink{}
	defer rejSink.release()
	defer factSink.release()
	rb := transform.NewBuilder(mem, transform.RejectsSchema, rejSink)
	defer rb.Release()
	rej := transform.NewRejects(ctx, rb)
	fb := transform.NewBuilder(mem, transform.FactSchema, factSink)
	defer fb.Release()
	s := transform.NewSubagents(ctx, fb)

	spec := extract.Spec(models.MustTable(models.TableFact), true)
	col := func(name string) int {
		i := spec.Column(name)
		if i < 0 {
			t.Fatalf("no column %s", name)
		}
		return i
	}
	gen := benchdata.NewSubagents()
	row := make([]any, gen.Columns())
	gen.Row(0, row)
	idPrefix := strings.Repeat("i", 256)
	row[col("id")] = models.Truncated{Prefix: idPrefix, HasPrefix: true, Bytes: 1000, Cap: 256, Kind: models.KindText}
	row[col("model")] = models.Truncated{Prefix: strings.Repeat("m", 256), HasPrefix: true, Bytes: 300_000_000, Cap: 256, Kind: models.KindText}
	row[col("subagent_type")] = models.Truncated{Bytes: 5_000_000, Cap: 256, Kind: models.KindText} // no prefix read
	// A prefix that is a valid instant / integer must not become one.
	row[col("settled_at")] = models.Truncated{Prefix: "2026-08-20 12:00:00+00:00", HasPrefix: true, Bytes: 100_025, Cap: 64, Kind: models.KindStamp}
	row[col("total_tokens")] = models.Truncated{Prefix: "12", HasPrefix: true, Bytes: 70, Cap: 64, Kind: models.KindInt}
	if err := s.Append(row); err != nil {
		t.Fatal(err)
	}
	if err := fb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Flush(); err != nil {
		t.Fatal(err)
	}
	got := factSink.rows(t, "subagent_id", "model", "subagent_type", "settled_at", "total_tokens")
	want := []string{idPrefix + "|" + strings.Repeat("m", 256) + "|NULL|NULL|NULL"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fact = %q, want %q", got, want)
	}
	gotRej := rejSink.rows(t, "row_id", "column_name", "raw_value", "action", "reason")
	wantRej := []string{
		idPrefix + "|id|" + idPrefix + "|truncated_value|value is 1000 bytes, over the 256-byte cap: the warehouse keeps its first 256 bytes (cut by the source query at a character boundary)",
		idPrefix + "|subagent_type|NULL|truncated_value|value is 5000000 bytes, over the 256-byte cap; SQLite cannot read part of a value without loading all of it, so a value over 1048576 bytes is measured but not read: the warehouse holds NULL",
		idPrefix + "|model|" + strings.Repeat("m", 256) + "|truncated_value|value is 300000000 bytes, over the 256-byte cap: the warehouse keeps its first 256 bytes (cut by the source query at a character boundary)",
		idPrefix + "|total_tokens|12|nulled_value|not an integer: 70 bytes of text, over the 64 bytes read of an integer column",
		idPrefix + "|settled_at|2026-08-20 12:00:00+00:00|nulled_value|not a timestamp: 100025 bytes, over the 64 bytes read of a timestamp column",
	}
	if strings.Join(gotRej, "\n") != strings.Join(wantRej, "\n") {
		t.Errorf("rejects:\n got %q\nwant %q", gotRej, wantRej)
	}
	if rej.Truncated != 3 || rej.Nulled != 2 || rej.Count != 5 {
		t.Errorf("counts: truncated %d nulled %d all %d", rej.Truncated, rej.Nulled, rej.Count)
	}
	if by := rej.ByAction(); by[transform.ActionTruncatedValue] != 3 || len(by) != 5 {
		t.Errorf("ByAction = %v", by)
	}

	step, ok, problem := transform.StepAtStart(models.Truncated{Prefix: `{"workflow_step_id_at_start":"s"`, HasPrefix: true, Bytes: 5_000_000, Cap: models.MaxMetadataBytes})
	if ok || step != "" || problem != "metadata is 5000000 bytes, over the 16384 bytes read for workflow_step_id_at_start: not read" {
		t.Errorf("StepAtStart(truncated) = %q %v %q", step, ok, problem)
	}
}

// TestTruncatedMeta: a kandev_meta value over the cap keeps its prefix as
// the raw value; an activation key so cut is unparseable even when its
// prefix is a valid instant; kandev_version keeps its prefix (nil when
// none could be read); each cut, and a key several rows share, is listed.
func TestTruncatedMeta(t *testing.T) {
	capture := "2026-08-03T15:00:00Z"
	meta := []models.MetaEntry{
		{Key: models.KeyCaptureSince, Value: capture, Bytes: 40_000_000, HasPrefix: true, Rows: 1},
		{Key: models.KeyBackfillThrough, Value: "", Bytes: 0, HasPrefix: true, Rows: 3},
		{Key: models.KeyKandevVersion, Value: strings.Repeat("v", 256), Bytes: 30_000_000, HasPrefix: true, Rows: 1},
		{Key: models.KeySchemaInitializedAt, Value: "2026", Bytes: 1000, HasPrefix: true, Rows: 1},
	}
	st := transform.Installation(meta, models.ShapeExecutionAware)
	if st.CaptureSince.State != models.KeyUnparseable || st.CaptureSince.Raw == nil || *st.CaptureSince.Raw != capture || !st.CaptureSince.At.IsZero() {
		t.Errorf("capture_since = %+v, want unparseable with its prefix as raw", st.CaptureSince)
	}
	if st.Activation != models.NotActivated {
		t.Errorf("activation %s", st.Activation)
	}
	if st.BackfillThrough.State != models.KeyNoneMatched {
		t.Errorf("backfill_through = %s", st.BackfillThrough.State)
	}
	if st.KandevVersion == nil || *st.KandevVersion != strings.Repeat("v", 256) {
		t.Errorf("kandev_version = %v", st.KandevVersion)
	}
	if got := transform.Installation([]models.MetaEntry{{Key: models.KeyKandevVersion, Bytes: 50_000_000, Rows: 1}}, models.ShapeAbsent).KandevVersion; got != nil {
		t.Errorf("kandev_version with no prefix = %q, want nil", *got)
	}
	if n := models.MetaRowsRead(meta); n != 6 {
		t.Errorf("MetaRowsRead = %d, want 6", n)
	}

	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := &transform.Context{Installation: "i", Run: "r"}
	sink := &collectSink{}
	defer sink.release()
	rb := transform.NewBuilder(mem, transform.RejectsSchema, sink)
	defer rb.Release()
	rej := transform.NewRejects(ctx, rb)
	if err := rej.MetaText(meta); err != nil {
		t.Fatal(err)
	}
	if err := rb.Flush(); err != nil {
		t.Fatal(err)
	}
	got := sink.rows(t, "table_name", "row_id", "column_name", "raw_value", "action", "reason")
	want := []string{
		"kandev_meta|" + models.KeyCaptureSince + "|value|" + capture + "|truncated_value|value is 40000000 bytes, over the 256-byte cap: the warehouse keeps its first 20 bytes (cut by the source query at a character boundary)",
		"kandev_meta|" + models.KeyBackfillThrough + "|key|" + models.KeyBackfillThrough + "|flagged|duplicate key: 3 kandev_meta rows have it (the primary key was not enforced); the first one read is used",
		"kandev_meta|kandev_version|value|" + strings.Repeat("v", 256) + "|truncated_value|value is 30000000 bytes, over the 256-byte cap: the warehouse keeps its first 256 bytes (cut by the source query at a character boundary)",
		"kandev_meta|schema_initialized_at|value|2026|truncated_value|value is 1000 bytes, over the 256-byte cap: the warehouse keeps its first 4 bytes (cut by the source query at a character boundary)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rejects:\n got %q\nwant %q", got, want)
	}
}
