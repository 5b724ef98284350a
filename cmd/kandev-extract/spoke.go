package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/kandev/kandev-extract/lake"
	_ "github.com/kandev/kandev-extract/lake/clouds" // s3://, gs://, azblob:// through the standard credential chains
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// A warehouse given as a bucket URL makes this installation a spoke of a
// lake (docs/scale-out.md): the run writes an ordinary local warehouse in
// the user's cache directory, then publishes each committed run to the
// bucket's landing area; a run that could not be published (offline
// laptop) is published by the next one.

// spokeWarehouse is the local warehouse of a bucket URL: a directory of the
// user's cache named by a hash of the URL (never the URL's text).
func spokeWarehouse(bucket string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("warehouse %s: no cache directory for the local warehouse: %w", printableBucket(bucket), err)
	}
	h := sha256.Sum256([]byte(bucket))
	return filepath.Join(cache, "kandev-extract", "spoke", hex.EncodeToString(h[:8])), nil
}

// printableBucket is a bucket URL without its query (driver options).
func printableBucket(bucket string) string {
	u, err := url.Parse(bucket)
	if err != nil {
		return "<bucket URL>"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

// publishRuns publishes every committed run of the installations that is
// not in the bucket yet, holding the local warehouse's lock so retention
// cannot remove a run mid-upload.
func publishRuns(ctx context.Context, log *slog.Logger, bucket, warehouse string, installs []pipeline.Installation, wait time.Duration) error {
	wh, err := load.OpenWarehouseWait(ctx, warehouse, wait)
	if err != nil {
		return err
	}
	defer wh.Close()
	var failed error
	for _, in := range installs {
		runs, err := lake.PublishPending(ctx, bucket, warehouse, in.Name)
		for _, r := range runs {
			log.Info("run published", "installation", in.Name, "run_id", r, "bucket", printableBucket(bucket))
		}
		if err != nil {
			log.Error("publish failed; the run stays in the local warehouse and the next run publishes it",
				"installation", in.Name, "bucket", printableBucket(bucket), "err", err)
			failed = fmt.Errorf("publish to %s: %w", printableBucket(bucket), err)
		}
	}
	return failed
}
