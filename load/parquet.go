// Package load writes the warehouse: Parquet files published atomically per
// run, and a DuckDB database of views over the committed runs.
package load

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/models"
)

// ProvenanceKey is the Parquet key-value metadata key holding the run's
// provenance document (JSON).
const ProvenanceKey = "kandev_extract.provenance"

// DefaultRowGroupRows caps a row group; one record batch is one row group
// (a larger batch is split).
const DefaultRowGroupRows = 128 * 1024

// DataPageBytes is the target size of a data page before compression.
// arrow-go's default is 1 MiB; smaller pages keep zstd's input in cache and
// the per-page buffers every column writer grows afresh in each row group
// small: measured faster and leaner with files of about the same size
// (docs/benchmarks.md).
const DataPageBytes = 32 << 10

// ZstdLevel is the zstd level of every column: 1, the fastest encoder
// (see BenchmarkParquetWriteFact and docs/benchmarks.md).
const ZstdLevel = 1

// encoding is a column's encoding hint from the catalog
// (models.Encoding: low-cardinality columns are dictionary encoded,
// timestamps and metrics plain, (nearly) unique identifiers plain without
// statistics). A name the catalog does not know (a test's schema) gets the
// default of its type.
func encoding(f arrow.Field) models.Encoding {
	if e, ok := models.ColumnEncoding(f.Name); ok {
		return e
	}
	if f.Type.ID() == arrow.TIMESTAMP {
		return models.EncodePlain
	}
	return models.EncodeDictionary
}

// statisticsFor reports whether a column chunk carries min/max statistics:
// every column but the (nearly) unique identifiers, whose min and max prune
// nothing and whose byte-wise comparisons cost a quarter of the writer's
// time (docs/benchmarks.md).
func statisticsFor(f arrow.Field) bool { return encoding(f) != models.EncodeUnique }

// dictionaryFor reports whether a column is dictionary encoded: low
// cardinality strings (statuses, classification enums, models, installation
// and run ids) and small counts are; identifiers, timestamps and metrics
// are not.
func dictionaryFor(f arrow.Field) bool { return encoding(f) == models.EncodeDictionary }

// ParquetFile writes one table's rows for one run.
//
// Each record batch becomes one row group whose columns are encoded and
// compressed by its column workers at once (Parquet column chunks are
// independent); the row group is then written to the file in column order.
// This is arrow-go's low-level writer fed through pqarrow.WriteArrowToColumn,
// which is what pqarrow.FileWriter does one column at a time.
//
// Writing a row group to the file is serial, so it is left for the next
// Write (or Close), which does it on one goroutine while the others
// prepare the new batch's columns (definition levels, dictionaries).
type ParquetFile struct {
	Path string
	Rows int64

	w       *file.Writer
	fields  []arrow.Field
	workers []*columnWorker
	inputs  []columnInput // per column, reused
	order   []int         // column indices, largest first (reused)
	// open is the last row group: encoded and compressed, not yet in the
	// file.
	open file.BufferedRowGroupWriter
}

// DefaultWriterWorkers is how many columns of a row group are encoded at
// once: one per CPU the Go runtime may use.
func DefaultWriterWorkers() int { return runtime.GOMAXPROCS(0) }

// syncFile buffers the writer's many small writes (a row group is written
// column chunk by column chunk, each with its header and metadata) and
// makes Close flush the file to disk, so that a rename after Close
// publishes durable bytes.
type syncFile struct {
	*bufio.Writer
	f seams.File
}

func newSyncFile(f seams.File) *syncFile { return &syncFile{bufio.NewWriterSize(f, 256<<10), f} }

func (f *syncFile) Close() error {
	if err := f.Flush(); err != nil {
		f.f.Close()
		return err
	}
	if err := f.f.Sync(); err != nil {
		f.f.Close()
		return err
	}
	return f.f.Close()
}

// writerOptions are the writer's knobs. Production uses
// defaultWriterOptions; tests shrink pages and dictionaries to reach the
// writer's edge cases with few rows.
type writerOptions struct {
	workers int
	// pageSize and dictionaryPageLimit in bytes; 0 is arrow-go's default
	// (1 MiB each). Production uses DataPageBytes pages.
	pageSize, dictionaryPageLimit int64
	// uncompressed writes without zstd (BenchmarkZstdFloor's input).
	uncompressed bool
	// mem is what the writer allocates its pages and encoders from:
	// parquetBuffers in production; nil is Go's allocator (a test passes
	// a checked one).
	mem memory.Allocator
}

func defaultWriterOptions() writerOptions {
	return writerOptions{workers: DefaultWriterWorkers(), pageSize: DataPageBytes, mem: parquetBuffers}
}

