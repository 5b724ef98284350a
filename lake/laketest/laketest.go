// Package laketest holds what the lake tests share: an in-process S3
// server (gofakes3) and local runs of the real Kandev fixtures.
package laketest

import (
	"context"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/kandev/kandev-extract/internal/testkit"
	_ "github.com/kandev/kandev-extract/lake/clouds" // s3:// for the fake server
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// S3 starts an in-process S3 server with one empty bucket and returns the
// bucket's URL. Credentials are test values in the environment, where the
// AWS standard chain finds them (so the test cannot run in parallel with
// others that change the environment).
func S3(t testing.TB, bucket string) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	srv := httptest.NewServer(faker.Server())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "laketest",
		"AWS_SECRET_ACCESS_KEY":       "laketest-secret",
		"AWS_REGION":                  "us-east-1",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_PROFILE":                 "",
		"AWS_S3_ENDPOINT":             "",
		"AWS_CA_BUNDLE":               "", // plain HTTP here; a bundle only costs parsing
	} {
		t.Setenv(k, v)
	}
	q := url.Values{"endpoint": {srv.URL}, "use_path_style": {"true"}, "region": {"us-east-1"}}
	return "s3://" + bucket + "?" + q.Encode()
}

// Run extracts a real fixture store (testdata/kandev/<fixture>) as
// installation into the local warehouse dir (created if needed) with the
// ordinary pipeline, and returns the run's manifest.
func Run(t testing.TB, dir, fixture, installation string) models.Manifest {
	t.Helper()
	res, err := pipeline.Run(context.Background(), pipeline.Options{
		Warehouse:     dir,
		Installations: []pipeline.Installation{{Name: installation, Source: testkit.Fixture(t, fixture)}},
	})
	if err != nil {
		t.Fatalf("pipeline.Run %s: %v", fixture, err)
	}
	o := res.Outcomes[0]
	if o.Err != nil {
		t.Fatalf("pipeline.Run %s: %v", fixture, o.Err)
	}
	ms, err := load.ReadManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.InstallationID == installation && m.RunID == o.RunID {
			return m
		}
	}
	t.Fatalf("pipeline.Run %s: no manifest for run %s", fixture, o.RunID)
	return models.Manifest{}
}
