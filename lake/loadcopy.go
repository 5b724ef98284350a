package lake

import (
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// The warehouse's own definitions, used unchanged for the bucket's landing
// area: a manifest there is validated exactly as in a local warehouse.

// IsTable reports whether name is one of the tables this build publishes.
func IsTable(name string) bool { return load.IsTable(name) }

// PartFile is the one file of a table's run partition.
const PartFile = load.PartFile

// FileRel is a table's run file relative to a warehouse (or to landing/),
// with forward slashes.
func FileRel(table, installation, run string) string { return load.FileRel(table, installation, run) }

// MaxManifestBytes bounds what is read of one manifest.
const MaxManifestBytes = load.MaxManifestBytes

// ParseManifest decodes and validates a manifest found at
// _runs/<inst>/<run>.json; refused is true for a manifest of an unknown
// (newer) version.
func ParseManifest(b []byte, inst, run string) (models.Manifest, bool, error) {
	return load.ParseManifest(b, inst, run)
}

// ValidateManifest checks that m is a manifest this build could have
// written at _runs/<inst>/<run>.json.
func ValidateManifest(m models.Manifest, inst, run string) error {
	return load.ValidateManifest(m, inst, run)
}
