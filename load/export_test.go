package load

// SetRebuildMemoryLimit sets the memory limit of the first attempt of the
// rebuilds that follow, and returns what restores it (for the test that
// makes a rebuild run out of memory; not for parallel tests).
func SetRebuildMemoryLimit(limit string) (restore func()) {
	old := rebuildMemoryLimit
	rebuildMemoryLimit = limit
	return func() { rebuildMemoryLimit = old }
}

// DisclosuresLead is disclosuresLead, for the tests of the comments.
const DisclosuresLead = disclosuresLead

// AnalyticViewNames lists the views created from views/, in order.
func AnalyticViewNames() ([]string, error) {
	views, err := analyticViews()
	var names []string
	for _, v := range views {
		names = append(names, v.name)
	}
	return names, err
}
