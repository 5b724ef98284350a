package load

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// A manifest is hostile input like everything else in the warehouse: it is
// served, retained or used to find files only after it has been proven to be
// one this build wrote for the path it lies at. Paths are never taken from a
// manifest: they are derived from its (validated) installation and run names.

// maxManifestBytes bounds what is read of one manifest.
const maxManifestBytes = 16 << 20

// Manifest problems: what was done with a manifest that could not be served.
const (
	// ProblemQuarantined: it failed validation and was moved to
	// _quarantine/ (by a run holding the lock); nothing it says is used.
	ProblemQuarantined = "quarantined"
	// ProblemRefused: a version this build does not know (a newer
	// kandev-extract wrote it); left in place, its files kept, not served.
	ProblemRefused = "refused"
	// ProblemUnverified: a committed run whose files no longer match their
	// recorded size and SHA-256; not served (the installation's previous
	// good run is), its files kept.
	ProblemUnverified = "unverified"
)

// ManifestProblem is a manifest that is not served, and why.
type ManifestProblem struct {
	// Path is relative to the warehouse.
	Path string
	// Installation and Run are the names its path gives, when valid.
	Installation, Run string
	Action            string
	Reason            string
}

// ManifestSet is every manifest of a warehouse: the valid ones in order, and
// the problems.
type ManifestSet struct {
	// Valid is ordered per installation by commit sequence (version 1
	// manifests, which have none, come first, by finish time).
	Valid    []models.Manifest
	Problems []ManifestProblem
}

// ReadManifests reads a warehouse's valid manifests (committed and failed)
// without taking the lock, oldest first within each installation. Invalid
// ones are left out; ScanManifests reports them.
func ReadManifests(dir string) ([]models.Manifest, error) {
	set, err := ScanManifests(dir)
	return set.Valid, err
}

// ScanManifests reads and validates every manifest under _runs/ without
// changing anything.
func ScanManifests(dir string) (ManifestSet, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ManifestSet{}, err
	}
	var set ManifestSet
	insts, err := readDirEntries(abs, runsDir, func(fs.DirEntry) bool { return true })
	if err != nil {
		return set, fmt.Errorf("warehouse %s: %w", abs, err)
	}
	for _, inst := range insts {
		instRel := filepath.Join(runsDir, inst)
		fi, err := os.Lstat(filepath.Join(abs, instRel))
		if err != nil {
			return set, err
		}
		if !fi.IsDir() || ValidName(inst) != nil {
			set.Problems = append(set.Problems, ManifestProblem{Path: instRel, Action: ProblemQuarantined,
				Reason: "not an installation's manifest directory (a valid installation name)"})
			continue
		}
		names, err := readDirEntries(abs, instRel, func(fs.DirEntry) bool { return true })
		if err != nil {
			return set, fmt.Errorf("warehouse %s: %w", abs, err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, ".json.tmp") {
				continue // an unfinished write; recovery removes it
			}
			rel := filepath.Join(instRel, name)
			run, isJSON := strings.CutSuffix(name, ".json")
			if !isJSON || ValidName(run) != nil {
				set.Problems = append(set.Problems, ManifestProblem{Path: rel, Installation: inst, Action: ProblemQuarantined,
					Reason: "not a run manifest name (<run id>.json)"})
				continue
			}
			m, refused, err := readManifest(filepath.Join(abs, rel), inst, run)
			switch {
			case refused:
				set.Problems = append(set.Problems, ManifestProblem{Path: rel, Installation: inst, Run: run, Action: ProblemRefused, Reason: err.Error()})
			case err != nil:
				set.Problems = append(set.Problems, ManifestProblem{Path: rel, Installation: inst, Run: run, Action: ProblemQuarantined, Reason: err.Error()})
			default:
				set.Valid = append(set.Valid, m)
			}
		}
	}
	slices.SortStableFunc(set.Valid, compareRuns)
	return set, nil
}

// compareRuns orders manifests by installation, then commit sequence, then
// (only among version 1 manifests, which have no sequence) finish time.
func compareRuns(a, b models.Manifest) int {
	return cmp.Or(cmp.Compare(a.InstallationID, b.InstallationID), cmp.Compare(a.CommitSeq, b.CommitSeq),
		a.FinishedAt.Compare(b.FinishedAt), cmp.Compare(a.RunID, b.RunID))
}

// readManifest reads and validates the manifest at path, which lies at
// _runs/<inst>/<run>.json. refused is true when it is a manifest of an
// unknown (newer) version.
func readManifest(path, inst, run string) (m models.Manifest, refused bool, err error) {
	f, err := openNoFollow(path)
	if err != nil {
		return m, false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return m, false, err
	}
	return ParseManifest(b, inst, run)
}

// MaxManifestBytes bounds what is read of one manifest.
const MaxManifestBytes = maxManifestBytes

