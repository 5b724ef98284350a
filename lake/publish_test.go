package lake_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"

	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/lake/laketest"
	"github.com/kandev/kandev-extract/models"
)

// landed lists every key in the bucket.
func landed(t *testing.T, b *lake.Bucket) []string {
	t.Helper()
	var keys []string
	it := b.Blob().List(nil)
	for {
		o, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
}

func openBucket(t *testing.T, u string) *lake.Bucket {
	t.Helper()
	b, err := lake.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// checkLanded asserts the run's objects and manifest are in the landing
// area exactly as the local warehouse holds them.
func checkLanded(t *testing.T, b *lake.Bucket, local string, m models.Manifest) {
	t.Helper()
	ctx := context.Background()
	for table, sum := range m.Checksums {
		got, err := b.Summarize(ctx, lake.DataKey(table, m.InstallationID, m.RunID))
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if got != sum {
			t.Errorf("%s: landed %+v, manifest %+v", table, got, sum)
		}
		want, err := os.ReadFile(filepath.Join(local, filepath.FromSlash(m.Files[table])))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(want)) != got.Bytes {
			t.Errorf("%s: local file %d bytes, landed %d", table, len(want), got.Bytes)
		}
	}
	data, err := b.ReadSmall(ctx, lake.ManifestKey(m.InstallationID, m.RunID), lake.MaxManifestBytes)
	if err != nil {
		t.Fatal(err)
	}
	lm, _, err := lake.ParseManifest(data, m.InstallationID, m.RunID)
	if err != nil {
		t.Fatalf("landed manifest: %v", err)
	}
	if !reflect.DeepEqual(lm.Checksums, m.Checksums) || !reflect.DeepEqual(lm.Files, m.Files) || lm.CommitSeq != m.CommitSeq {
		t.Errorf("landed manifest differs from the local one")
	}
}

// TestPublishFileBucket: a run lands under the documented keys; a second
// publish of the same run id is refused; PublishPending then has nothing
// to do.
func TestPublishFileBucket(t *testing.T) {
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "wh")
	m := laketest.Run(t, local, "fresh-activated.db", "laptop-1")
	bucketDir := t.TempDir()
	u := "file://" + filepath.ToSlash(bucketDir)
	if err := lake.Publish(ctx, u, local, "laptop-1", m.RunID); err != nil {
		t.Fatal(err)
	}
	b := openBucket(t, u)
	checkLanded(t, b, local, m)
	for table := range m.Files {
		if !lake.IsTable(table) {
			t.Errorf("run has a file for %q, which load does not know", table)
		}
	}
	keys := landed(t, b)
	if len(keys) != len(m.Files)+1 {
		t.Errorf("bucket holds %d objects, want %d files + 1 manifest: %v", len(keys), len(m.Files), keys)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "landing/") {
			t.Errorf("object %s outside landing/", k)
		}
	}
	err := lake.Publish(ctx, u, local, "laptop-1", m.RunID)
	if !errors.Is(err, lake.ErrDuplicateRun) {
		t.Fatalf("second publish: %v, want ErrDuplicateRun", err)
	}
	done, err := lake.PublishPending(ctx, u, local, "laptop-1")
	if err != nil || len(done) != 0 {
		t.Fatalf("PublishPending after publish: %v %v", done, err)
	}
	// A second night: only the new run is pending.
	m2 := laketest.Run(t, local, "fresh-activated.db", "laptop-1")
	done, err = lake.PublishPending(ctx, u, local, "laptop-1")
	if err != nil || !reflect.DeepEqual(done, []string{m2.RunID}) {
		t.Fatalf("PublishPending: %v %v, want [%s]", done, err, m2.RunID)
	}
	checkLanded(t, b, local, m2)
	// Refusals: a run that does not exist, a bad name, a bad URL.
	if err := lake.Publish(ctx, u, local, "laptop-1", "20990101T000000Z-000000"); !errors.Is(err, lake.ErrNotPublishable) {
		t.Errorf("unknown run: %v", err)
	}
	if err := lake.Publish(ctx, u, local, "../x", m.RunID); !errors.Is(err, lake.ErrNotPublishable) {
		t.Errorf("bad installation: %v", err)
	}
	if err := lake.Publish(ctx, "ftp://x", local, "laptop-1", m.RunID); !errors.Is(err, lake.ErrBadBucketURL) {
		t.Errorf("bad URL: %v", err)
	}
	if err := lake.Publish(ctx, "s3://key:secret@bucket", local, "laptop-1", m.RunID); !errors.Is(err, lake.ErrBadBucketURL) ||
		strings.Contains(err.Error(), "secret") {
		t.Errorf("credentials in URL: %v", err)
	}
}

