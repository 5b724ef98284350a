package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/lake/laketest"
	"github.com/kandev/kandev-extract/models"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestIsConflict: what iceberg-go v0.7.0 returns for a lost race is
// retried; anything else is not.
func TestIsConflict(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`), true},
		{errors.New(`requirement failed: branch "main" was created concurrently`), true},
		{fmt.Errorf("wrapped: %w", table.ErrCommitFailed), true},
		{errors.New("connection refused"), false},
		{errors.New("cannot add files that are already referenced by table"), false},
		{nil, false},
	} {
		if got := isConflict(c.err); got != c.want {
			t.Errorf("isConflict(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestCommitRetriesOnlyTheCommit: another writer commits to the table
// between the hub's load and its commit (the catalog then answers "branch
// main has changed"); the hub reloads, sees what the other writer added,
// and commits only the rest: no row doubled, no data file written twice,
// the lost attempt's manifests removed.
func TestCommitRetriesOnlyTheCommit(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, ""))
	u := "file://" + filepath.ToSlash(t.TempDir())
	var runs []models.Manifest
	for _, s := range []struct{ fixture, name string }{{"fresh-activated.db", "laptop-x"}, {"upgraded-backfill.db", "laptop-y"}} {
		dir := filepath.Join(t.TempDir(), "cache")
		m := laketest.Run(t, dir, s.fixture, s.name)
		if err := lake.Publish(ctx, u, dir, s.name, m.RunID); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, m)
	}
	h, err := Open(ctx, Config{Bucket: u, Catalog: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	// The competing writer: at the first commit attempt on
	// dim_task_history, it registers laptop-y's file there itself, as
	// another hub would.
	target := h.HistoryTable("dim_task")
	attempts := 0
	var competitor error
	testHookBeforeCommit = func(ctx context.Context, id table.Identifier, attempt int) {
		if strings.Join(id, ".") != strings.Join(target, ".") {
			return
		}
		attempts++
		if attempt != 0 {
			return
		}
		competitor = func() error {
			tbl, err := h.cat.LoadTable(ctx, id)
			if err != nil {
				return err
			}
			y := runs[1]
			uri := dataURI(tbl, y.InstallationID, y.RunID)
			fsys, err := tbl.FS(ctx)
			if err != nil {
				return err
			}
			df, err := table.FileToDataFile(ctx, fsys, uri, tbl.Schema(), tbl.Spec(), 0, tbl.Properties())
			if err != nil {
				return err
			}
			tx := tbl.NewTransaction()
			if err := tx.AddDataFiles(ctx, []iceberg.DataFile{df}, snapshotProps("other-hub", []string{y.InstallationID + "/" + y.RunID})); err != nil {
				return err
			}
			_, err = tx.Commit(ctx)
			return err
		}()
	}
	defer func() { testHookBeforeCommit = nil }()
	rep, err := h.Ingest(ctx, IngestOptions{})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if competitor != nil {
		t.Fatalf("competing commit: %v", competitor)
	}
	if attempts != 2 || rep.Retries < 1 || len(rep.Ingested) != 2 {
		t.Fatalf("attempts on %v: %d, report %+v; want one conflict, then success", target, attempts, rep)
	}
	tbl, err := h.cat.LoadTable(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	files, err := liveDataFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	var rows, want int64
	seen := map[string]bool{}
	for _, df := range files {
		if seen[df.FilePath()] {
			t.Errorf("%s registered twice", df.FilePath())
		}
		seen[df.FilePath()] = true
		rows += df.Count()
	}
	for _, m := range runs {
		want += m.Provenance.Tables["dim_task"].RowsWritten
	}
	if len(files) != 2 || rows != want {
		t.Fatalf("dim_task_history: %d files, %d rows; want 2 files, %d rows", len(files), rows, want)
	}
	// The lost attempt left nothing behind.
	plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Files()) != 0 {
		t.Fatalf("orphans after the retried commit: %v", plan.Files())
	}
	// Ingesting again changes nothing.
	rep, err = h.Ingest(ctx, IngestOptions{})
	if err != nil || rep.Commits != 0 || len(rep.Ingested) != 0 || rep.AlreadyIngested != 2 {
		t.Fatalf("second ingest: %+v %v", rep, err)
	}
}

// TestIngestRefusesTamperedRuns: a landing file whose bytes differ from
// the manifest's SHA-256, and a manifest that is not valid, are reported
// and not ingested, leave nothing in the tables' locations, and do not
// stop the good run beside them.
func TestIngestRefusesTamperedRuns(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, ""))
	bucketDir := t.TempDir()
	u := "file://" + filepath.ToSlash(bucketDir)
	dir := filepath.Join(t.TempDir(), "cache")
	good := laketest.Run(t, dir, "execution-since.db", "good")
	if err := lake.Publish(ctx, u, dir, "good", good.RunID); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "cache")
	bad := laketest.Run(t, dir2, "execution-since.db", "tampered")
	if err := lake.Publish(ctx, u, dir2, "tampered", bad.RunID); err != nil {
		t.Fatal(err)
	}
	// Another file of the same size under the tampered run's key.
	b, err := lake.OpenBucket(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key := lake.DataKey("dim_task", "tampered", bad.RunID)
	data, err := b.ReadSmall(ctx, key, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := b.Blob().WriteAll(ctx, key, data, nil); err != nil {
		t.Fatal(err)
	}
	// And a manifest that does not parse.
	if err := b.Blob().WriteAll(ctx, "landing/_runs/junk/20260101T000000Z-abcdef.json", []byte("{not json"), nil); err != nil {
		t.Fatal(err)
	}
	h, err := Open(ctx, Config{Bucket: u, Catalog: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rep, err := h.Ingest(ctx, IngestOptions{})
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(rep.Ingested) != 1 || rep.Ingested[0].Installation != "good" {
		t.Fatalf("ingested %+v, want only the good run", rep.Ingested)
	}
	reasons := map[string]string{}
	for _, p := range rep.Problems {
		reasons[p.Installation] = p.Reason
	}
	if !strings.Contains(reasons["tampered"], "SHA-256") || !strings.Contains(reasons["junk"], "JSON") || len(rep.Problems) != 2 {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	ctx = h.IO(ctx)
	bases, err := h.BaseTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range bases {
		for _, id := range []table.Identifier{h.HistoryTable(base), h.CurrentTable(base)} {
			tbl, err := h.cat.LoadTable(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			files, err := liveDataFiles(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			for _, df := range files {
				if strings.Contains(df.FilePath(), "installation_id=tampered") {
					t.Errorf("%v holds a file of the tampered run: %s", id, df.FilePath())
				}
			}
			plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(0))
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Files()) > 0 {
				t.Errorf("%v: orphans %v", id, plan.Files())
			}
		}
	}
	// The refused run stays refused (and reported) on the next ingest.
	rep, err = h.Ingest(ctx, IngestOptions{})
	if err != nil || len(rep.Ingested) != 0 || len(rep.Problems) != 2 || rep.AlreadyIngested != 1 {
		t.Fatalf("second ingest: %+v %v", rep, err)
	}
}
