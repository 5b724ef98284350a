package storegen

import "fmt"

// exactMix deals out n integer values whose sum is exactly total, in a
// random order, while holding only one counter per distinct value. It is how
// the scaled generator hits its row-count targets exactly (turns per session,
// subagents per turn, extra messages per turn) without materialising the
// population: draw() picks value v with probability counts[v]/remaining,
// which is sampling without replacement from the pre-computed multiset.
type exactMix struct {
	counts []int64 // counts[v] = how many draws still yield value v
	left   int64
}

// newExactMix builds a multiset of n values in [minV, maxV] summing to total,
// shaped like weights (weights[v] for value v; missing entries are 0), then
// shifted one unit at a time until the sum is exact. maxV is widened when the
// mean requires it.
func newExactMix(n, total int64, minV int, weights []int64) (*exactMix, error) {
	if n < 0 || total < 0 {
		return nil, fmt.Errorf("storegen: negative mix (%d values, total %d)", n, total)
	}
	if n == 0 {
		if total != 0 {
			return nil, fmt.Errorf("storegen: cannot spread %d over zero slots", total)
		}
		return &exactMix{counts: []int64{0}}, nil
	}
	if total < n*int64(minV) {
		return nil, fmt.Errorf("storegen: total %d below minimum %d for %d slots", total, n*int64(minV), n)
	}
	maxV := len(weights) - 1
	if need := int((total+n-1)/n) + 1; need > maxV {
		maxV = need
	}
	counts := make([]int64, maxV+1)
	// Largest-remainder apportionment of n over the weights (v >= minV).
	var wsum int64
	for v := minV; v < len(weights); v++ {
		wsum += weights[v]
	}
	if wsum == 0 {
		counts[minV] = n
	} else {
		var given int64
		rem := make([]int64, len(weights))
		for v := minV; v < len(weights); v++ {
			q := n * weights[v]
			counts[v] = q / wsum
			rem[v] = q % wsum
			given += counts[v]
		}
		for given < n {
			best := -1
			for v := minV; v < len(weights); v++ {
				if weights[v] > 0 && (best < 0 || rem[v] > rem[best]) {
					best = v
				}
			}
			counts[best]++
			rem[best] = -1
			given++
		}
	}
	var cur int64
	for v, c := range counts {
		cur += int64(v) * c
	}
	// Shift one unit of value at a time, always out of the most populous
	// bucket and in chunks of an eighth of it, so the shape is stretched
	// rather than emptied from one end.
	largest := func(lo, hi int) int {
		best := -1
		for v := lo; v <= hi; v++ {
			if counts[v] > 0 && (best < 0 || counts[v] > counts[best]) {
				best = v
			}
		}
		return best
	}
	for cur < total {
		v := largest(minV, maxV-1)
		if v < 0 {
			return nil, fmt.Errorf("storegen: cannot reach total %d", total)
		}
		m := min(total-cur, max(1, counts[v]/8))
		counts[v] -= m
		counts[v+1] += m
		cur += m
	}
	for cur > total {
		v := largest(minV+1, maxV)
		if v < 0 {
			return nil, fmt.Errorf("storegen: cannot reach total %d", total)
		}
		m := min(cur-total, max(1, counts[v]/8))
		counts[v] -= m
		counts[v-1] += m
		cur -= m
	}
	return &exactMix{counts: counts, left: n}, nil
}

func (m *exactMix) draw(r *rng) int {
	if m.left <= 0 {
		panic("storegen: exactMix exhausted")
	}
	x := r.int64n(m.left)
	for v, c := range m.counts {
		if x < c {
			m.counts[v]--
			m.left--
			return v
		}
		x -= c
	}
	panic("storegen: exactMix inconsistent")
}
