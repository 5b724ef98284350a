package transform

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultBatchRows is how many rows a record batch holds before it is handed
// to the writer; one batch becomes one Parquet row group.
const DefaultBatchRows = 128 * 1024

// Timestamp is the warehouse's one timestamp type: TIMESTAMP(MICROS, UTC).
var Timestamp = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// RecordSink receives finished record batches (the Parquet writer).
type RecordSink interface {
	Write(rec arrow.RecordBatch) error
}

// Builder appends rows column by column into a reused Arrow RecordBuilder
// and flushes a batch to its sink every BatchRows rows.
type Builder struct {
	rb        *array.RecordBuilder
	fields    []array.Builder
	sink      RecordSink
	col, rows int
	total     int64
	BatchRows int
}

// NewBuilder returns a Builder for schema that flushes into sink.
func NewBuilder(mem memory.Allocator, schema *arrow.Schema, sink RecordSink) *Builder {
	rb := array.NewRecordBuilder(mem, schema)
	return &Builder{rb: rb, fields: rb.Fields(), sink: sink, BatchRows: DefaultBatchRows}
}

func (b *Builder) next() array.Builder {
	f := b.fields[b.col]
	b.col++
	return f
}

// Str appends a non-null string. Text that is not valid UTF-8 is repaired
// (U+FFFD): Parquet strings and DuckDB require UTF-8. Transformers record
// each repair of a source value in rejects before it gets here; this is
// the guarantee for every other string (raw keys, locations).
func (b *Builder) Str(s string) { b.next().(*array.StringBuilder).Append(validText(s)) }

// OptStr appends s, or null when !valid.
func (b *Builder) OptStr(s string, valid bool) {
	f := b.next().(*array.StringBuilder)
	if valid {
		f.Append(validText(s))
	} else {
		f.AppendNull()
	}
}

// Int appends an int64, or null when !valid.
func (b *Builder) Int(n int64, valid bool) {
	f := b.next().(*array.Int64Builder)
	if valid {
		f.Append(n)
	} else {
		f.AppendNull()
	}
}

// Bool appends a boolean, or null when !valid.
func (b *Builder) Bool(v bool, valid bool) {
	f := b.next().(*array.BooleanBuilder)
	if valid {
		f.Append(v)
	} else {
		f.AppendNull()
	}
}

// Time appends an instant truncated to microseconds, or null when !valid.
func (b *Builder) Time(t time.Time, valid bool) {
	f := b.next().(*array.TimestampBuilder)
	if valid {
		f.Append(arrow.Timestamp(t.UnixMicro()))
	} else {
		f.AppendNull()
	}
}

// EndRow finishes a row and flushes a full batch.
func (b *Builder) EndRow() error {
	if b.col != len(b.fields) {
		panic(fmt.Sprintf("transform: row has %d of %d columns", b.col, len(b.fields)))
	}
	b.col = 0
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
	rec := b.rb.NewRecordBatch()
	defer rec.Release()
	b.rows = 0
	return b.sink.Write(rec)
}

// Rows is the number of rows appended so far.
func (b *Builder) Rows() int64 { return b.total }

// Release frees the builder's buffers.
func (b *Builder) Release() { b.rb.Release() }

// fields is shorthand for schema construction.
func str(name string) arrow.Field { return arrow.Field{Name: name, Type: arrow.BinaryTypes.String} }
func optStr(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}
func optInt(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64, Nullable: true}
}
func integer(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64}
}
func boolean(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean}
}
func optBool(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.FixedWidthTypes.Boolean, Nullable: true}
}
func stamp(name string) arrow.Field { return arrow.Field{Name: name, Type: Timestamp} }
func optStamp(name string) arrow.Field {
	return arrow.Field{Name: name, Type: Timestamp, Nullable: true}
}

// runFields lead every table: every row carries its installation and run.
func runFields(rest ...arrow.Field) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{str("installation_id"), str("run_id")}, rest...), nil)
}
