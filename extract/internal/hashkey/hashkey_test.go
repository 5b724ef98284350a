package hashkey

import (
	"strings"
	"testing"
)

// TestBytesIsString: an id hashed from its bytes is the key of its text.
func TestBytesIsString(t *testing.T) {
	for _, s := range []string{"", "a", "id-1", strings.Repeat("é", 128), "\x00\xff"} {
		if Bytes([]byte(s)) != String(s) {
			t.Errorf("%q: the bytes' key differs from the text's", s)
		}
	}
}
