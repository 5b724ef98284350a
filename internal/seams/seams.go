// Package seams holds the points where tests inject faults into the
// warehouse writer (load): a full disk or an unwritable directory (every
// new file of the warehouse is created through CreateFile), a rebuild that
// runs out of memory (RebuildMemoryLimit), an older built-in template
// (TemplateKeys). load reads them; only tests change them, through the Set
// functions, each of which returns what restores the previous value.
//
// The state is process-wide and unsynchronised, like the package variables
// it replaces: a test that sets a seam must not run in parallel with any
// other test of its process that writes a warehouse (its own parallel
// subtests may, when the injected function tells their files apart).
package seams

import (
	"io"
	"os"
)

// File is a new file of the warehouse as the writer sees it: an *os.File,
// unless a test injected another.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

var createFile = createExclusive

// createExclusive creates path for writing, never over an existing file.
func createExclusive(path string) (File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// CreateFile creates a new file in the warehouse (a Parquet file, a
// manifest's or binding's temporary file, a copy of the database), never
// over an existing one. Tests run as root, which file modes do not stop,
// so a full disk or an unwritable warehouse is injected here.
func CreateFile(path string) (File, error) { return createFile(path) }

// SetCreateFile makes CreateFile call create until restore is called.
func SetCreateFile(create func(path string) (File, error)) (restore func()) {
	old := createFile
	createFile = create
	return func() { createFile = old }
}

var rebuildMemoryLimit string

// RebuildMemoryLimit is the memory limit a test set for the first attempt
// of a rebuild, or "" for the writer's own (load.DuckDBMemoryLimit).
func RebuildMemoryLimit() string { return rebuildMemoryLimit }

// SetRebuildMemoryLimit sets the memory limit of the first attempt of the
// rebuilds that follow ("" for the writer's own) until restore is called.
func SetRebuildMemoryLimit(limit string) (restore func()) {
	old := rebuildMemoryLimit
	rebuildMemoryLimit = limit
	return func() { rebuildMemoryLimit = old }
}

var templateLayout, templateSchema string

// TemplateKeys are the layout and schema keys a test put in place of the
// built-in template's record's; "" keeps the record's.
func TemplateKeys() (layout, schema string) { return templateLayout, templateSchema }

// SetTemplateKeys replaces the layout and schema keys of the built-in
// template's record ("" keeps the one in place) until restore is called.
func SetTemplateKeys(layout, schema string) (restore func()) {
	oldLayout, oldSchema := templateLayout, templateSchema
	if layout != "" {
		templateLayout = layout
	}
	if schema != "" {
		templateSchema = schema
	}
	return func() { templateLayout, templateSchema = oldLayout, oldSchema }
}
