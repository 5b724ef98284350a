package pipeline

import (
	"runtime/debug"
	"testing"
)

func TestExtractorVersion(t *testing.T) {
	t.Parallel()
	info := func(version string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/kandev/kandev-extract", Version: version}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	const rev = "5ce227604ca8be322278209a36c5d4136e03d3a7"
	for _, c := range []struct {
		name, stamped string
		read          func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"stamped by -ldflags", "v1.4.0-3-gabc1234", info("v9.9.9"), "v1.4.0-3-gabc1234"},
		{"go install @version", "dev", info("v1.4.0"), "v1.4.0"},
		{"go build in a repository (pseudo-version)", "dev", info("v0.0.0-20261130202459-5ce227604ca8+dirty", "vcs.revision", rev), "v0.0.0-20261130202459-5ce227604ca8+dirty"},
		{"devel with a revision", "dev", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "devel-5ce227604ca8"},
		{"devel with a dirty tree", "", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "devel-5ce227604ca8-dirty"},
		{"devel without VCS", "dev", info("(devel)"), "devel-unknown"},
		{"no build information", "dev", none, "devel-unknown"},
		{"a revision that is not text", "dev", info("(devel)", "vcs.revision", "abc\x1b[2J"), "devel-unknown"},
	} {
		if got := resolveVersion(c.stamped, c.read); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if v := ExtractorVersion(); v == "" || v == "dev" {
		t.Errorf("ExtractorVersion() = %q", v)
	}
}
