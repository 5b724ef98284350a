package pipeline

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// output is one table being written in a run: its staged Parquet file and
// the Arrow builder that fills it.
type output struct {
	table *models.Table
	file  *load.ParquetFile
	b     *transform.Builder
}

// outputs are a run's Parquet files: one per catalog table, in catalog
// order, but the archives (written by DuckDB once these are closed: see
// load.Staging.WriteArchive).
type outputs struct {
	list []*output
	by   map[string]*output
}

// openOutputs creates the staged file and builder of every table. The
// builders' batches hold opts.BatchRows rows; writes are timed into
// *parquet.
func openOutputs(stage *load.Staging, opts Options, parquet *time.Duration) (*outputs, error) {
	o := &outputs{by: map[string]*output{}}
	for _, t := range models.Tables() {
		if t.Archive != nil {
			continue
		}
		schema := t.Schema()
		f, err := load.CreateParquet(stage.Path(t.Name), schema, "kandev-extract "+ExtractorVersion())
		if err != nil {
			o.abort()
			o.release()
			return nil, err
		}
		out := &output{table: t, file: f, b: transform.NewBuilder(opts.Allocator, schema, timedSink{f, parquet})}
		out.b.BatchRows = opts.BatchRows
		o.list = append(o.list, out)
		o.by[t.Name] = out
	}
	return o, nil
}

// builder is a table's builder.
func (o *outputs) builder(table string) *transform.Builder { return o.by[table].b }

// flush writes every builder's buffered rows.
func (o *outputs) flush() error {
	for _, out := range o.list {
		if err := out.b.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// close closes every file with the key-value metadata kv (the
// provenance). On an error the files not yet closed are aborted.
func (o *outputs) close(kv map[string]string) error {
	for i, out := range o.list {
		err := out.file.Close(kv)
		out.file = nil
		if err != nil {
			abort(o.list[i+1:])
			return err
		}
	}
	return nil
}

// abort removes every file not closed.
func (o *outputs) abort() { abort(o.list) }

// release frees the builders' buffers.
func (o *outputs) release() {
	for _, out := range o.list {
		out.b.Release()
	}
}

func abort(outs []*output) {
	for _, o := range outs {
		if o.file != nil {
			o.file.Abort()
		}
	}
}

// timedSink is a table's Parquet file, timing the writes (they run on the
// transformer goroutine, then on the caller's once it has finished).
type timedSink struct {
	f       *load.ParquetFile
	elapsed *time.Duration
}

func (t timedSink) Write(rec arrow.RecordBatch) error {
	t0 := time.Now()
	err := t.f.Write(rec)
	*t.elapsed += time.Since(t0)
	return err
}
