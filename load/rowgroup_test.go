package load

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kandev/kandev-extract/internal/seams"
)

// The last row group of a file is written by the next Write or by Close
// (ParquetFile.open): these tests hold that to what it promises.

// TestParquetWriterDoesNotKeepTheBatch: the last row group is written to
// the file by the next Write or by Close, but from what it encoded, not
// from the batch: a caller may reuse the batch's memory as soon as Write
// returns. Every buffer of each batch is overwritten after its Write, and
// the file is still byte-identical to one written from untouched batches.
func TestParquetWriterDoesNotKeepTheBatch(t *testing.T) {
	t.Parallel()
	clean, _ := roundTripRows(t, 0, 4096, 1024)
	scribbled, _ := roundTripRows(t, 0, 4096, 1024)
	for _, workers := range []int{1, 2} {
		o := defaultWriterOptions()
		o.workers = workers
		dir := t.TempDir()
		want := filepath.Join(dir, "clean.parquet")
		writeRoundTrip(t, want, o, clean)

		got := filepath.Join(dir, "scribbled.parquet")
		pf, err := createParquet(got, roundTripSchema, "round-trip", o)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range scribbled {
			if err := pf.Write(rec); err != nil {
				t.Fatal(err)
			}
			for _, col := range rec.Columns() {
				for _, b := range col.Data().Buffers() {
					if b != nil {
						for i := range b.Bytes() {
							b.Bytes()[i] = 0xA5
						}
					}
				}
			}
		}
		if err := pf.Close(map[string]string{ProvenanceKey: `{"test":true}`}); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(want)
		b, _ := os.ReadFile(got)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%d workers: the file differs when the batches are overwritten after Write (%d vs %d bytes)", workers, len(b), len(a))
		}
		scribbled, _ = roundTripRows(t, 0, 4096, 1024)
	}
}

// refusingSink accepts the first limit bytes and then fails like a full
// disk, and records whether it was closed.
type refusingSink struct {
	limit  int
	closed bool
}

func (s *refusingSink) Write(b []byte) (int, error) {
	if len(b) > s.limit {
		n := s.limit
		s.limit = 0
		return n, &os.PathError{Op: "write", Path: "sink", Err: syscall.ENOSPC}
	}
	s.limit -= len(b)
	return len(b), nil
}
func (s *refusingSink) Sync() error  { return nil }
func (s *refusingSink) Close() error { s.closed = true; return nil }

// TestParquetWriterLastRowGroupFails: the last row group goes to the file
// in Close; when the disk refuses it, Close reports the error and still
// closes the file.
func TestParquetWriterLastRowGroupFails(t *testing.T) {
	recs, _ := roundTripRows(t, 0, 50_000, 50_000) // a row group larger than the 256 KiB file buffer
	sink := &refusingSink{limit: 1 << 10}
	t.Cleanup(seams.SetCreateFile(func(string) (seams.File, error) { return sink, nil }))
	pf, err := createParquet(filepath.Join(t.TempDir(), "full.parquet"), roundTripSchema, "full", defaultWriterOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Write(recs[0]); err != nil {
		t.Fatalf("Write: %v (the row group is written by Close)", err)
	}
	err = pf.Close(nil)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Close = %v, want the full disk", err)
	}
	if !sink.closed {
		t.Error("the file was left open")
	}
}
