package load

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// roundTripSchema has one column of every kind the writer treats apart:
// a plain (high-cardinality) string, dictionary strings with and without
// nulls, integers, booleans and timestamps with and without nulls.
var roundTripSchema = arrow.NewSchema([]arrow.Field{
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "subagent_id", Type: arrow.BinaryTypes.String},
	{Name: "source", Type: arrow.BinaryTypes.String},
	{Name: "model", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "total_tokens", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "is_async", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "observed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "settled_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// roundTripRows builds n rows from seq start as record batches of batch
// rows (released when the test ends), and the lines DuckDB must read back
// ("NULL" for a null).
func roundTripRows(t *testing.T, start, n, batch int) ([]arrow.RecordBatch, []string) {
	base := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), roundTripSchema)
	defer rb.Release()
	var recs []arrow.RecordBatch
	var want []string
	for i := start; i < start+n; i++ {
		id := fmt.Sprintf("%08x-7d3e-4c1a-9f00-%012x", i*2654435761%(1<<32), i)
		source := [...]string{"live", "backfill", "live", "merged"}[i%4]
		line := []string{fmt.Sprint(i), id, source}
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(id)
		rb.Field(2).(*array.StringBuilder).Append(source)
		if i%7 == 3 {
			rb.Field(3).(*array.StringBuilder).AppendNull()
			line = append(line, "NULL")
		} else {
			m := [...]string{"claude-sonnet-4-5", "claude-opus-4", "é ✓ 模型"}[i%3]
			rb.Field(3).(*array.StringBuilder).Append(m)
			line = append(line, m)
		}
		if i%5 == 0 {
			rb.Field(4).(*array.Int64Builder).AppendNull()
			line = append(line, "NULL")
		} else {
			rb.Field(4).(*array.Int64Builder).Append(int64(i * 37))
			line = append(line, fmt.Sprint(i*37))
		}
		if i%11 == 0 {
			rb.Field(5).(*array.BooleanBuilder).AppendNull()
			line = append(line, "NULL")
		} else {
			rb.Field(5).(*array.BooleanBuilder).Append(i%3 == 0)
			line = append(line, fmt.Sprint(i%3 == 0))
		}
		at := base.Add(time.Duration(i) * 1234567 * time.Microsecond)
		rb.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
		line = append(line, at.Format(time.RFC3339Nano))
		if i%2 == 0 {
			rb.Field(7).(*array.TimestampBuilder).AppendNull()
			line = append(line, "NULL")
		} else {
			rb.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(time.Second).UnixMicro()))
			line = append(line, at.Add(time.Second).Format(time.RFC3339Nano))
		}
		want = append(want, strings.Join(line, "|"))
		if (i-start+1)%batch == 0 || i == start+n-1 {
			recs = append(recs, rb.NewRecordBatch())
		}
	}
	sort.Strings(want)
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs, want
}

