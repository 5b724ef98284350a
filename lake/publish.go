package lake

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// Landing layout: a local warehouse's layout rooted at LandingPrefix.
const (
	LandingPrefix = "landing/"
	landingRuns   = LandingPrefix + "_runs/"
)

// DataKey is the landing key of a table's file of a run.
func DataKey(table, installation, run string) string {
	return LandingPrefix + FileRel(table, installation, run)
}

// ManifestKey is the landing key of a run's manifest.
func ManifestKey(installation, run string) string {
	return landingRuns + installation + "/" + run + ".json"
}

// ErrDuplicateRun is returned when the run's manifest is already in the
// landing area (the run id was published before) or when another upload
// of the same run id left different content under its keys.
var ErrDuplicateRun = errors.New("run already published")

// ErrNotPublishable is returned for a local run that cannot be published:
// not committed, a version 1 manifest (no checksums), or a manifest that
// failed validation.
var ErrNotPublishable = errors.New("run cannot be published")

// testHookAfterObject, when set (tests), runs after each data object is
// uploaded and verified; an error stops the publish there, as a killed
// process would.
var testHookAfterObject func(key string) error

// Publish uploads one committed run of a local warehouse to the bucket at
// bucketURL: every file of the run under
// landing/<table>/installation_id=<i>/run_id=<r>/part-0.parquet, then the
// manifest at landing/_runs/<i>/<r>.json, created only if absent.
//
// The local manifest is read and validated as the warehouse itself does;
// each local file is reached through real directories from names, checked
// against its recorded SHA-256 as it is sent, and each object is checked
// after its upload (size; MD5 when the driver reports one). An object
// already present from a killed earlier attempt is kept if its content has
// the recorded SHA-256 (the publish resumes) and refused otherwise. The
// manifest goes last: a publish that fails or is killed before it leaves
// no manifest, and the hub ignores objects without one.
//
// Errors: ErrDuplicateRun when the run's manifest already exists (checked
// before any upload, and again atomically by the conditional create);
// ErrNotPublishable for a run that is not committed, has a version 1
// manifest, or is not valid; ErrBadBucketURL; otherwise I/O errors, after
// which calling Publish again is safe.
func Publish(ctx context.Context, bucketURL, localWarehouseDir, installation, runID string) error {
	b, err := OpenBucket(ctx, bucketURL)
	if err != nil {
		return err
	}
	defer b.Close()
	return b.Publish(ctx, localWarehouseDir, installation, runID)
}

// PublishPending publishes, oldest first (commit sequence), every
// committed version 2 run of the installation in the local warehouse whose
// manifest is not yet in the landing area, and returns the run ids it
// published. A spoke that was offline publishes what it missed. It stops
// at the first failure.
func PublishPending(ctx context.Context, bucketURL, localWarehouseDir, installation string) ([]string, error) {
	b, err := OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.PublishPending(ctx, localWarehouseDir, installation)
}

// PublishPending is the package function PublishPending on an open bucket.
func (b *Bucket) PublishPending(ctx context.Context, localWarehouseDir, installation string) ([]string, error) {
	if err := load.ValidName(installation); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPublishable, err)
	}
	ms, err := load.ReadManifests(localWarehouseDir)
	if err != nil {
		return nil, err
	}
	names, _, err := b.ListNames(ctx, landingRuns+installation+"/")
	if err != nil {
		return nil, fmt.Errorf("bucket %s: list %s: %w", b, landingRuns+installation+"/", err)
	}
	landed := map[string]bool{}
	for _, n := range names {
		if run, ok := strings.CutSuffix(n, ".json"); ok {
			landed[run] = true
		}
	}
	var done []string
	for _, m := range ms { // ordered by commit sequence within the installation
		if m.InstallationID != installation || m.Status != models.RunCommitted || m.Version < 2 || landed[m.RunID] {
			continue
		}
		if err := b.Publish(ctx, localWarehouseDir, installation, m.RunID); err != nil {
			return done, err
		}
		done = append(done, m.RunID)
	}
	return done, nil
}