// TestPublishKilledThenResumed: a publish killed between files leaves no
// manifest; publishing again completes the run, keeping what landed.
func TestPublishKilledThenResumed(t *testing.T) {
	ctx := context.Background()
	u := laketest.S3(t, "lake")
	local := filepath.Join(t.TempDir(), "wh")
	m := laketest.Run(t, local, "upgraded-backfill.db", "server-1")
	killed := errors.New("killed")
	n := 0
	restore := lake.SetAfterObjectHook(func(string) error {
		if n++; n == 3 {
			return killed
		}
		return nil
	})
	err := lake.Publish(ctx, u, local, "server-1", m.RunID)
	restore()
	if !errors.Is(err, killed) {
		t.Fatalf("killed publish: %v", err)
	}
	b := openBucket(t, u)
	if ok, err := b.Blob().Exists(ctx, lake.ManifestKey("server-1", m.RunID)); err != nil || ok {
		t.Fatalf("a killed publish left a manifest (%v)", err)
	}
	if keys := landed(t, b); len(keys) != 3 {
		t.Fatalf("after the kill: %d objects, want 3: %v", len(keys), keys)
	}
	// A killed upload in the middle of an object leaves nothing either.
	cctx, cancel := context.WithCancel(ctx)
	w, err := b.Blob().NewWriter(cctx, "landing/x/part", nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half"))
	cancel()
	w.Close()
	if ok, _ := b.Blob().Exists(ctx, "landing/x/part"); ok {
		t.Fatal("a cancelled write created an object")
	}
	if err := lake.Publish(ctx, u, local, "server-1", m.RunID); err != nil {
		t.Fatalf("resumed publish: %v", err)
	}
	checkLanded(t, b, local, m)
}

// TestPublishRefusesForeignContent: an object of another content under
// the run's keys (another publisher of the same run id) is never
// overwritten and the run is refused.
func TestPublishRefusesForeignContent(t *testing.T) {
	ctx := context.Background()
	u := laketest.S3(t, "lake")
	local := filepath.Join(t.TempDir(), "wh")
	m := laketest.Run(t, local, "capture-only.db", "laptop-2")
	b := openBucket(t, u)
	key := lake.DataKey("dim_task", "laptop-2", m.RunID)
	if err := b.Blob().WriteAll(ctx, key, []byte("not this run"), &blob.WriterOptions{}); err != nil {
		t.Fatal(err)
	}
	err := lake.Publish(ctx, u, local, "laptop-2", m.RunID)
	if !errors.Is(err, lake.ErrDuplicateRun) {
		t.Fatalf("publish over foreign content: %v", err)
	}
	if got, _ := b.ReadSmall(ctx, key, 100); string(got) != "not this run" {
		t.Fatal("the foreign object was overwritten")
	}
	if ok, _ := b.Blob().Exists(ctx, lake.ManifestKey("laptop-2", m.RunID)); ok {
		t.Fatal("a refused publish wrote a manifest")
	}
}

// TestPublishSameRunConcurrently: two publishers of one run id race; the
// conditional create lets exactly one manifest in.
func TestPublishSameRunConcurrently(t *testing.T) {
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "wh")
	m := laketest.Run(t, local, "not-activated.db", "laptop-3")
	for _, kind := range []string{"s3", "file"} {
		t.Run(kind, func(t *testing.T) {
			u := "file://" + filepath.ToSlash(t.TempDir())
			if kind == "s3" {
				u = laketest.S3(t, "lake")
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = lake.Publish(ctx, u, local, "laptop-3", m.RunID)
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, lake.ErrDuplicateRun):
					t.Errorf("publish: %v", err)
				}
			}
			if ok != 1 {
				t.Fatalf("%d publishes of one run id succeeded, want exactly 1 (%v)", ok, errs)
			}
			checkLanded(t, openBucket(t, u), local, m)
		})
	}
}
