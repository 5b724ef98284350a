package evidence

import (
	"strings"
	"testing"
	"unsafe"
)

// TestGroupTableKeepsCopies: the message pass keeps each distinct turn
// and session id; it must keep a copy, never the reader's chunk that
// holds other rows' values (metadata included) with it.
func TestGroupTableKeepsCopies(t *testing.T) {
	// The id as the reader hands it out: a string in memory holding
	// other rows' values with it.
	src := []byte("turn-0001session-0001")
	turn := unsafe.String(&src[0], 9)
	g := newGroupTable()
	i := g.id(sqlValue{tag: tagText, s: turn})
	if g.values.at(i) != "turn-0001" {
		t.Fatalf("kept %q", g.values.at(i))
	}
	if unsafe.StringData(g.values.at(i)) == unsafe.StringData(turn) {
		t.Fatal("the group table keeps the reader's chunk, not a copy of the id")
	}
}

// TestIDStoreHoldsEveryValue: strings of every size, the empty one and
// ones larger than a chunk included, come back as stored, however many
// chunks they fill, and stay valid as the store grows.
func TestIDStoreHoldsEveryValue(t *testing.T) {
	var s idStore
	var want, got []string
	for i := range 40000 {
		v := strings.Repeat(string(rune('a'+i%26)), i%97)
		switch i % 5000 {
		case 17:
			v = strings.Repeat("x", idChunk+i) // its own chunk
		case 18:
			v = strings.Repeat("y", idMaxValue+1)
		}
		want = append(want, v)
		got = append(got, s.add(v))
	}
	if s.len() != len(want) {
		t.Fatalf("%d values stored, want %d", s.len(), len(want))
	}
	if len(s.chunks) < 10 {
		t.Fatalf("only %d chunks: the test should fill several", len(s.chunks))
	}
	for i, v := range want {
		if got[i] != v || s.at(uint32(i)) != v {
			t.Fatalf("value %d: added %q, at %q; want %q", i, firstBytes(got[i]), firstBytes(s.at(uint32(i))), firstBytes(v))
		}
	}
}

func firstBytes(s string) string { return s[:min(len(s), 20)] }