func writeRoundTrip(t *testing.T, path string, o writerOptions, recs []arrow.RecordBatch) {
	t.Helper()
	pf, err := createParquet(path, roundTripSchema, "round-trip", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := pf.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := pf.Close(map[string]string{ProvenanceKey: `{"test":true}`}); err != nil {
		t.Fatal(err)
	}
}

func duckMemory(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestParquetWriterRoundTrip writes the same rows with one, two and five
// column workers; with the production page size (DataPageBytes), arrow-go's
// default, and pages and dictionaries so small that pages fill up exactly
// at a batch's end and dictionaries fall back to plain encoding
// mid-column: DuckDB reads back exactly the rows written, and the files are
// byte-identical whatever the number of workers (the row group is
// assembled in column order).
func TestParquetWriterRoundTrip(t *testing.T) {
	t.Parallel()
	recs, want := roundTripRows(t, 0, 4096, 1024)
	db := duckMemory(t)
	for _, c := range []struct {
		name string
		o    writerOptions
	}{
		{"production pages", writerOptions{pageSize: DataPageBytes}},
		{"arrow-go's default pages", writerOptions{}},
		// 1,024 values per write batch × 8 bytes: an int64 page fills at
		// exactly the batch's end; dictionaries overflow at once.
		{"small pages and dictionaries", writerOptions{pageSize: 8 * 1024, dictionaryPageLimit: 16}},
		{"one-byte pages", writerOptions{pageSize: 1, dictionaryPageLimit: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first []byte
			for _, workers := range []int{1, 2, 5} {
				o := c.o
				o.workers = workers
				path := filepath.Join(t.TempDir(), fmt.Sprintf("w%d.parquet", workers))
				writeRoundTrip(t, path, o, recs)
				got := testkit.RowsOf(t, db, `SELECT seq, subagent_id, source, model, total_tokens, is_async,
					strftime(observed_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ'),
					strftime(settled_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ')
					FROM read_parquet(?)`, path)
				testkit.EqualSets(t, fmt.Sprintf("%d workers: rows", workers), got, normalizeMicros(want))
				if n := testkit.One(t, db, `SELECT count(*) FROM parquet_metadata(?) WHERE column_id = 0`, path); n != "4" {
					t.Errorf("%d workers: %s row groups, want one per batch: 4", workers, n)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = b
				} else if !bytes.Equal(first, b) {
					t.Errorf("%d workers wrote a different file than 1 worker (%d vs %d bytes)", workers, len(b), len(first))
				}
			}
		})
	}
}

// normalizeMicros rewrites RFC 3339 instants to DuckDB's strftime %f
// form (always six fraction digits).
func normalizeMicros(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		cells := strings.Split(l, "|")
		for j, c := range cells {
			if at, err := time.Parse(time.RFC3339Nano, c); err == nil && strings.Contains(c, "T") {
				cells[j] = at.Format("2006-01-02T15:04:05.000000Z")
			}
		}
		out[i] = strings.Join(cells, "|")
	}
	sort.Strings(out)
	return out
}

// TestParquetWriterEncodings checks that the per-column settings take
// effect in the file: low-cardinality strings are dictionary encoded,
// identifiers plain and without min/max statistics, timestamps and
// integers keep their statistics (booleans are never dictionary encoded by
// arrow-go), every column is zstd and uses only the encodings every reader
// knows, and the Arrow schema and provenance are in the footer.
func TestParquetWriterEncodings(t *testing.T) {
	t.Parallel()
	recs, _ := roundTripRows(t, 0, 3000, 1000)
	path := filepath.Join(t.TempDir(), "enc.parquet")
	writeRoundTrip(t, path, defaultWriterOptions(), recs)
	db := duckMemory(t)
	got := testkit.RowsOf(t, db, `SELECT path_in_schema, compression,
		encodings LIKE '%DICTIONARY%', coalesce(stats_min_value, stats_min) IS NOT NULL
		FROM parquet_metadata(?) WHERE row_group_id = 0`, path)
	want := []string{
		"is_async|ZSTD|false|true",
		"model|ZSTD|true|true",
		"observed_at|ZSTD|false|true",
		"seq|ZSTD|true|true",
		"settled_at|ZSTD|false|true",
		"source|ZSTD|true|true",
		"subagent_id|ZSTD|false|false",
		"total_tokens|ZSTD|false|true",
	}
	testkit.EqualSets(t, "column chunks", got, want)
	// Only the encodings every mainstream reader decodes: older Spark,
	// Polars and others refuse DELTA_* and BYTE_STREAM_SPLIT pages, and BI
	// teams take these files.
	if odd := testkit.RowsOf(t, db, `SELECT DISTINCT path_in_schema, encodings FROM parquet_metadata(?)
		WHERE regexp_replace(encodings, '(PLAIN_DICTIONARY|RLE_DICTIONARY|PLAIN|RLE|BIT_PACKED|[ ,])', '', 'g') <> ''`, path); len(odd) > 0 {
		t.Errorf("columns with other encodings than PLAIN, RLE and dictionaries: %q", odd)
	}
	kv := testkit.RowsOf(t, db, `SELECT decode(key) FROM parquet_kv_metadata(?)`, path)
	testkit.EqualSets(t, "footer keys", kv, []string{"ARROW:schema", ProvenanceKey})
}

// TestParquetWriterStatistics: the min, max and null count of every
// dictionary-encoded string column chunk, and of an integer one, are those
// of the row group's rows, as DuckDB computes them from the data. The
// writer sets the dictionary columns' statistics itself (writeDictionary);
// with a 16-byte dictionary limit they fall back to plain and arrow-go
// computes them.
func TestParquetWriterStatistics(t *testing.T) {
	t.Parallel()
	recs, _ := roundTripRows(t, 0, 3000, 1000)
	db := duckMemory(t)
	for _, o := range []writerOptions{defaultWriterOptions(), {workers: 2, dictionaryPageLimit: 16}} {
		path := filepath.Join(t.TempDir(), "stats.parquet")
		writeRoundTrip(t, path, o, recs)
		got := testkit.RowsOf(t, db, `SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value, stats_null_count
			FROM parquet_metadata(?) WHERE path_in_schema IN ('source', 'model', 'seq')`, path)
		want := testkit.RowsOf(t, db, `WITH r AS (SELECT seq // 1000 AS g, * FROM read_parquet(?))
			SELECT g, 'source', min(source), max(source), count(*) - count(source) FROM r GROUP BY g
			UNION ALL SELECT g, 'model', min(model), max(model), count(*) - count(model) FROM r GROUP BY g
			UNION ALL SELECT g, 'seq', min(seq), max(seq), 0 FROM r GROUP BY g`, path)
		if len(want) != 9 {
			t.Fatalf("expected 3 row groups × 3 columns, got %q", want)
		}
		testkit.EqualSets(t, fmt.Sprintf("dictionary limit %d: statistics", o.dictionaryPageLimit), got, want)
		// The figures themselves, for the first row group: rows 0–999,
		// model NULL where seq % 7 == 3.
		first := testkit.One(t, db, `SELECT stats_min_value || '|' || stats_max_value || '|' || stats_null_count
			FROM parquet_metadata(?) WHERE row_group_id = 0 AND path_in_schema = 'model'`, path)
		if first != "claude-opus-4|é ✓ 模型|143" {
			t.Errorf("dictionary limit %d: model statistics of row group 0 = %s", o.dictionaryPageLimit, first)
		}
	}
}

// TestParquetWriterReleasesWriterMemory gives the writer itself a checked
// allocator: its encoders, pages, the dictionaries built from string
// columns and the buffered row groups are all released once a row group
// is in the file — between writes the memory held does not grow — and at
// Close nothing is left, also when dictionaries fall back to plain.
func TestParquetWriterReleasesWriterMemory(t *testing.T) {
	t.Parallel()
	recs, want := roundTripRows(t, 0, 5000, 1024)
	for _, o := range []writerOptions{{workers: 2}, {workers: 2, pageSize: 64, dictionaryPageLimit: 16}} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		o.mem = mem
		path := filepath.Join(t.TempDir(), "mem.parquet")
		pf, err := createParquet(path, roundTripSchema, "mem", o)
		if err != nil {
			t.Fatal(err)
		}
		held := -1
		for k, rec := range recs {
			if err := pf.Write(rec); err != nil {
				t.Fatal(err)
			}
			// Between writes only the last row group is held (it goes to
			// the file in the next Write): as much as after the first.
			n := mem.CurrentAlloc()
			if held < 0 {
				held = n
			} else if n > held {
				t.Errorf("page size %d: %d bytes allocated after row group %d, %d after the first", o.pageSize, n, k, held)
			}
		}
		if err := pf.Close(nil); err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
		got := testkit.RowsOf(t, duckMemory(t), `SELECT count(*), count(DISTINCT subagent_id) FROM read_parquet(?)`, path)
		if w := fmt.Sprintf("%d|%d", len(want), len(want)); got[0] != w {
			t.Errorf("read back %s, want %s", got[0], w)
		}
	}
}

