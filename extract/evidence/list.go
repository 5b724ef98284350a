package evidence

// list is an append-only list of the message pass's values: a Go slice
// with the few operations the pass uses. (The values were once kept in
// mremap'd memory outside the Go heap; measured by removal that bought
// nothing end to end — docs/benchmarks.md.)
type list[T any] struct{ s []T }

// Append adds v at the end.
func (l *list[T]) Append(v T) { l.s = append(l.s, v) }

// All is the values, to read, sort or compact in place.
func (l *list[T]) All() []T { return l.s }

// Len is the number of values.
func (l *list[T]) Len() int { return len(l.s) }

// Truncate keeps the first n values.
func (l *list[T]) Truncate(n int) { l.s = l.s[:n] }

// Free lets the collector have the values.
func (l *list[T]) Free() { l.s = nil }