// writerProperties are the Parquet settings of every file: zstd at
// ZstdLevel, dictionary encoding where dictionaryFor says so, statistics
// where statisticsFor says so.
func writerProperties(schema *arrow.Schema, createdBy string, o writerOptions) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(ZstdLevel),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
		parquet.WithCreatedBy(createdBy),
	}
	if o.uncompressed {
		opts = append(opts, parquet.WithCompression(compress.Codecs.Uncompressed))
	}
	if o.mem != nil {
		opts = append(opts, parquet.WithAllocator(o.mem))
	}
	if o.pageSize > 0 {
		opts = append(opts, parquet.WithDataPageSize(o.pageSize))
	}
	if o.dictionaryPageLimit > 0 {
		opts = append(opts, parquet.WithDictionaryPageSizeLimit(o.dictionaryPageLimit))
	}
	for _, f := range schema.Fields() {
		if !dictionaryFor(f) {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, false))
		}
		if !statisticsFor(f) {
			opts = append(opts, parquet.WithStatsFor(f.Name, false))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

// CreateParquet creates path (and its directory) for rows of schema:
// writerProperties, TIMESTAMP(MICROS, UTC), the Arrow schema stored under
// ARROW:schema as pqarrow stores it, DefaultWriterWorkers.
func CreateParquet(path string, schema *arrow.Schema, createdBy string) (*ParquetFile, error) {
	return createParquet(path, schema, createdBy, defaultWriterOptions())
}

func createParquet(path string, schema *arrow.Schema, createdBy string, o writerOptions) (*ParquetFile, error) {
	fail := func(err error) error { return fmt.Errorf("parquet %s: %w", path, err) }
	props := writerProperties(schema, createdBy, o)
	arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithCoerceTimestamps(arrow.Microsecond))
	pqSchema, err := pqarrow.ToParquet(schema, props, arrowProps)
	if err != nil {
		return nil, fail(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fail(err)
	}
	f, err := seams.CreateFile(path)
	if err != nil {
		return nil, fail(err)
	}
	meta := metadata.KeyValueMetadata{}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(schema, memory.DefaultAllocator)))
	sf := newSyncFile(f)
	w, err := file.NewParquetWriterWithError(sf, pqSchema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fail(err)
	}
	p := &ParquetFile{Path: path, w: w, fields: schema.Fields(), inputs: make([]columnInput, len(schema.Fields()))}
	for range min(max(o.workers, 1), len(p.fields)) {
		p.workers = append(p.workers, &columnWorker{
			ctx:  pqarrow.NewArrowWriteContext(context.Background(), &arrowProps),
			dict: stringDictionary{mem: props.Allocator()},
		})
	}
	return p, nil
}

// Write writes one record batch as a row group (as several if it holds
// more than DefaultRowGroupRows rows).
func (p *ParquetFile) Write(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	if n <= DefaultRowGroupRows {
		return p.writeRowGroup(rec)
	}
	for off := int64(0); off < n; off += DefaultRowGroupRows {
		part := rec.NewSlice(off, min(off+DefaultRowGroupRows, n))
		err := p.writeRowGroup(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *ParquetFile) writeRowGroup(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	defer p.releaseInputs()
	// Largest columns first, so the last column a worker picks is a small
	// one and the workers finish together.
	p.order = p.order[:0]
	for i := range p.fields {
		p.order = append(p.order, i)
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		return cmp.Compare(arrayBytes(rec.Column(b)), arrayBytes(rec.Column(a)))
	})
	// The previous row group goes to the file, and this one's column
	// writers are made, while the other workers prepare this batch's
	// columns; the first worker joins them when done.
	var (
		rg        file.BufferedRowGroupWriter
		serialErr error
	)
	nextRowGroup := func() {
		if p.open != nil {
			err := p.open.Close()
			p.open = nil
			if err != nil {
				serialErr = err
				return
			}
		}
		rg, serialErr = p.w.AppendBufferedRowGroupChecked()
		p.open = rg
	}
	err := p.parallel(nextRowGroup, func(w *columnWorker, i int) error {
		w.prepare(&p.inputs[i], rec.Column(i), p.fields[i])
		return nil
	})
	if err = errors.Join(serialErr, err); err != nil {
		return fmt.Errorf("parquet %s: %w", p.Path, err)
	}
	err = p.parallel(nil, func(w *columnWorker, i int) error {
		return w.write(rg, i, rec.Column(i), p.fields[i], &p.inputs[i])
	})
	if err != nil {
		return fmt.Errorf("parquet %s: %w", p.Path, err)
	}
	p.Rows += rec.NumRows()
	return nil
}

// parallel runs task for every column, in p.order, on the column workers
// (the first on the calling goroutine, after first if that is not nil).
// A panic in a task — arrow-go panics on some inputs it cannot write — on
// a worker goroutine would end the process (every installation of the
// run), so it becomes an error naming the column, like a task's error.
func (p *ParquetFile) parallel(first func(), task func(w *columnWorker, i int) error) error {
	var (
		next atomic.Int64
		errs = make([]error, len(p.workers))
		wg   sync.WaitGroup
	)
	work := func(k int) {
		i := -1
		defer func() {
			if r := recover(); r != nil {
				if i < 0 {
					errs[k] = fmt.Errorf("arrow-go panicked: %v", r)
				} else {
					errs[k] = fmt.Errorf("column %s: arrow-go panicked: %v", p.fields[i].Name, r)
				}
				next.Store(int64(len(p.order)))
			}
		}()
		if k == 0 && first != nil {
			first()
		}
		for {
			j := int(next.Add(1) - 1)
			if j >= len(p.order) {
				return
			}
			i = p.order[j]
			if err := task(p.workers[k], i); err != nil {
				errs[k] = fmt.Errorf("column %s: %w", p.fields[i].Name, err)
				next.Store(int64(len(p.order)))
				return
			}
		}
	}
	for k := 1; k < len(p.workers); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(k)
		}()
	}
	work(0)
	wg.Wait()
	return errors.Join(errs...)
}

