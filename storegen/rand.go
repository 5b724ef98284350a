package storegen

import (
	"encoding/hex"
	"math/bits"
	"time"
)

// rng is a small, fully specified PRNG (xoshiro256** seeded through
// splitmix64). It is implemented here rather than taken from math/rand so
// that a given seed produces the same store on every Go release: the
// checked-in demo store is compared byte for byte against a fresh
// generation.
type rng struct{ s [4]uint64 }

func newRNG(seed uint64) *rng {
	r := &rng{}
	x := seed
	for i := range r.s {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		r.s[i] = z ^ (z >> 31)
	}
	return r
}

func (r *rng) u64() uint64 {
	s := &r.s
	res := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return res
}

// intn returns a uniform int in [0, n). n must be > 0.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic("storegen: intn of non-positive bound")
	}
	bound := uint64(n)
	thresh := -bound % bound
	for {
		hi, lo := bits.Mul64(r.u64(), bound)
		if lo >= thresh {
			return int(hi)
		}
	}
}

// int64n returns a uniform int64 in [0, n). n must be > 0.
func (r *rng) int64n(n int64) int64 {
	if n <= 0 {
		panic("storegen: int64n of non-positive bound")
	}
	bound := uint64(n)
	thresh := -bound % bound
	for {
		hi, lo := bits.Mul64(r.u64(), bound)
		if lo >= thresh {
			return int64(hi)
		}
	}
}

// between returns a uniform int in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// chance reports true with probability num/den.
func (r *rng) chance(num, den int) bool { return r.intn(den) < num }

// dur returns a uniform duration in [lo, hi] at nanosecond resolution.
func (r *rng) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.int64n(int64(hi-lo)+1))
}

func pick[T any](r *rng, xs []T) T { return xs[r.intn(len(xs))] }

// shuffle is a Fisher-Yates shuffle.
func shuffle[T any](r *rng, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// uuid returns a random (version 4) UUID in canonical lowercase form, the
// shape of Kandev's uuid.New().String().
func (r *rng) uuid() string {
	var b [16]byte
	a, c := r.u64(), r.u64()
	for i := 0; i < 8; i++ {
		b[i] = byte(a >> (8 * i))
		b[8+i] = byte(c >> (8 * i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (r *rng) alnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = base62[r.intn(len(base62))]
	}
	return string(b)
}

func (r *rng) hexs(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.intn(16)]
	}
	return string(b)
}

// mattnLayout is the layout mattn/go-sqlite3 uses to write a time.Time into
// a TIMESTAMP column (SQLiteTimestampFormats[0]). In UTC it renders the
// offset as "+00:00"; ".999999999" trims trailing zeros and drops the
// fraction entirely at a whole second.
const mattnLayout = "2006-01-02 15:04:05.999999999-07:00"

// ts renders t exactly as Kandev's SQLite driver stores it.
func ts(t time.Time) string { return t.UTC().Format(mattnLayout) }

// keyText renders t as Kandev writes its kandev_meta activation keys
// (time.RFC3339Nano in UTC).
func keyText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
