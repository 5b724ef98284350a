package evidence

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
)

// The message pass's keys: SQL values hashed with their storage class,
// tool-call members of turns and sessions, and the table that numbers the
// turns and sessions the pass meets (msgpass.go reads, msgtally.go counts).

// Typed hashing of SQL values: the storage class is part of the key, as in
// SQL's DISTINCT, EXCEPT and UNION (an INTEGER and a REAL of equal value
// are the same value; a TEXT and a BLOB of the same bytes are not). Keys
// are hashkey.Keys, under hashkey.Seeds.

const (
	tagNull = iota + 1
	tagNum
	tagText
	tagBlob
	tagOverlong // an id over the 1 MiB read bound, by its length
)

// sqlValue is a SQL value as the driver returned it, classified.
type sqlValue struct {
	tag  byte
	s    string // text or blob bytes
	n    uint64 // a number's canonical bits, or an overlong id's length
	isNu bool
}

func classifyValue(v any) sqlValue {
	switch x := v.(type) {
	case nil:
		return sqlValue{tag: tagNull}
	case string:
		return sqlValue{tag: tagText, s: x}
	case []byte:
		return sqlValue{tag: tagBlob, s: string(x)}
	case int64:
		return sqlValue{tag: tagNum, n: uint64(x)}
	case float64:
		if x == math.Trunc(x) && x >= -9.2e18 && x <= 9.2e18 {
			return sqlValue{tag: tagNum, n: uint64(int64(x))}
		}
		if x == 0 {
			x = 0 // -0 is 0
		}
		return sqlValue{tag: tagNum, n: math.Float64bits(x) ^ 1<<63, isNu: true}
	case bool:
		if x {
			return sqlValue{tag: tagNum, n: 1}
		}
		return sqlValue{tag: tagNum}
	case time.Time:
		// Not produced for the expression columns read here.
		return sqlValue{tag: tagText, s: x.String()}
	}
	return sqlValue{tag: tagText, s: fmt.Sprint(v)}
}

func (v sqlValue) null() bool { return v.tag == tagNull }

// nonEmpty is COALESCE(v, ”) <> ”.
func (v sqlValue) nonEmpty() bool { return v.tag != tagNull && !(v.tag == tagText && v.s == "") }

func (v sqlValue) write(h *maphash.Hash) {
	h.WriteByte(v.tag)
	switch v.tag {
	case tagText, tagBlob:
		var n [8]byte
		putUint64(n[:], uint64(len(v.s)))
		h.Write(n[:])
		h.WriteString(v.s)
	case tagNum, tagOverlong:
		var n [9]byte
		putUint64(n[:], v.n)
		if v.isNu {
			n[8] = 1
		}
		h.Write(n[:])
	}
}

func putUint64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// keyBucket is a key's bucket for bucketSort: its top 16 bits, uniform
// (the keys are hashes under a seed of the process's own).
func keyBucket(k hashkey.Key) uint32 { return uint32(k[0] >> 48) }

const keyBuckets = 1 << 16

// memberGroup is a member's bucket for bucketSort: its group.
func memberGroup(m member) uint32 { return m.group }

// hashPair is the 128-bit key of a pair of values.
func (p *msgPass) hashPair(a, b sqlValue) hashkey.Key {
	var k hashkey.Key
	for i := range k {
		h := &p.h[i]
		h.Reset()
		a.write(h)
		b.write(h)
		k[i] = h.Sum64()
	}
	return k
}

// pairKey is the key of a (session, tool call) pair: hashPair, with its
// lowest bit saying whether the pair is plain — two TEXT values without a
// ':' — so that the distinct concatenations of collisions can be counted
// from the distinct keys (see finish).
func (p *msgPass) pairKey(a, b sqlValue) hashkey.Key {
	k := p.hashPair(a, b)
	k[1] &^= 1
	if plainPair(a, b) {
		k[1] |= 1
	}
	return k
}

func plainPair(a, b sqlValue) bool {
	return a.tag == tagText && b.tag == tagText && !strings.Contains(a.s, ":") && !strings.Contains(b.s, ":")
}

// hashConcat is the 128-bit key of a || ':' || b (both not NULL): the
// text of the concatenation, whatever the storage classes.
func (p *msgPass) hashConcat(a, b sqlValue) hashkey.Key {
	var k hashkey.Key
	for i := range k {
		h := &p.h[i]
		h.Reset()
		h.WriteString(a.text())
		h.WriteByte(':')
		h.WriteString(b.text())
		k[i] = h.Sum64()
	}
	return k
}

// text is the value as || renders it (only TEXT and BLOB ids reach it).
func (v sqlValue) text() string {
	if v.tag == tagNum && !v.isNu {
		return strconv.FormatInt(int64(v.n), 10)
	}
	return v.s
}

func (p *msgPass) hash64(v sqlValue) uint64 {
	h := &p.h[0]
	h.Reset()
	v.write(h)
	return h.Sum64()
}

// member is one tool call of a turn or session: the group exactly (its
// index in the pass's table of turns or sessions), the tool call by a
// 64-bit hash (two halves: 12 bytes, no padding).
type member struct {
	group, lo, hi uint32
}

func newMember(group uint32, tc uint64) member { return member{group, uint32(tc), uint32(tc >> 32)} }

