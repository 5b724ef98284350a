// Package hashkey is the 128-bit key a value is compared by where the
// extractor keeps hashes instead of values: the message pass's keys
// (extract/evidence) and the ids of the lookups decided in Go (extract).
// A key is two 64-bit maphash sums under two seeds of the process's own;
// a wrong answer needs two different values to collide in 128 bits.
package hashkey

import "hash/maphash"

// Key is a 128-bit key.
type Key [2]uint64

// Seeds are the two seeds of a Key's halves.
var Seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// String is the key of a string.
func String(s string) Key {
	return Key{maphash.String(Seeds[0], s), maphash.String(Seeds[1], s)}
}

// Bytes is String(string(b)), without the string (maphash hashes a string
// and a byte slice of the same content alike).
func Bytes(b []byte) Key {
	return Key{maphash.Bytes(Seeds[0], b), maphash.Bytes(Seeds[1], b)}
}

// Compare orders keys, as cmp.Compare does numbers: by the first half,
// then the second.
func Compare(a, b Key) int {
	switch {
	case a[0] < b[0]:
		return -1
	case a[0] > b[0]:
		return 1
	case a[1] < b[1]:
		return -1
	case a[1] > b[1]:
		return 1
	}
	return 0
}
