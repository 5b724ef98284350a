package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrNotInstalled is returned (wrapped) by FindBinaries and Start when no
// PostgreSQL server binaries can be found. Shared and New turn it into a skip
// outside CI and into a failure in CI.
var ErrNotInstalled = errors.New("PostgreSQL server binaries not found")

// ErrUnsupported is returned (wrapped) by Start on an operating system where
// this package cannot run throwaway servers (Windows). Shared and New turn it
// into a skip, in CI too: it is a property of the platform, not a missing
// install step. It never happens on Linux or macOS.
var ErrUnsupported = errors.New("throwaway PostgreSQL test servers are not supported on this operating system")

// InstallHint tells a developer how to make the binaries available.
const InstallHint = `install them with "apt-get install postgresql" (Debian/Ubuntu) ` +
	`or set PG_BIN to the directory that holds initdb, pg_ctl and postgres`

// DebianLibGlob is where Debian's postgresql-NN packages put the server binaries.
const DebianLibGlob = "/usr/lib/postgresql/*/bin"

// serverTools must all be present in a directory for it to count as a
// PostgreSQL bin directory. pg_ctl is not run by this package (it runs the
// postgres binary itself, to own the process), but requiring it keeps the
// discovery identical to .ci/run's.
var serverTools = []string{"initdb", "pg_ctl", "postgres"}

// Binaries holds the paths of the PostgreSQL programs a cluster uses.
type Binaries struct {
	Initdb   string
	PgCtl    string
	Postgres string
	Psql     string
	// Source says how they were found: "PG_BIN", "/usr/lib/postgresql/NN/bin" or "PATH".
	Source string

	psqlOnce sync.Once
	psqlVer  version
	psqlErr  error
}

// FindBinaries locates the PostgreSQL binaries: the directory named by
// $PG_BIN if set (and then only there), else the highest-versioned
// /usr/lib/postgresql/*/bin that has initdb, pg_ctl and postgres, else PATH.
// psql is taken from the same directory as initdb when present there.
func FindBinaries() (*Binaries, error) {
	return findBinaries(os.Getenv("PG_BIN"), DebianLibGlob)
}

func findBinaries(pgBin, libGlob string) (*Binaries, error) {
	if pgBin != "" {
		b, missing := binariesIn(pgBin)
		if b == nil {
			return nil, fmt.Errorf("pgtest: PG_BIN (or Options.BinDir) %s lacks %s: %w; %s",
				pgBin, strings.Join(missing, ", "), ErrNotInstalled, InstallHint)
		}
		b.Source = "PG_BIN"
		return b, nil
	}

	dirs, _ := filepath.Glob(libGlob)
	sort.Slice(dirs, func(i, j int) bool {
		// dirs look like /usr/lib/postgresql/15/bin: compare the version part.
		return parseVersion(filepath.Base(filepath.Dir(dirs[i]))).less(
			parseVersion(filepath.Base(filepath.Dir(dirs[j]))))
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if b, _ := binariesIn(dirs[i]); b != nil {
			b.Source = dirs[i]
			return b, nil
		}
	}

	b := &Binaries{Source: "PATH"}
	var missing []string
	for _, name := range serverTools {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
			continue
		}
		switch name {
		case "initdb":
			b.Initdb = p
		case "pg_ctl":
			b.PgCtl = p
		case "postgres":
			b.Postgres = p
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("pgtest: %s not found in $PG_BIN (unset), %s or PATH: %w; %s",
			strings.Join(missing, ", "), libGlob, ErrNotInstalled, InstallHint)
	}
	// Prefer the psql that sits next to the real initdb (PATH entries are
	// often symlinks, and Debian's /usr/bin/psql is a version-picking wrapper).
	if real, err := filepath.EvalSymlinks(b.Initdb); err == nil {
		if p := filepath.Join(filepath.Dir(real), "psql"); isExecutable(p) {
			b.Psql = p
		}
	}
	if b.Psql == "" {
		b.Psql, _ = exec.LookPath("psql") // checked when LoadDump needs it
	}
	return b, nil
}

// binariesIn returns the binaries in dir, or nil and the names missing there.
func binariesIn(dir string) (*Binaries, []string) {
	var missing []string
	for _, name := range serverTools {
		if !isExecutable(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, missing
	}
	b := &Binaries{
		Initdb:   filepath.Join(dir, "initdb"),
		PgCtl:    filepath.Join(dir, "pg_ctl"),
		Postgres: filepath.Join(dir, "postgres"),
	}
	if p := filepath.Join(dir, "psql"); isExecutable(p) {
		b.Psql = p
	} else {
		b.Psql, _ = exec.LookPath("psql")
	}
	return b, nil
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// psqlVersion runs `psql --version` once.
func (b *Binaries) psqlVersion() (version, error) {
	b.psqlOnce.Do(func() {
		if b.Psql == "" {
			b.psqlErr = errors.New("pgtest: psql not found next to initdb nor in PATH")
			return
		}
		out, err := exec.Command(b.Psql, "--version").Output()
		if err != nil {
			b.psqlErr = fmt.Errorf("pgtest: %s --version: %w", b.Psql, err)
			return
		}
		b.psqlVer = parseVersion(string(out))
		if b.psqlVer.major == 0 {
			b.psqlErr = fmt.Errorf("pgtest: cannot read a version from %q", strings.TrimSpace(string(out)))
		}
	})
	return b.psqlVer, b.psqlErr
}

// version is a PostgreSQL major.minor version (10+: "15.18"; 9.x: "9.6.24"
// reads as major 9, minor 6, which is all the comparisons here need).
type version struct{ major, minor int }

var versionRE = regexp.MustCompile(`(\d+)(?:\.(\d+))?`)

// parseVersion reads the first number (and optional .minor) in s, e.g. from
// "psql (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" or a directory name "15".
func parseVersion(s string) version {
	if i := strings.Index(s, ")"); i >= 0 && strings.Contains(s[:i], "PostgreSQL") {
		s = s[i+1:] // skip "psql (PostgreSQL)"
	}
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return version{}
	}
	v := version{}
	v.major, _ = strconv.Atoi(m[1])
	if m[2] != "" {
		v.minor, _ = strconv.Atoi(m[2])
	}
	return v
}

func (v version) less(o version) bool {
	if v.major != o.major {
		return v.major < o.major
	}
	return v.minor < o.minor
}

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// understandsRestrict reports whether psql of version v knows the
// \restrict / \unrestrict meta-commands, added to every supported branch in
// the August 2025 minor releases (CVE-2025-8714): 17.6, 16.10, 15.14, 14.19,
// 13.22, and 18.0 onwards. Older branches (12 and below) never got them.
func understandsRestrict(v version) bool {
	firstFixed := map[int]int{13: 22, 14: 19, 15: 14, 16: 10, 17: 6}
	if v.major >= 18 {
		return true
	}
	minor, ok := firstFixed[v.major]
	return ok && v.minor >= minor
}