// Publish is the package function Publish on an open bucket.
func (b *Bucket) Publish(ctx context.Context, localWarehouseDir, installation, runID string) error {
	if err := load.ValidName(installation); err != nil {
		return fmt.Errorf("%w: %v", ErrNotPublishable, err)
	}
	if err := load.ValidName(runID); err != nil {
		return fmt.Errorf("%w: run id: %v", ErrNotPublishable, err)
	}
	dir, err := filepath.Abs(localWarehouseDir)
	if err != nil {
		return err
	}
	m, err := localManifest(dir, installation, runID)
	if err != nil {
		return err
	}
	mkey := ManifestKey(installation, runID)
	if ok, err := b.b.Exists(ctx, mkey); err != nil {
		return fmt.Errorf("bucket %s: %s: %w", b, mkey, err)
	} else if ok {
		return fmt.Errorf("publish %s/%s to %s: %w (%s exists)", installation, runID, b, ErrDuplicateRun, mkey)
	}
	tables := make([]string, 0, len(m.Files))
	for t := range m.Files {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	for _, t := range tables {
		if err := b.uploadFile(ctx, dir, t, installation, runID, m.Checksums[t]); err != nil {
			return fmt.Errorf("publish %s/%s to %s: %s: %w", installation, runID, b, t, err)
		}
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := b.CreateExclusive(ctx, mkey, body, "application/json"); err != nil {
		if errors.Is(err, ErrExists) {
			return fmt.Errorf("publish %s/%s to %s: %w (%s was created meanwhile)", installation, runID, b, ErrDuplicateRun, mkey)
		}
		return fmt.Errorf("publish %s/%s to %s: manifest: %w", installation, runID, b, err)
	}
	if attrs, err := b.b.Attributes(ctx, mkey); err != nil {
		return fmt.Errorf("publish %s/%s to %s: manifest: %w", installation, runID, b, err)
	} else if attrs.Size != int64(len(body)) {
		return fmt.Errorf("publish %s/%s to %s: manifest: %d bytes stored, %d sent", installation, runID, b, attrs.Size, len(body))
	}
	return nil
}

// localManifest reads and validates the run's manifest in the local
// warehouse (load's own reading: nothing in the file is trusted).
func localManifest(dir, installation, runID string) (models.Manifest, error) {
	set, err := load.ScanManifests(dir)
	if err != nil {
		return models.Manifest{}, err
	}
	for _, p := range set.Problems {
		if p.Installation == installation && p.Run == runID {
			return models.Manifest{}, fmt.Errorf("%w: %s/%s: %s: %s", ErrNotPublishable, installation, runID, p.Action, p.Reason)
		}
	}
	for _, m := range set.Valid {
		if m.InstallationID != installation || m.RunID != runID {
			continue
		}
		if m.Status != models.RunCommitted {
			return m, fmt.Errorf("%w: %s/%s is %s, not committed", ErrNotPublishable, installation, runID, m.Status)
		}
		if m.Version < 2 || len(m.Checksums) != len(m.Files) {
			return m, fmt.Errorf("%w: %s/%s has a version %d manifest without checksums", ErrNotPublishable, installation, runID, m.Version)
		}
		return m, nil
	}
	return models.Manifest{}, fmt.Errorf("%w: %s/%s: no manifest in %s", ErrNotPublishable, installation, runID, dir)
}

// uploadFile sends one table's file of the run, verifying the local file's
// SHA-256 as it streams and the stored object after.
func (b *Bucket) uploadFile(ctx context.Context, dir, table, installation, runID string, want models.FileSummary) error {
	f, err := load.OpenRunFile(dir, models.Manifest{InstallationID: installation, RunID: runID}, table)
	if err != nil {
		return err
	}
	defer f.Close()
	key := DataKey(table, installation, runID)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.b.NewWriter(wctx, key, &blob.WriterOptions{IfNotExist: true, ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		return err
	}
	sha, sum := sha256.New(), md5.New()
	n, err := io.Copy(w, io.TeeReader(f, io.MultiWriter(sha, sum)))
	if err == nil && (n != want.Bytes || hex.EncodeToString(sha.Sum(nil)) != want.SHA256) {
		err = fmt.Errorf("the local file (%d bytes) no longer matches its manifest (%d bytes, SHA-256 %s…)", n, want.Bytes, want.SHA256[:12])
	}
	if err != nil {
		cancel() // aborts the write: no object is created
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) != gcerrors.FailedPrecondition {
			return err
		}
		// Left by a killed earlier attempt of this run, or another
		// publisher of the same run id: keep it only if it is this file.
		if err := b.checkObject(ctx, key, want); err != nil {
			return fmt.Errorf("%w: %s exists with other content (%v)", ErrDuplicateRun, key, err)
		}
	} else if err := b.verifyStored(ctx, key, want.Bytes, sum); err != nil {
		return err
	}
	if testHookAfterObject != nil {
		return testHookAfterObject(key)
	}
	return nil
}

// verifyStored checks an uploaded object's size, and its MD5 when the
// driver reports one (S3 single-part uploads, GCS, Azure).
func (b *Bucket) verifyStored(ctx context.Context, key string, size int64, sum hash.Hash) error {
	attrs, err := b.b.Attributes(ctx, key)
	if err != nil {
		return fmt.Errorf("verify %s: %w", key, err)
	}
	if attrs.Size != size {
		return fmt.Errorf("verify %s: %d bytes stored, %d sent", key, attrs.Size, size)
	}
	if len(attrs.MD5) > 0 && !bytes.Equal(attrs.MD5, sum.Sum(nil)) {
		return fmt.Errorf("verify %s: the stored MD5 differs from the bytes sent", key)
	}
	return nil
}

// checkObject reads an object and checks its size and SHA-256.
func (b *Bucket) checkObject(ctx context.Context, key string, want models.FileSummary) error {
	got, err := b.Summarize(ctx, key)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%d bytes, SHA-256 %s…; expected %d bytes, %s…", got.Bytes, got.SHA256[:12], want.Bytes, want.SHA256[:12])
	}
	return nil
}

// Summarize reads an object and returns its size and SHA-256.
func (b *Bucket) Summarize(ctx context.Context, key string) (models.FileSummary, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return models.FileSummary{}, err
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return models.FileSummary{}, err
	}
	return models.FileSummary{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
