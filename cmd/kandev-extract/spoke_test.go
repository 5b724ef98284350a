package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A warehouse given as a bucket URL: the run extracts into a local
// warehouse in the user's cache, then publishes the committed run to the
// bucket's landing area (here a file:// bucket), manifest last; status and
// query read the local warehouse.
func TestRunPublishesToABucket(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	bucket := t.TempDir()
	url := "file://" + bucket
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	for i := 0; i < 2; i++ {
		if _, errOut, code := cli(t, "run", "-s", src, "-w", url, "-i", "lab", "--log-format", "json"); code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, errOut)
		}
	}
	manifests, _ := filepath.Glob(filepath.Join(bucket, "landing", "_runs", "lab", "*.json"))
	if len(manifests) != 2 {
		t.Fatalf("%d manifests in the bucket, want 2: %v", len(manifests), manifests)
	}
	for _, m := range manifests {
		run := strings.TrimSuffix(filepath.Base(m), ".json")
		p := filepath.Join(bucket, "landing", "fact_subagent_context", "installation_id=lab", "run_id="+run, "part-0.parquet")
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("run %s's fact file in the bucket: %v", run, err)
		}
	}
	out, _, code := cli(t, "query", "-w", url, "--format", "csv", "SELECT count(*) AS n FROM subagent_contexts")
	if code != 0 || out != "n\n253\n" {
		t.Errorf("query on the local warehouse: exit %d %q", code, out)
	}
}

// A bucket URL no publish could use is a usage error (2) before anything
// is extracted, for run and check alike: nothing is written to the local
// warehouse in the cache either.
func TestUnusableBucketURLIsRefusedBeforeTheRun(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	for _, c := range []struct{ url, want string }{
		{"s3://bucket/prefix", "name the bucket as the host and a key prefix with ?prefix=dir/"},
		{"s3://someone@bucket/", "credentials do not belong in the URL"},
		{"file://someone@/tmp/kx-bucket", "credentials do not belong in the URL"},
		{"file:///tmp/kx-bucket?prefix=/abs/", "must be relative"},
	} {
		for _, cmd := range []string{"run", "check"} {
			out, errOut, code := cli(t, cmd, "-s", src, "-w", c.url, "-i", "lab")
			if code != 2 || !strings.Contains(errOut, "unusable bucket URL") || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, "someone") {
				t.Errorf("%s -w %s: exit %d\n%s%s", cmd, c.url, code, out, errOut)
			}
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the cache holds %d entries after refused URLs", len(entries))
	}
}
