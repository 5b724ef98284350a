package load

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// TestBufferPoolAllocations: every buffer is as long as asked, zeroed —
// also when it is a reused one that was written — and aligned to 64 bytes;
// Reallocate keeps the contents and zeroes what it adds; small and huge
// buffers are left to Go's allocator.
func TestBufferPoolAllocations(t *testing.T) {
	t.Parallel()
	p := &bufferPool{}
	aligned := func(b []byte) bool { return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64 == 0 }
	for _, size := range []int{1024, 1025, 3000, 4096, 70_000, 1 << 20} {
		for round := range 3 {
			b := p.Allocate(size)
			if len(b) != size || cap(b)&(cap(b)-1) != 0 || cap(b) < size || cap(b) >= 2*size {
				t.Fatalf("Allocate(%d): len %d cap %d, want len %d in a power-of-two class", size, len(b), cap(b), size)
			}
			if !aligned(b) {
				t.Errorf("Allocate(%d): not 64-byte aligned", size)
			}
			if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("Allocate(%d), round %d: byte %d not zero", size, round, i)
			}
			for i := range b {
				b[i] = 0xA5
			}
			p.Free(b)
		}
	}
	if b := p.Allocate(100); cap(b) != 100 {
		t.Errorf("a small buffer: cap %d, want Go's exact 100", cap(b))
	}
	if k, ok := class(1 << (maxClass + 1)); ok {
		t.Errorf("a buffer above the largest class is pooled (class %d)", k)
	}

	b := p.Allocate(2000)
	for i := range b {
		b[i] = byte(i)
	}
	b = p.Reallocate(2048, b) // in place: same class
	if b[1999] != byte(1999%256) || b[2000] != 0 || b[2047] != 0 {
		t.Errorf("in-place Reallocate: kept %d, added %d…%d", b[1999], b[2000], b[2047])
	}
	b = p.Reallocate(5000, b) // moves to the 8 KiB class
	if len(b) != 5000 || cap(b) != 8192 || b[1999] != byte(1999%256) || b[4999] != 0 {
		t.Errorf("growing Reallocate: len %d cap %d, kept %d, added %d", len(b), cap(b), b[1999], b[4999])
	}
	p.Free(b)
}

// poisonPool is the writer's buffer pool, but every freed buffer is
// overwritten before it can be handed out again: a buffer still read after
// arrow-go or the writer freed it would put garbage in the file.
type poisonPool struct{ bufferPool }

func (p *poisonPool) Free(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xA5
	}
	p.bufferPool.Free(b)
}

func (p *poisonPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return p.bufferPool.Reallocate(size, b)
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// TestParquetWriterPooledBuffers writes the round-trip rows through a
// poisoned buffer pool, with production and tiny pages and one and two
// workers: DuckDB reads back exactly the rows written, and the file is
// byte-identical to the one written with Go's allocator (nothing is read
// from a buffer after it was freed).
func TestParquetWriterPooledBuffers(t *testing.T) {
	t.Parallel()
	recs, want := roundTripRows(t, 0, 4096, 1024)
	db := duckMemory(t)
	for _, o := range []writerOptions{
		{pageSize: DataPageBytes},
		{pageSize: 8 * 1024, dictionaryPageLimit: 16},
		{pageSize: 1, dictionaryPageLimit: 1},
	} {
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("page %d, dictionary %d, %d workers", o.pageSize, o.dictionaryPageLimit, workers)
			o.workers = workers
			dir := t.TempDir()
			plain := filepath.Join(dir, "go.parquet")
			writeRoundTrip(t, plain, o, recs)
			pooled := filepath.Join(dir, "pooled.parquet")
			o.mem = &poisonPool{}
			// Twice into the same pool: the second file reuses the first's
			// freed (poisoned) buffers.
			writeRoundTrip(t, pooled, o, recs)
			os.Remove(pooled)
			writeRoundTrip(t, pooled, o, recs)
			o.mem = nil
			got := testkit.RowsOf(t, db, `SELECT seq, subagent_id, source, model, total_tokens, is_async,
				strftime(observed_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ'),
				strftime(settled_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ')
				FROM read_parquet(?)`, pooled)
			testkit.EqualSets(t, name+": rows", got, normalizeMicros(want))
			a, err := os.ReadFile(plain)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(pooled)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s: the pooled file differs from Go's allocator's (%d vs %d bytes)", name, len(b), len(a))
			}
		}
	}
}
