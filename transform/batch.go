package transform

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/models"
)

// DefaultBatchRows is how many rows a record batch holds before it is handed
// to the writer; one batch becomes one Parquet row group.
const DefaultBatchRows = 128 * 1024

// Timestamp is the warehouse's one timestamp type: TIMESTAMP(MICROS, UTC).
var Timestamp = models.ArrowTimestamp

// RecordSink receives finished record batches (the Parquet writer).
type RecordSink interface {
	Write(rec arrow.RecordBatch) error
}

// Builder appends rows into a reused Arrow RecordBuilder and flushes a
// batch to its sink every BatchRows rows. Each setter names its column by
// index, resolved once from the catalog (models.Table.Col): a transformer
// may set a row's columns in any order, each exactly once.
type Builder struct {
	rb        *array.RecordBuilder
	fields    []array.Builder
	sink      RecordSink
	set, rows int
	total     int64
	BatchRows int
}

// NewBuilder returns a Builder for schema that flushes into sink.
func NewBuilder(mem memory.Allocator, schema *arrow.Schema, sink RecordSink) *Builder {
	rb := array.NewRecordBuilder(mem, schema)
	return &Builder{rb: rb, fields: rb.Fields(), sink: sink, BatchRows: DefaultBatchRows}
}

// Str sets column i to a non-null string. Text that is not valid UTF-8 is
// repaired (U+FFFD): Parquet strings and DuckDB require UTF-8.
// Transformers record each repair of a source value in rejects before it
// gets here; this is the guarantee for every other string (raw keys,
// locations).
func (b *Builder) Str(i int, s string) {
	b.set++
	b.fields[i].(*array.StringBuilder).Append(validText(s))
}

// OptStr sets column i to s, or null when !valid.
func (b *Builder) OptStr(i int, s string, valid bool) {
	b.set++
	f := b.fields[i].(*array.StringBuilder)
	if valid {
		f.Append(validText(s))
	} else {
		f.AppendNull()
	}
}

// Int sets column i to an int64, or null when !valid.
func (b *Builder) Int(i int, n int64, valid bool) {
	b.set++
	f := b.fields[i].(*array.Int64Builder)
	if valid {
		f.Append(n)
	} else {
		f.AppendNull()
	}
}

// Bool sets column i to a boolean, or null when !valid.
func (b *Builder) Bool(i int, v bool, valid bool) {
	b.set++
	f := b.fields[i].(*array.BooleanBuilder)
	if valid {
		f.Append(v)
	} else {
		f.AppendNull()
	}
}

// Time sets column i to an instant truncated to microseconds, or null
// when !valid.
func (b *Builder) Time(i int, t time.Time, valid bool) {
	b.set++
	f := b.fields[i].(*array.TimestampBuilder)
	if valid {
		f.Append(arrow.Timestamp(t.UnixMicro()))
	} else {
		f.AppendNull()
	}
}

// EndRow finishes a row and flushes a full batch. A row must set as many
// columns as the schema has (a column set twice and another not at all
// is caught when the batch is flushed).
func (b *Builder) EndRow() error {
	if b.set != len(b.fields) {
		panic(fmt.Sprintf("transform: row has %d of %d columns", b.set, len(b.fields)))
	}
	b.set = 0
	b.rows++
	b.total++
	if b.rows >= b.BatchRows {
		return b.Flush()
	}
	return nil
}

// Flush hands any buffered rows to the sink.
func (b *Builder) Flush() error {
	if b.rows == 0 {
		return nil
	}
	for i, f := range b.fields {
		if f.Len() != b.rows {
			panic(fmt.Sprintf("transform: column %d holds %d values for %d rows (set twice in a row, or not at all)", i, f.Len(), b.rows))
		}
	}
	full := b.rows >= b.BatchRows
	var data []int
	if full {
		data = make([]int, len(b.fields))
		for i, f := range b.fields {
			if s, ok := f.(*array.StringBuilder); ok {
				data[i] = s.DataLen()
			}
		}
	}
	rec := b.rb.NewRecordBatch()
	b.rows = 0
	err := b.sink.Write(rec)
	rec.Release()
	if err == nil && full {
		// The next batch is likely the same size: reserved at once, its
		// buffers are allocated once instead of grown by doubling and
		// copying (1.3 s of CPU on the 1M-row fact). A table smaller than
		// one batch never reserves.
		for i, f := range b.fields {
			f.Reserve(b.BatchRows)
			if s, ok := f.(*array.StringBuilder); ok {
				s.ReserveData(data[i])
			}
		}
	}
	return err
}

// Rows is the number of rows appended so far.
func (b *Builder) Rows() int64 { return b.total }

// Release frees the builder's buffers.
func (b *Builder) Release() { b.rb.Release() }
