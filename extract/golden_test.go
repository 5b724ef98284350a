package extract

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// The SQL each dialect runs, rendered against the real fixture schemas and
// kept under testdata/sql/<dialect>/ so a reviewer reads what runs, and a
// change to it shows in the diff. `go test ./extract -run TestRenderedSQL
// -update` rewrites the files.
var update = flag.Bool("update", false, "rewrite the golden SQL files")

// readable breaks the one-line scans at their select items and joins (the
// files are for reading; what runs is the unbroken text).
var readable = strings.NewReplacer(", CASE ", ",\n\tCASE ", ", COALESCE(", ",\n\tCOALESCE(", " LEFT JOIN ", "\nLEFT JOIN ",
	` FROM "`, "\nFROM \"")

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
		specs["scan_"+tbl.Source], _ = plan.ScanSpec(tbl, &Fanout{})
		specs["scan_"+tbl.Source+"_unproven"] = Spec(tbl, true)
	}
	return specs
}

func checkGolden(t *testing.T, dialect, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "sql", dialect, name+".sql")
	// The cap marker is drawn at random per process (caps.go).
	got = strings.TrimSpace(readable.Replace(strings.ReplaceAll(got, capMarker, "<cap marker>"))) + "\n"
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s: the rendered SQL differs from %s (run `go test ./extract -run TestRenderedSQL -update` and review the diff)%s", name, path, firstDifference(string(want), got))
	}
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
	checkGolden(t, "sqlite", "writer_health", sqliteHealth)
	checkGolden(t, "sqlite", "message_evidence", fmt.Sprintf(sqliteEvidence, "<rows: the subagent rows' bounded ids>", "<found: a row observed at or after ?1>"))
	checkGolden(t, "sqlite", "message_pass_raw", msgPassRaw)
	checkGolden(t, "sqlite", "message_pass_messages", msgPassMessages)
	checkGolden(t, "sqlite", "message_pass_subagents", msgPassSubagents)
	checkGolden(t, "sqlite", "message_pass_subagents_fanout", msgPassSubagentsFanout)
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
	checkGolden(t, "postgres", "writer_health", fmt.Sprintf(pgHealth, "<exclusion of messages whose metadata is not JSON, after a failed first try>"))
	checkGolden(t, "postgres", "message_evidence", fmt.Sprintf(pgEvidence, "<exclusion of messages whose metadata is not JSON, after a failed first try>",
		"<rows: the subagent rows' ids>", "<found: a row observed at or after $1>"))
	checkGolden(t, "postgres", "message_pass_messages", fmt.Sprintf(pgPassMessages, "<exclusion of messages whose metadata is not JSON, after a failed first try>"))
	checkGolden(t, "postgres", "message_pass_subagents", pgPassSubagents)
	checkGolden(t, "postgres", "message_pass_subagents_fanout", pgPassSubagentsFanout)
}

// firstDifference names the first line where want and got differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("\n  line %d, file:     %.300s\n  line %d, rendered: %.300s", i+1, a, i+1, b)
		}
	}
	return ""
}
