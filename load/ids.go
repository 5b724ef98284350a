package load

import (
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// idBatch is how many values ReadIDs decodes at a time.
const idBatch = 4096

// ReadIDs hands fn every non-NULL value of a string column of a Parquet
// file (a run's id column), row group by row group, and returns how many
// it handed. The bytes are the reader's: valid only during the call.
//
// The deletion comparison reads the previous run's ids this way rather
// than through DuckDB: a query streaming a million ids to Go held ~60 MiB
// more resident (DuckDB's buffers and the rows on their way), at the
// nightly run's peak (docs/benchmarks.md, change 43).
func ReadIDs(path, column string, fn func(id []byte)) (n int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// The file was verified against its manifest, but a reader of a
	// malformed file may still panic: that is this file's error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: reading column %s: %v", path, column, r)
		}
	}()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer rdr.Close()
	col := rdr.MetaData().Schema.ColumnIndexByName(column)
	if col < 0 {
		return 0, fmt.Errorf("%s: no column %s", path, column)
	}
	if pt := rdr.MetaData().Schema.Column(col).PhysicalType(); pt != parquet.Types.ByteArray {
		return 0, fmt.Errorf("%s: column %s is %s, not a string", path, column, pt)
	}
	values := make([]parquet.ByteArray, idBatch)
	defs := make([]int16, idBatch)
	for g := 0; g < rdr.NumRowGroups(); g++ {
		cr, err := rdr.RowGroup(g).Column(col)
		if err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
		r, ok := cr.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return n, fmt.Errorf("%s: column %s has no string reader", path, column)
		}
		for r.HasNext() {
			_, got, err := r.ReadBatch(idBatch, values, defs, nil)
			if err != nil {
				return n, fmt.Errorf("%s: column %s: %w", path, column, err)
			}
			for _, v := range values[:got] {
				fn(v)
			}
			n += int64(got)
		}
	}
	return n, nil
}