func (p *ParquetFile) releaseInputs() {
	for i := range p.inputs {
		p.inputs[i].release()
	}
}

// arrayBytes is the size of an array's buffers.
func arrayBytes(a arrow.Array) int {
	n := 0
	for _, b := range a.Data().Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	return n
}

// columnWorker encodes column chunks on one goroutine. Its write context
// holds pqarrow's reused buffers, which must not be shared, and its
// dictionary map is scratch.
type columnWorker struct {
	ctx  context.Context
	dict stringDictionary
}

// columnInput is one column of the batch being written, prepared for its
// column writer: its definition levels when nullable, and when it is a
// dictionary column, its dictionary and indices. The slices are reused
// from batch to batch.
type columnInput struct {
	defs    []int16 // nil for a required column
	levels  []int16
	idx     []int32
	values  *array.String
	indices arrow.Array
}

func (in *columnInput) release() {
	if in.values != nil {
		in.values.Release()
		in.indices.Release()
		in.values, in.indices = nil, nil
	}
}

// prepare fills in for column arr of field f: the part of writing a column
// that needs no column writer.
func (w *columnWorker) prepare(in *columnInput, arr arrow.Array, f arrow.Field) {
	in.defs = nil
	if f.Nullable {
		in.levels = definitionLevels(in.levels, arr)
		in.defs = in.levels
	}
	if s, ok := arr.(*array.String); ok && dictionaryFor(f) {
		in.values, in.indices = w.dict.encode(s, &in.idx)
	}
}

func (w *columnWorker) write(rg file.BufferedRowGroupWriter, i int, arr arrow.Array, f arrow.Field, in *columnInput) error {
	cw, err := rg.Column(i)
	if err != nil {
		return err
	}
	indices := false // dictionary indices were written
	if in.values != nil {
		if indices, err = writeDictionary(cw, in); err != nil {
			return err
		}
	}
	if !indices {
		if err := pqarrow.WriteArrowToColumn(w.ctx, cw, arr, in.defs, nil, f.Nullable); err != nil {
			return err
		}
	}
	return nil
}

// dictionaryEncoder is the part of arrow-go's dictionary encoder (an
// internal type) that seeds it with a whole dictionary.
type dictionaryEncoder interface {
	PutDictionary(arrow.Array) error
	NumEntries() int
}

// writeDictionary writes a prepared low-cardinality string column to a
// fresh column writer as its dictionary and indices, with the page
// statistics taken from the dictionary. This is pqarrow's path for an
// Arrow dictionary array minus its statistics step: pqarrow does not know
// that every entry is used, and finds the used ones with an Arrow compute
// "unique" over the indices (a fifth of the fact writer's time when
// measured); stringDictionary's entries are exactly the
// values present. It reports false, having written nothing, when the
// writer is not dictionary encoding: the caller writes the plain strings.
// Measured by removal (docs/benchmarks.md): pqarrow's own path makes a
// large run 11 % slower (CPU +2.4 s). TestArrowGoSeamsStillMatch fails the
// day arrow-go's encoder loses the two methods it uses.
func writeDictionary(cw file.ColumnChunkWriter, in *columnInput) (bool, error) {
	enc, ok := cw.CurrentEncoder().(dictionaryEncoder)
	if !ok || enc.NumEntries() != 0 {
		return false, nil
	}
	if err := enc.PutDictionary(in.values); err != nil {
		return false, err
	}
	if stats := cw.PageStatistics(); stats != nil {
		n, nulls := in.indices.Len(), in.indices.NullN()
		stats.IncNulls(int64(nulls))
		stats.IncNumValues(int64(n - nulls))
		if err := stats.UpdateFromArrow(in.values, false); err != nil {
			return false, err
		}
	}
	return true, cw.WriteDictIndices(in.indices, in.defs, nil)
}

