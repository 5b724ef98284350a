package transform_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

type keepSink struct{ recs []arrow.RecordBatch }

func (k *keepSink) Write(rec arrow.RecordBatch) error {
	rec.Retain()
	k.recs = append(k.recs, rec)
	return nil
}

// TestBuilderSetsColumnsByCatalogName: a row's columns may be set in any
// order, by the index the catalog gives each name, and land in their
// columns; the flush refuses a row that set one column twice and another
// not at all.
func TestBuilderSetsColumnsByCatalogName(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tbl := models.MustTable(models.TableShortfall)
	sink := &keepSink{}
	b := transform.NewBuilder(mem, tbl.Schema(), sink)
	defer b.Release()
	// Backwards, on purpose.
	b.Str(tbl.Col("tool_call_id"), "toolu_1")
	b.OptStr(tbl.Col("turn_id"), "", false)
	b.Str(tbl.Col("session_id"), "s1")
	b.Str(tbl.Col("run_id"), "r1")
	b.Str(tbl.Col("installation_id"), "i1")
	if err := b.EndRow(); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(sink.recs) != 1 {
		t.Fatalf("%d batches", len(sink.recs))
	}
	rec := sink.recs[0]
	defer rec.Release()
	got := []string{}
	for i, f := range rec.Schema().Fields() {
		col := rec.Column(i).(*array.String)
		v := "NULL"
		if col.IsValid(0) {
			v = col.Value(0)
		}
		got = append(got, f.Name+"="+v)
	}
	if want := "installation_id=i1 run_id=r1 session_id=s1 turn_id=NULL tool_call_id=toolu_1"; strings.Join(got, " ") != want {
		t.Errorf("row = %s, want %s", strings.Join(got, " "), want)
	}

	// session_id twice, turn_id never: the count matches, the columns do not.
	b.Str(tbl.Col("installation_id"), "i1")
	b.Str(tbl.Col("run_id"), "r1")
	b.Str(tbl.Col("session_id"), "s1")
	b.Str(tbl.Col("session_id"), "s2")
	b.Str(tbl.Col("tool_call_id"), "toolu_2")
	if err := b.EndRow(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "set twice in a row, or not at all") {
			t.Errorf("flush of a malformed row: recovered %v", r)
		}
	}()
	b.Flush()
}
