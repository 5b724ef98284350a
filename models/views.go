package models

// Classifications the warehouse's views derive from the stored ones. They
// are constants here like every other enum, so the view SQL (load/views)
// uses no literal that the rest of the code does not know.

// ParentResolution says whether a nested subagent's parent row was found.
type ParentResolution string

const (
	ParentResolved    ParentResolution = "resolved"
	ParentNotObserved ParentResolution = "parent_not_observed"
	ParentAmbiguous   ParentResolution = "ambiguous"
)

// CountCompleteness qualifies a count the views derive (executions per
// session, nesting depth): exact, a lower bound, or unknown.
type CountCompleteness string

const (
	CountExact      CountCompleteness = "exact"
	CountLowerBound CountCompleteness = "lower_bound"
	CountUnknown    CountCompleteness = "unknown"
)
