package load

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kandev/kandev-extract/internal/seams"
)

// copyHashed copies a file of several chunks byte for byte and hashes the
// copy as it is made; a cancelled context stops it with the context's error.
func TestCopyHashed(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := make([]byte, 2*copyChunk+12345) // two whole chunks and a part
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	copyOf := func(ctx context.Context, name string) (int64, string, error) {
		in, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		dst := filepath.Join(dir, name)
		out, err := seams.CreateFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		return copyHashed(ctx, out, in, dst)
	}
	n, sum, err := copyOf(context.Background(), "copy")
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(data)) || sum != hex.EncodeToString(want[:]) {
		t.Errorf("copyHashed = %d bytes, %s; want %d, %x", n, sum, len(data), want)
	}
	got, err := os.ReadFile(filepath.Join(dir, "copy"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("the copy differs from the file")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := copyOf(ctx, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled copy: err = %v, want context.Canceled", err)
	}
}
