package load

import (
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// The writer's zstd is libzstd: init replaces arrow-go's codec only when
// arrow-go's still has the methods libzstdCodec keeps, and otherwise
// leaves the slower pure-Go encoder in place without a word. This test is
// that word: it fails the day an arrow-go upgrade changes the codec.
func TestParquetZstdIsLibzstd(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(libzstdCodec); !ok {
		t.Fatalf("the zstd codec is %T, not libzstd: arrow-go's codec no longer has the methods libzstdCodec keeps", codec)
	}
	src := []byte("kandev-extract kandev-extract kandev-extract")
	out, err := codec.(libzstdCodec).DecodeWithError(nil, codec.Encode(make([]byte, codec.CompressBound(int64(len(src)))), src))
	if err != nil || string(out) != string(src) {
		t.Fatalf("round trip: %q, %v", out, err)
	}
}