// definitionLevels are a flat nullable column's Parquet definition levels
// (1 for a value, 0 for a null), in defs if it is large enough.
func definitionLevels(defs []int16, arr arrow.Array) []int16 {
	n := arr.Len()
	if cap(defs) < n {
		defs = make([]int16, n)
	}
	defs = defs[:n]
	if arr.NullN() == 0 {
		for j := range defs {
			defs[j] = 1
		}
		return defs
	}
	// Straight from the validity bitmap: arr.IsValid per value was most
	// of this function's time.
	bits, off := arr.NullBitmapBytes(), arr.Data().Offset()
	for j := range defs {
		k := off + j
		defs[j] = int16(bits[k>>3] >> (k & 7) & 1)
	}
	return defs
}

// stringDictionary turns a low-cardinality string column into a dictionary
// and indices, which writeDictionary gives the column writer. Given the
// plain strings, arrow-go hashes each value through a memo table that
// boxes it into an interface: an allocation per value, the largest cost of
// writing the fact table before this (docs/benchmarks.md).
type stringDictionary struct {
	mem    memory.Allocator
	index  map[string]int32
	values []string
}

// linearDictionary is the dictionary size up to which a value is looked up
// by comparing it with each entry (a length check, mostly) rather than by
// hashing it: statuses and classifications have a handful of values.
const linearDictionary = 8

// encode returns col's distinct values, in order of first appearance, and
// each row's index into them (null where col is null), held in *scratch.
func (d *stringDictionary) encode(col *array.String, scratch *[]int32) (values *array.String, indices arrow.Array) {
	if d.index == nil {
		d.index = map[string]int32{}
	}
	n := col.Len()
	if cap(*scratch) < n {
		*scratch = make([]int32, n)
	}
	idx := (*scratch)[:n]
	last, lastIdx := "", int32(-1)
	for j := range idx {
		if col.IsNull(j) {
			idx[j] = 0
			continue
		}
		v := col.Value(j)
		if lastIdx >= 0 && v == last {
			idx[j] = lastIdx
			continue
		}
		var (
			k  int32
			ok bool
		)
		if len(d.values) <= linearDictionary {
			for x, known := range d.values {
				if known == v {
					k, ok = int32(x), true
					break
				}
			}
		} else {
			k, ok = d.index[v]
		}
		if !ok {
			k = int32(len(d.values))
			d.index[v] = k
			d.values = append(d.values, v)
		}
		idx[j], last, lastIdx = k, v, k
	}
	vb := array.NewStringBuilder(d.mem)
	vb.AppendValues(d.values, nil)
	values = vb.NewStringArray()
	vb.Release()
	// The map and values point into col's buffer: drop them now.
	clear(d.index)
	clear(d.values)
	d.values = d.values[:0]

	var validity *memory.Buffer
	if col.NullN() > 0 {
		validity = memory.NewResizableBuffer(d.mem)
		validity.Resize(int(bitutil.BytesForBits(int64(n))))
		bits := validity.Bytes()
		for j := range n {
			bitutil.SetBitTo(bits, j, col.IsValid(j))
		}
		defer validity.Release()
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, n,
		[]*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, col.NullN(), 0)
	indices = array.MakeFromData(data)
	data.Release()
	return values, indices
}

// Close writes the last row group, stamps the key-value metadata and
// closes the file durably.
func (p *ParquetFile) Close(meta map[string]string) error {
	if p.open != nil {
		err := p.open.Close()
		p.open = nil
		if err != nil {
			p.w.Close() // releases the file; its content no longer matters
			return fmt.Errorf("parquet %s: %w", p.Path, err)
		}
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := p.w.AppendKeyValueMetadata(k, meta[k]); err != nil {
			p.w.Close()
			return fmt.Errorf("parquet %s: metadata: %w", p.Path, err)
		}
	}
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("parquet %s: close: %w", p.Path, err)
	}
	return nil
}

// Abort closes the file without caring for its content (it is discarded).
func (p *ParquetFile) Abort() {
	p.w.Close()
	os.Remove(p.Path)
}
