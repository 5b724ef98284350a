package extract

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// The snapshot's transaction (and a fork's) runs with work_mem raised to
// 64 MB, so the scans' aggregates do not spill; a higher setting of the
// operator's is kept.
func TestSnapshotRaisesWorkMemOnly(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, testkit.Fixture(t, "fresh-activated.pg.sql"))
	workMem := func(snap models.Snapshot) string {
		t.Helper()
		var got string
		if err := snap.Query(ctx, `SELECT current_setting('work_mem')`, nil, func(row []any) error {
			got, _ = row[0].(string)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct{ options, want string }{{"", "64MB"}, {"-c work_mem=256MB", "256MB"}} {
		dsn := c.DSN(db)
		if tc.options != "" {
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			// %20, not the + of a form encoding: libpq's URI syntax.
			sep := "?"
			if u.RawQuery != "" {
				sep = "&"
			}
			dsn += sep + "options=" + strings.ReplaceAll(url.QueryEscape(tc.options), "+", "%20")
		}
		src, err := OpenPostgres(ctx, dsn, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := workMem(snap); got != tc.want {
			t.Errorf("options %q: snapshot work_mem %s, want %s", tc.options, got, tc.want)
		}
		fork, why, err := Fork(ctx, snap)
		if err != nil || fork == nil {
			t.Fatalf("fork: %v (%s)", err, why)
		}
		if got := workMem(fork); got != tc.want {
			t.Errorf("options %q: fork work_mem %s, want %s", tc.options, got, tc.want)
		}
		fork.Close()
		snap.Close()
		src.Close()
	}
}
