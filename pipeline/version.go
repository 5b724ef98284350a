package pipeline

import (
	"runtime/debug"
	"strings"
	"sync"
)

// ExtractorVersion is the version this build names itself by (version
// command, --version, and what to record as the extractor's version):
//
//   - Version, when the build stamped it (-ldflags "-X …pipeline.Version=…",
//     as make build, make install and make release do);
//   - else the main module's version from the build information: the
//     release tag for `go install …/cmd/kandev-extract@v1.2.3`, or the
//     pseudo-version Go derives from the VCS (v0.0.0-20261130210330-5ce2276abcde+dirty);
//   - else "devel-" and the VCS revision (12 hex digits, "-dirty" when the
//     tree had changes) when Go recorded one;
//   - else "devel-unknown" (no build information: a test binary, or a
//     build outside a module and a repository).
//
// It is never the bare "dev" an unstamped Version holds.
func ExtractorVersion() string {
	versionOnce.Do(func() { extractorVersion = resolveVersion(Version, debug.ReadBuildInfo) })
	return extractorVersion
}

var (
	versionOnce      sync.Once
	extractorVersion string
)

// resolveVersion applies ExtractorVersion's order (read is
// debug.ReadBuildInfo; tests pass their own).
func resolveVersion(stamped string, read func() (*debug.BuildInfo, bool)) string {
	if stamped != "" && stamped != "dev" {
		return stamped
	}
	bi, ok := read()
	if !ok || bi == nil {
		return "devel-unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" || strings.ContainsFunc(rev, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "devel-unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}
