package load

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// Base tables written as Parquet (the catalog's, in its order), each
// exposed as <table>_history (every retained committed run) and <table>
// (the latest committed run per installation).
var baseTables = models.TableNames()

// The analytic views are SQL files in views/, run in file-name order (a
// view may use any view of a lower number). Each file creates one view,
// named as the file after its number, with its COMMENT ON texts; a first
// line "-- kx:disclose" appends the current disclosures to the view's
// comment at each rebuild.
//
//go:embed views/*.sql
var viewFiles embed.FS

// viewFile is one analytic view's SQL file.
type viewFile struct {
	name, sql string
	disclose  bool
}

// analyticViews reads views/ in order.
func analyticViews() ([]viewFile, error) {
	entries, err := fs.ReadDir(viewFiles, "views")
	if err != nil {
		return nil, err
	}
	var out []viewFile
	for _, e := range entries { // sorted by name
		b, err := fs.ReadFile(viewFiles, "views/"+e.Name())
		if err != nil {
			return nil, err
		}
		_, rest, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		if !ok || !strings.Contains(string(b), "CREATE VIEW "+rest+" AS") {
			return nil, fmt.Errorf("views/%s: must create the view %q its name says", e.Name(), rest)
		}
		if strings.Contains(string(b), strings.TrimSpace(disclosuresLead)) {
			// discloseComments cuts a comment there.
			return nil, fmt.Errorf("views/%s: must not contain %q", e.Name(), strings.TrimSpace(disclosuresLead))
		}
		out = append(out, viewFile{name: rest, sql: string(b), disclose: strings.HasPrefix(string(b), "-- kx:disclose")})
	}
	return out, nil
}
