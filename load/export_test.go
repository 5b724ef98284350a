package load

import "encoding/json"

// SetRebuildMemoryLimit sets the memory limit of the first attempt of the
// rebuilds that follow, and returns what restores it (for the test that
// makes a rebuild run out of memory; not for parallel tests).
func SetRebuildMemoryLimit(limit string) (restore func()) {
	old := rebuildMemoryLimit
	rebuildMemoryLimit = limit
	return func() { rebuildMemoryLimit = old }
}

// AnalyticViewNames lists the views created from views/, in order.
func AnalyticViewNames() ([]string, error) {
	views, err := analyticViews()
	var names []string
	for _, v := range views {
		names = append(names, v.name)
	}
	return names, err
}

// SetTemplateKeys replaces the layout and schema keys of the built-in
// template's record ("" keeps one), and returns what restores them (not
// for parallel tests).
func SetTemplateKeys(layout, schema string) (restore func()) {
	old := templateStampJSON
	var s databaseStamp
	if err := json.Unmarshal(old, &s); err != nil {
		panic(err)
	}
	if layout != "" {
		s.Layout = layout
	}
	if schema != "" {
		s.Schema = schema
	}
	templateStampJSON, _ = json.Marshal(s)
	return func() { templateStampJSON = old }
}
