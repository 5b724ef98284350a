package hub

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
)

// parquetSchema reads the Arrow schema of a Parquet object (its footer
// only, through range reads) and converts it to an Iceberg schema with
// fresh field ids: the files carry none, and the tables map them by name.
func (h *Hub) parquetSchema(ctx context.Context, key string) (*iceberg.Schema, error) {
	attrs, err := h.bucket.Blob().Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	ra := &blobReaderAt{ctx: ctx, b: h.bucket.Blob(), key: key, size: attrs.Size}
	pf, err := file.NewParquetReader(ra)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	sc, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, err
	}
	return table.ArrowSchemaToIcebergWithFreshIDs(sc, false)
}

// localParquetSchema is parquetSchema of a local file.
func localParquetSchema(path string) (*iceberg.Schema, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	sc, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, err
	}
	return table.ArrowSchemaToIcebergWithFreshIDs(sc, false)
}

// blobReaderAt reads an object by ranges (parquet.ReaderAtSeeker).
type blobReaderAt struct {
	ctx  context.Context
	b    *blob.Bucket
	key  string
	size int64
	pos  int64
}

func (r *blobReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.size-off)
	rr, err := r.b.NewRangeReader(r.ctx, r.key, off, n, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Close()
	got, err := io.ReadFull(rr, p[:n])
	if err == nil && got < len(p) {
		err = io.EOF
	}
	return got, err
}

func (r *blobReaderAt) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *blobReaderAt) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("bad whence")
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek to %d", offset)
	}
	r.pos = offset
	return offset, nil
}