func cmpMember(a, b member) int {
	switch {
	case a.group != b.group:
		return cmpUint32(a.group, b.group)
	case a.hi != b.hi:
		return cmpUint32(a.hi, b.hi)
	}
	return cmpUint32(a.lo, b.lo)
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// groupTable numbers the distinct turn (or session) values of the
// subagent-task messages: TEXT ids (all of Kandev's) in an open-addressing
// index of 4-byte slots over their strings (a Go map of strings took ~25 MB
// for the 500,000 turns and sessions of the large store, this 4), any other
// value (NULL, a BLOB) in a small side table.
type groupTable struct {
	slots  []uint32 // index+1 of a TEXT group, 0 when free; len a power of 2
	text   int      // TEXT groups
	seed   maphash.Seed
	other  map[sqlKey]uint32
	values idStore // by index: the id as the evidence prints it
	odd    map[uint32]sqlValue
	// The TEXT group id last found (lastOK): rows of one turn or session
	// mostly follow each other in a table, so most ids are found here
	// without hashing. Only id, which the pass alone calls, reads it: a
	// finished table stays read-only (Fanout).
	last   string
	lastID uint32
	lastOK bool
}

// sqlKey is a map key for an id that is not TEXT.
type sqlKey struct {
	tag byte
	s   string
	n   uint64
}

func newGroupTable() groupTable {
	return groupTable{slots: make([]uint32, 1024), seed: hashkey.Seeds[0], other: map[sqlKey]uint32{}, odd: map[uint32]sqlValue{}}
}

func (t *groupTable) id(v sqlValue) uint32 {
	if v.tag == tagText && t.lastOK && v.s == t.last {
		return t.lastID
	}
	i, ok := t.lookup(v)
	if !ok {
		i = t.add(v)
	}
	if v.tag == tagText {
		t.last, t.lastID, t.lastOK = t.values.at(i), i, true
	}
	return i
}

// add numbers a new group.
func (t *groupTable) add(v sqlValue) uint32 {
	i := uint32(t.values.len())
	v.s = t.values.add(v.s)
	if v.tag == tagText {
		if 2*(t.text+1) > len(t.slots) {
			t.grow()
		}
		t.place(v.s, i)
		t.text++
	} else {
		t.other[sqlKey{v.tag, v.s, v.n}] = i
		t.odd[i] = v
	}
	return i
}

// place puts TEXT group i (of string s) in its slot.
func (t *groupTable) place(s string, i uint32) {
	mask := uint64(len(t.slots) - 1)
	for h := maphash.String(t.seed, s) & mask; ; h = (h + 1) & mask {
		if t.slots[h] == 0 {
			t.slots[h] = i + 1
			return
		}
	}
}

func (t *groupTable) grow() {
	old := t.slots
	t.slots = make([]uint32, 2*len(old))
	for _, x := range old {
		if x != 0 {
			t.place(t.values.at(x-1), x-1)
		}
	}
}

func (t *groupTable) lookup(v sqlValue) (uint32, bool) {
	if v.tag == tagText {
		mask := uint64(len(t.slots) - 1)
		for h := maphash.String(t.seed, v.s) & mask; ; h = (h + 1) & mask {
			x := t.slots[h]
			if x == 0 {
				return 0, false
			}
			if t.values.at(x-1) == v.s { // slots hold TEXT groups only
				return x - 1, true
			}
		}
	}
	i, ok := t.other[sqlKey{v.tag, v.s, v.n}]
	return i, ok
}

// value is the group's SQL value.
func (t *groupTable) value(i uint32) sqlValue {
	if v, ok := t.odd[i]; ok {
		return v
	}
	return sqlValue{tag: tagText, s: t.values.at(i)}
}

// idStore holds strings, by index, where the collector does not look: the
// bytes in chunks of idChunk (a value over idMaxValue in one of its
// own) and each string as its chunk, offset and length. A []string of the
// message pass's ~500,000 turn and session ids was that many pointers for
// every collection to follow; here the collector sees one per chunk.
type idStore struct {
	chunks [][]byte
	refs   []idRef
}

type idRef struct{ chunk, off, n uint32 }

func (s *idStore) len() int { return len(s.refs) }

// add stores a copy of v and returns the copy.
func (s *idStore) add(v string) string {
	n := len(v)
	last := len(s.chunks) - 1
	if n > idMaxValue || last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < n {
		s.chunks = append(s.chunks, make([]byte, 0, max(n, idChunk)))
		last++
	}
	off := len(s.chunks[last])
	s.chunks[last] = append(s.chunks[last], v...)
	s.refs = append(s.refs, idRef{chunk: uint32(last), off: uint32(off), n: uint32(n)})
	return s.at(uint32(len(s.refs) - 1))
}

// at is string i; it shares the store's bytes, which never move.
func (s *idStore) at(i uint32) string {
	r := s.refs[i]
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&s.chunks[r.chunk][r.off], int(r.n))
}

// An idStore's chunks: idChunk bytes, a value over idMaxValue in one of its
// own (the sizes of the reader's chunks of TEXT values, sqlitedrv's).
const (
	idChunk    = 64 << 10
	idMaxValue = 4 << 10
)