// TestParquetWriterEdgeBatches: a file with no rows, a batch whose
// dictionary column is entirely null, and a one-row batch all read back.
func TestParquetWriterEdgeBatches(t *testing.T) {
	t.Parallel()
	db := duckMemory(t)
	empty := filepath.Join(t.TempDir(), "empty.parquet")
	writeRoundTrip(t, empty, defaultWriterOptions(), nil)
	if got := testkit.One(t, db, `SELECT count(*) FROM read_parquet(?)`, empty); got != "0" {
		t.Errorf("empty file: %s rows", got)
	}

	rb := array.NewRecordBuilder(memory.NewGoAllocator(), roundTripSchema)
	defer rb.Release()
	for i := range 3 {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprint("id-", i))
		rb.Field(2).(*array.StringBuilder).Append("live")
		rb.Field(3).(*array.StringBuilder).AppendNull()
		rb.Field(4).(*array.Int64Builder).AppendNull()
		rb.Field(5).(*array.BooleanBuilder).AppendNull()
		rb.Field(6).(*array.TimestampBuilder).Append(0)
		rb.Field(7).(*array.TimestampBuilder).AppendNull()
	}
	nulls := rb.NewRecordBatch()
	defer nulls.Release()
	one := nulls.NewSlice(2, 3)
	defer one.Release()
	path := filepath.Join(t.TempDir(), "nulls.parquet")
	writeRoundTrip(t, path, defaultWriterOptions(), []arrow.RecordBatch{nulls, one})
	got := testkit.RowsOf(t, db, `SELECT seq, subagent_id, source, model, total_tokens, is_async, epoch(observed_at), settled_at FROM read_parquet(?)`, path)
	testkit.EqualSets(t, "all-null columns", got, []string{
		"0|id-0|live|NULL|NULL|NULL|0|NULL",
		"1|id-1|live|NULL|NULL|NULL|0|NULL",
		"2|id-2|live|NULL|NULL|NULL|0|NULL",
		"2|id-2|live|NULL|NULL|NULL|0|NULL",
	})
}

