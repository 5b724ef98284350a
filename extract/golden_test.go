package extract

import (
	"context"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/extract/internal/golden"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// The SQL each dialect runs for the scans, rendered against the real
// fixture schemas and kept under testdata/sql/<dialect>/ so a reviewer
// reads what runs, and a change to it shows in the diff (the message
// pass's: extract/evidence). `go test ./extract -run TestRenderedSQL
// -update` rewrites the files.

// goldenSpecs are the scans of every catalog table read from its source,
// by file name: scan_<table> is what a run issues on the fixture (Kandev's
// schema: every id and the subagent key proven unique, the fan-out from
// the message pass), scan_<table>_unproven what it issues when nothing is
// proven (every count in SQL: Spec).
func goldenSpecs(t *testing.T, snap models.Snapshot) map[string]models.TableSpec {
	t.Helper()
	plan, err := PlanScans(context.Background(), snap, true)
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]models.TableSpec{}
	for _, tbl := range models.Scanned() {
		specs["scan_"+tbl.Source], _ = plan.ScanSpec(tbl, &evidence.Fanout{})
		specs["scan_"+tbl.Source+"_unproven"] = Spec(tbl, true)
	}
	return specs
}

func checkGolden(t *testing.T, dialect, name, got string) {
	t.Helper()
	// The cap marker is drawn at random per process (caps.go).
	golden.Check(t, "extract", dialect, name, strings.ReplaceAll(got, capMarker, "<cap marker>"))
}

func TestRenderedSQLSQLite(t *testing.T) {
	ctx := context.Background()
	src, err := OpenSQLite(ctx, testkit.Fixture(t, "fresh-activated.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for name, spec := range goldenSpecs(t, snap) {
		cols, err := snap.Columns(ctx, spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		q, err := SQLiteScanSQL(spec, cols)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "sqlite", name, q)
	}
}

func TestRenderedSQLPostgres(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
	src, err := OpenPostgres(ctx, c.DSN(db), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	s, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap := s.(*pgSnapshot)
	for name, spec := range goldenSpecs(t, snap) {
		cols, err := snap.Columns(ctx, spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		types, err := snap.pgColumnTypes(ctx, spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		q, _, err := pgScanSQL("", spec, cols, types)
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "postgres", name, q)
	}
}
