// Package load writes the warehouse: Parquet files published atomically per
// run, and a DuckDB database of views over the committed runs.
package load

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ProvenanceKey is the Parquet key-value metadata key holding the run's
// provenance document (JSON).
const ProvenanceKey = "kandev_extract.provenance"

// DefaultRowGroupRows caps a row group; one record batch is one row group.
const DefaultRowGroupRows = 128 * 1024

// ZstdLevel is the zstd level of every column: 1, the fastest encoder
// (see BenchmarkParquetWriteFact and docs/benchmarks.md).
const ZstdLevel = 1

// highCardinality are string columns that are (nearly) unique per row:
// dictionary encoding only costs hashing there, and the dictionary
// overflows its page and falls back to plain anyway.
var highCardinality = map[string]bool{
	"subagent_id": true, "tool_call_id": true, "parent_tool_call_id": true,
	"agent_execution_id": true, "execution_id": true, "turn_id": true,
	"child_session_id": true, "agent_id": true, "session_id": true,
	"row_id": true, "raw_value": true,
}

// metrics are integer columns with (nearly) unique values.
var metrics = map[string]bool{"total_tokens": true, "tool_use_count": true, "duration_ms": true}

// dictionaryFor reports whether a column is dictionary encoded: low
// cardinality strings (statuses, classification enums, installation and
// run ids, task and session keys that repeat) and small counts are;
// identifiers, timestamps and metrics are not.
func dictionaryFor(f arrow.Field) bool {
	switch {
	case f.Type.ID() == arrow.TIMESTAMP:
		return false
	case highCardinality[f.Name], metrics[f.Name]:
		return false
	}
	return true
}

// ParquetFile writes one table's rows for one run.
type ParquetFile struct {
	Path string
	file *syncFile
	fw   *pqarrow.FileWriter
	Rows int64
}

// fileSink is what a Parquet file is written to: an *os.File.
type fileSink interface {
	io.Writer
	Sync() error
	Close() error
}

// createFile creates a new Parquet file. It is a test seam: a test swaps
// it to inject a full disk or an unwritable warehouse (root ignores file
// modes, so chmod cannot).
var createFile = func(path string) (fileSink, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// syncFile makes the writer's Close flush the file to disk first, so that a
// rename after Close publishes durable bytes.
type syncFile struct{ fileSink }

func (f *syncFile) Close() error {
	if err := f.fileSink.Sync(); err != nil {
		f.fileSink.Close()
		return err
	}
	return f.fileSink.Close()
}

// CreateParquet creates path (and its directory) for rows of schema: zstd
// at ZstdLevel, dictionary encoding where dictionaryFor says so,
// TIMESTAMP(MICROS, UTC), the Arrow schema stored.
func CreateParquet(path string, schema *arrow.Schema, createdBy string) (*ParquetFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("parquet %s: %w", path, err)
	}
	f, err := createFile(path)
	if err != nil {
		return nil, fmt.Errorf("parquet %s: %w", path, err)
	}
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(ZstdLevel),
		parquet.WithDictionaryDefault(true),
		parquet.WithMaxRowGroupLength(DefaultRowGroupRows),
		parquet.WithCreatedBy(createdBy),
	}
	for _, f := range schema.Fields() {
		if !dictionaryFor(f) {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, false))
		}
	}
	props := parquet.NewWriterProperties(opts...)
	sf := &syncFile{f}
	fw, err := pqarrow.NewFileWriter(schema, sf, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithCoerceTimestamps(arrow.Microsecond)))
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("parquet %s: %w", path, err)
	}
	return &ParquetFile{Path: path, file: sf, fw: fw}, nil
}

// Write writes one record batch as a row group.
func (p *ParquetFile) Write(rec arrow.RecordBatch) error {
	if err := p.fw.Write(rec); err != nil {
		return fmt.Errorf("parquet %s: %w", p.Path, err)
	}
	p.Rows += rec.NumRows()
	return nil
}

// Close stamps the key-value metadata and closes the file durably.
func (p *ParquetFile) Close(meta map[string]string) error {
	for k, v := range meta {
		if err := p.fw.AppendKeyValueMetadata(k, v); err != nil {
			return fmt.Errorf("parquet %s: metadata: %w", p.Path, err)
		}
	}
	if err := p.fw.Close(); err != nil {
		return fmt.Errorf("parquet %s: close: %w", p.Path, err)
	}
	return nil
}

// Abort closes the file without caring for its content (it is discarded).
func (p *ParquetFile) Abort() {
	p.fw.Close()
	os.Remove(p.Path)
}
