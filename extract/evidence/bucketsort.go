package evidence

import "slices"

// bucketSort sorts l by cmp, as slices.SortFunc does, in place and in
// about linear time when the values spread over many buckets: bucket(v),
// below n, must agree with cmp (a value of a lower bucket sorts before
// every value of a higher one). The values are distributed to their
// buckets in place (American flag sort: one pass to count, one to move
// each value once), then each bucket is sorted by cmp — by insertion when
// small, else by slices.SortFunc, so a store that puts most values in one
// bucket (a turn with every tool call) costs what the plain sort costs.
//
// The message pass's lists are sorted by group (dense numbers) or by
// hash (uniform bits): sorting 1 M of them by comparisons alone was most
// of the ~1 s of single-threaded work that ends the pass. Measured by
// removal (docs/benchmarks.md): slices.SortFunc instead makes a run 8 %
// slower on large and 6 % on grown.
func bucketSort[T any](l []T, n int, bucket func(T) uint32, cmp func(a, b T) int) {
	if len(l) < 2 {
		return
	}
	if n <= 1 || n > 4*len(l)+1024 || len(l) >= 1<<32-1 {
		slices.SortFunc(l, cmp) // too few buckets to help, or too many to count
		return
	}
	// first[b] is where bucket b begins (first[n]: len(l)); next[b] where
	// its next value goes while they are distributed.
	first := make([]uint32, n+1)
	for _, v := range l {
		first[bucket(v)+1]++
	}
	for b := 1; b <= n; b++ {
		first[b] += first[b-1]
	}
	next := slices.Clone(first[:n])
	for b := range n {
		for next[b] < first[b+1] {
			v := l[next[b]]
			vb := bucket(v)
			// Carry v to its bucket, and what it displaces on, until a
			// value of bucket b comes back.
			for int(vb) != b {
				l[next[vb]], v = v, l[next[vb]]
				next[vb]++
				vb = bucket(v)
			}
			l[next[b]] = v
			next[b]++
		}
	}
	for b := 0; b < n; b++ {
		part := l[first[b]:first[b+1]]
		if len(part) > 24 {
			slices.SortFunc(part, cmp)
			continue
		}
		for i := 1; i < len(part); i++ {
			for j := i; j > 0 && cmp(part[j], part[j-1]) < 0; j-- {
				part[j], part[j-1] = part[j-1], part[j]
			}
		}
	}
}
