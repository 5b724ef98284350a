package evidence

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
)

// bucketSort orders as slices.SortFunc does — the same list for a total
// order, the same runs of equal keys otherwise — whatever the buckets
// hold: spread out, one giant bucket (a turn with every tool call), many
// empty ones, a bucket for the values with no group, tiny lists.
func TestBucketSortMatchesSortFunc(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keyBucket := func(k hashkey.Key) uint32 { return uint32(k[0] >> 48) }
	for _, n := range []int{0, 1, 2, 3, 25, 1000, 70000, 300000} {
		keys := make([]hashkey.Key, n)
		for i := range keys {
			keys[i] = hashkey.Key{r.Uint64(), r.Uint64()}
			if i%7 == 3 && i > 0 {
				keys[i] = keys[i-1] // duplicates, which Compact removes after
			}
			if i%11 == 5 && i > 0 {
				keys[i][0] = keys[i-1][0] // the same high word
			}
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, hashkey.Compare)
		bucketSort(keys, 1<<16, keyBucket, hashkey.Compare)
		if !slices.Equal(keys, want) {
			t.Fatalf("%d hash keys: not sorted as SortFunc sorts them", n)
		}
	}
	members := func(n, groups int, giant float64) []member {
		l := make([]member, n)
		for i := range l {
			g := uint32(r.IntN(groups))
			if r.Float64() < giant {
				g = uint32(groups / 2)
			}
			l[i] = newMember(g, r.Uint64()%uint64(3*n+1))
		}
		return l
	}
	groupOf := func(m member) uint32 { return m.group }
	for _, c := range []struct {
		n, groups int
		giant     float64
	}{{200000, 50000, 0}, {200000, 50000, 0.9}, {100000, 1, 0}, {50000, 190000, 0}, {5, 3, 0}, {100000, 7, 0.5}} {
		l := members(c.n, c.groups, c.giant)
		want := slices.Clone(l)
		slices.SortFunc(want, cmpMember)
		bucketSort(l, c.groups, groupOf, cmpMember)
		if !slices.Equal(l, want) {
			t.Fatalf("%d members in %d groups (giant %v): not sorted as SortFunc sorts them", c.n, c.groups, c.giant)
		}
	}
	// Sorted by group and hash only, as the fan-out sorts its calls: runs
	// of equal (group, hash) may come in any order within, so compare
	// sortedness and the multiset.
	const groups = 4000
	calls := make([]fanCall, 150000)
	for i := range calls {
		g := uint32(r.IntN(groups + 1))
		if g == groups {
			g = noGroup
		}
		calls[i] = fanCall{tc: r.Uint64() % 50000, turn: g | uint32(r.IntN(2))<<31, sess: uint32(i)}
	}
	group := func(c fanCall) uint32 { return c.turn & groupMask }
	cmp := func(a, b fanCall) int {
		if ga, gb := group(a), group(b); ga != gb {
			return cmpUint32(ga, gb)
		}
		return cmpUint32(uint32(a.tc), uint32(b.tc))
	}
	bucket := func(c fanCall) uint32 { return min(group(c), groups) }
	got := slices.Clone(calls)
	bucketSort(got, groups+1, bucket, cmp)
	if !slices.IsSortedFunc(got, cmp) {
		t.Fatal("fan-out calls not sorted")
	}
	bySess := func(l []fanCall) []fanCall {
		l = slices.Clone(l)
		slices.SortFunc(l, func(a, b fanCall) int { return cmpUint32(a.sess, b.sess) })
		return l
	}
	if !slices.Equal(bySess(got), bySess(calls)) {
		t.Fatal("fan-out calls: values lost or changed by the sort")
	}
}