// ParseManifest decodes and validates the bytes of a manifest found at
// _runs/<inst>/<run>.json (in a warehouse or a bucket's landing area);
// refused is true for a manifest of an unknown (newer) version.
func ParseManifest(b []byte, inst, run string) (m models.Manifest, refused bool, err error) {
	if len(b) > maxManifestBytes {
		return m, false, fmt.Errorf("larger than %d bytes", maxManifestBytes)
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return m, false, fmt.Errorf("not valid JSON: %v", err)
	}
	if head.Format != models.ManifestFormat {
		return m, false, errors.New("not a kandev-extract run manifest")
	}
	if !models.KnownDocumentVersion(head.Version) {
		return m, true, fmt.Errorf("manifest version %d is unknown to this kandev-extract (it knows 1 and %d): written by a newer version?",
			head.Version, models.DocumentVersion)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, false, fmt.Errorf("not a valid run manifest: %v", err)
	}
	if err := validateManifest(m, inst, run); err != nil {
		return m, false, err
	}
	return m, false, nil
}

// ValidateManifest checks that m is a manifest this build could have
// written at _runs/<inst>/<run>.json.
func ValidateManifest(m models.Manifest, inst, run string) error {
	return validateManifest(m, inst, run)
}

// validateManifest checks that m is a manifest this build could have written
// at _runs/<inst>/<run>.json.
func validateManifest(m models.Manifest, inst, run string) error {
	if m.InstallationID != inst || m.RunID != run {
		return fmt.Errorf("names installation %q run %q but lies at %s/%s.json", m.InstallationID, m.RunID, inst, run)
	}
	v2 := m.Version >= 2
	if v2 && m.CommitSeq < 1 {
		return errors.New("no commit sequence")
	}
	if !v2 && (m.CommitSeq != 0 || m.Checksums != nil) {
		return errors.New("version 1 manifest with version 2 fields")
	}
	switch m.Status {
	case models.RunFailed:
		if len(m.Files) > 0 || len(m.Checksums) > 0 || m.Provenance != nil {
			return errors.New("a failed run that claims files")
		}
		return nil
	case models.RunCommitted:
	default:
		return fmt.Errorf("unknown status %q", m.Status)
	}
	if len(m.Files) == 0 {
		return errors.New("a committed run without files")
	}
	for table, rel := range m.Files {
		if !isTable(table) {
			return fmt.Errorf("unknown table %q", table)
		}
		if filepath.ToSlash(rel) != filepath.ToSlash(fileRel(table, inst, run)) {
			return fmt.Errorf("file of table %s is not where this run's partition is (%s)", table, filepath.ToSlash(fileRel(table, inst, run)))
		}
		if v2 {
			sum, ok := m.Checksums[table]
			if !ok || sum.Bytes < 0 || !validSHA256(sum.SHA256) {
				return fmt.Errorf("no valid size and SHA-256 for table %s", table)
			}
		}
	}
	if v2 && len(m.Checksums) != len(m.Files) {
		return errors.New("checksums for files it does not list")
	}
	p := m.Provenance
	if p == nil {
		return errors.New("a committed run without provenance")
	}
	if p.Format != models.ProvenanceFormat || !models.KnownDocumentVersion(p.Version) {
		return fmt.Errorf("provenance format %q version %d is unknown to this kandev-extract", p.Format, p.Version)
	}
	if p.InstallationID != inst || p.RunID != run {
		return errors.New("provenance of another run")
	}
	return nil
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// summarize returns a file's size and SHA-256, reading it without following
// a symbolic link.
func summarize(path string) (models.FileSummary, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return models.FileSummary{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return models.FileSummary{}, err
	}
	return models.FileSummary{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// openNoFollow opens a regular file for reading, refusing a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, fmt.Errorf("%s changed while being opened", path)
	}
	return f, nil
}

// verifyRun checks every file of a committed run against its manifest:
// reached through real directories, a regular file, the recorded size and
// SHA-256. It returns the first mismatch.
func verifyRun(dir string, m models.Manifest) error {
	w := &Warehouse{Dir: dir}
	tables := make([]string, 0, len(m.Files))
	for t := range m.Files {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	for _, t := range tables {
		rel := fileRel(t, m.InstallationID, m.RunID)
		p, err := w.inside(rel, false)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.ToSlash(rel), err)
		}
		got, err := summarize(p)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.ToSlash(rel), err)
		}
		want, ok := m.Checksums[t]
		if !ok { // version 1: nothing recorded to check against
			continue
		}
		if got.Bytes != want.Bytes {
			return fmt.Errorf("%s: %d bytes, the manifest recorded %d", filepath.ToSlash(rel), got.Bytes, want.Bytes)
		}
		if got.SHA256 != want.SHA256 {
			return fmt.Errorf("%s: SHA-256 differs from the manifest's", filepath.ToSlash(rel))
		}
	}
	return nil
}