// TestParquetWriterWrongBatchIsAnError: a batch that does not fit the
// file's schema (a column of another type) fails the write with an error
// naming the column — from any column worker, never a crash.
func TestParquetWriterWrongBatchIsAnError(t *testing.T) {
	t.Parallel()
	recs, _ := roundTripRows(t, 0, 10, 10)
	good := recs[0]
	ints := array.NewInt64Builder(memory.NewGoAllocator())
	defer ints.Release()
	for i := range 10 {
		ints.Append(int64(i))
	}
	bad := ints.NewArray()
	defer bad.Release()
	for _, workers := range []int{1, 3} {
		cols := append([]arrow.Array(nil), good.Columns()...)
		fields := append([]arrow.Field(nil), good.Schema().Fields()...)
		cols[2], fields[2].Type = bad, arrow.PrimitiveTypes.Int64 // "source" is a string column in the file
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, good.NumRows())
		pf, err := createParquet(filepath.Join(t.TempDir(), "bad.parquet"), roundTripSchema, "bad", writerOptions{workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		err = pf.Write(rec)
		if err == nil || !strings.Contains(err.Error(), "column source") {
			t.Errorf("%d workers: Write = %v, want an error naming column source", workers, err)
		}
		t.Logf("%d workers: %v", workers, err)
		pf.Abort()
		rec.Release()
	}
}

// TestParquetWriterSplitsLargeBatches: a batch above DefaultRowGroupRows
// becomes several row groups, and every row reads back once, as written.
func TestParquetWriterSplitsLargeBatches(t *testing.T) {
	t.Parallel()
	n := DefaultRowGroupRows + 5
	recs, lines := roundTripRows(t, 0, n, n)
	path := filepath.Join(t.TempDir(), "big.parquet")
	writeRoundTrip(t, path, defaultWriterOptions(), recs)
	db := duckMemory(t)
	if got := testkit.One(t, db, `SELECT count(*) FROM parquet_metadata(?) WHERE column_id = 0`, path); got != "2" {
		t.Errorf("%s row groups, want 2", got)
	}
	want := fmt.Sprintf("%d|%d|0|%d", n, n, n-1)
	if got := testkit.One(t, db, `SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM read_parquet(?)`, path); got != want {
		t.Errorf("read back %s, want %s", got, want)
	}
	// The second row group is a slice (its arrays start at an offset):
	// its nulls and values are where they belong.
	got := testkit.RowsOf(t, db, `SELECT seq, subagent_id, source, model, total_tokens, is_async,
		strftime(observed_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ'),
		strftime(settled_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ')
		FROM read_parquet(?)`, path)
	testkit.EqualSets(t, "rows", got, normalizeMicros(lines))
}

// TestStringDictionary: a column's distinct values in order of first
// appearance, and per row the index of its value (null for a null) — below
// and above linearDictionary entries, where the lookup switches from
// comparisons to the map, and again for a second column with the same
// scratch.
func TestStringDictionary(t *testing.T) {
	t.Parallel()
	d := stringDictionary{mem: memory.NewGoAllocator()}
	var scratch []int32
	for _, distinct := range []int{3, linearDictionary, linearDictionary + 1, 40} {
		b := array.NewStringBuilder(memory.NewGoAllocator())
		var rows []string
		for i := range 500 {
			if i%9 == 4 {
				b.AppendNull()
				rows = append(rows, "NULL")
				continue
			}
			v := fmt.Sprintf("value-%02d", (i*7)%distinct)
			if i%5 == 0 {
				v = fmt.Sprintf("value-%02d", (i/5)%distinct) // runs and revisits
			}
			b.Append(v)
			rows = append(rows, v)
		}
		col := b.NewStringArray()
		b.Release()
		values, indices := d.encode(col, &scratch)
		if values.Len() != distinct {
			t.Errorf("%d distinct: dictionary of %d", distinct, values.Len())
		}
		seen := map[string]bool{}
		for i := range values.Len() {
			if seen[values.Value(i)] {
				t.Errorf("%d distinct: %q twice in the dictionary", distinct, values.Value(i))
			}
			seen[values.Value(i)] = true
		}
		idx := indices.(*array.Int32)
		for i, want := range rows {
			got := "NULL"
			if idx.IsValid(i) {
				got = values.Value(int(idx.Value(i)))
			}
			if got != want {
				t.Fatalf("%d distinct: row %d decodes to %q, want %q", distinct, i, got, want)
			}
		}
		if first := values.Value(0); first != rows[0] {
			t.Errorf("%d distinct: first entry %q, want the first row's %q", distinct, first, rows[0])
		}
		values.Release()
		indices.Release()
		col.Release()
	}
}
