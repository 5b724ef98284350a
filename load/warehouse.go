package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// Layout of a warehouse directory:
//
//	warehouse.duckdb                                   views over committed runs
//	<table>/installation_id=<i>/run_id=<r>/part-0.parquet   Hive-style partitions
//	_runs/<i>/<r>.json                                 run manifests (commit markers)
//	_staging/<r>/...                                   a run being written
//	.lock                                              held by the running extractor
const (
	DatabaseFile = "warehouse.duckdb"
	runsDir      = "_runs"
	stagingDir   = "_staging"
	lockFile     = ".lock"
	partFile     = "part-0.parquet"
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName checks an installation name: it becomes a directory name.
func ValidName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("installation name %q is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Warehouse is an output directory, locked for one run at a time.
type Warehouse struct {
	Dir  string
	lock *os.File
}

// ErrLocked is returned when another run holds the warehouse.
var ErrLocked = errors.New("warehouse is locked by another kandev-extract run")

// OpenWarehouse creates dir if needed, takes its lock (non-blocking) and
// clears what a crashed run left behind.
func OpenWarehouse(dir string) (*Warehouse, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", abs, err)
	}
	f, err := os.OpenFile(filepath.Join(abs, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", abs, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		return nil, fmt.Errorf("warehouse %s: %w (holder: %s); try again when it finishes",
			abs, ErrLocked, strings.TrimSpace(string(holder)))
	}
	f.Truncate(0)
	f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	w := &Warehouse{Dir: abs, lock: f}
	if err := w.recover(); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// OpenWarehouseWait is OpenWarehouse that waits up to wait for another
// run to release the lock.
func OpenWarehouseWait(ctx context.Context, dir string, wait time.Duration) (*Warehouse, error) {
	deadline := time.Now().Add(wait)
	for {
		w, err := OpenWarehouse(dir)
		if err == nil || !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			return w, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Close releases the lock.
func (w *Warehouse) Close() error {
	if w.lock == nil {
		return nil
	}
	syscall.Flock(int(w.lock.Fd()), syscall.LOCK_UN)
	err := w.lock.Close()
	w.lock = nil
	return err
}

// recover removes staging leftovers and partitions that no committed
// manifest claims (a run that died between publishing and committing).
func (w *Warehouse) recover() error {
	if err := os.RemoveAll(filepath.Join(w.Dir, stagingDir)); err != nil {
		return fmt.Errorf("warehouse %s: clear staging: %w", w.Dir, err)
	}
	committed, err := w.Manifests()
	if err != nil {
		return err
	}
	claimed := map[string]bool{}
	for _, m := range committed {
		for _, rel := range m.Files {
			claimed[filepath.Dir(filepath.Join(w.Dir, rel))] = true
		}
	}
	parts, _ := filepath.Glob(filepath.Join(w.Dir, "*", "installation_id=*", "run_id=*"))
	for _, p := range parts {
		if !claimed[p] {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("warehouse %s: remove uncommitted %s: %w", w.Dir, p, err)
			}
		}
	}
	// Half-built databases from a crashed rebuild.
	tmps, _ := filepath.Glob(filepath.Join(w.Dir, DatabaseFile+".tmp*"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return nil
}

// Manifests returns every manifest (committed and failed), oldest first.
func (w *Warehouse) Manifests() ([]models.Manifest, error) {
	return ReadManifests(w.Dir)
}

// ReadManifests reads a warehouse's manifests without taking the lock.
func ReadManifests(dir string) ([]models.Manifest, error) {
	paths, err := filepath.Glob(filepath.Join(dir, runsDir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []models.Manifest
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", p, err)
		}
		var m models.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", p, err)
		}
		if m.Format != models.ManifestFormat {
			return nil, fmt.Errorf("manifest %s: not a kandev-extract run manifest", p)
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].FinishedAt.Equal(out[j].FinishedAt) {
			return out[i].FinishedAt.Before(out[j].FinishedAt)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}

// Staging is one installation's run being written.
type Staging struct {
	w            *Warehouse
	Dir          string
	installation string
	run          string
	files        map[string]string // table -> staged path
}

// Stage starts writing a run for an installation.
func (w *Warehouse) Stage(installation, run string) (*Staging, error) {
	if err := ValidName(installation); err != nil {
		return nil, err
	}
	dir := filepath.Join(w.Dir, stagingDir, run, installation)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("warehouse %s: staging: %w", w.Dir, err)
	}
	return &Staging{w: w, Dir: dir, installation: installation, run: run, files: map[string]string{}}, nil
}

// partition is the Hive-style directory of a table's run partition,
// relative to the warehouse.
func (s *Staging) partition(table string) string {
	return filepath.Join(table, "installation_id="+s.installation, "run_id="+s.run)
}

// Path returns where a table's staged file goes.
func (s *Staging) Path(table string) string {
	path := filepath.Join(s.Dir, s.partition(table), partFile)
	s.files[table] = path
	return path
}

// Commit moves every staged partition into place, then writes the manifest
// last: the manifest is the commit marker, so a crash before it leaves only
// unclaimed partitions, which the next run removes.
func (s *Staging) Commit(m models.Manifest) error {
	m.Files = map[string]string{}
	tables := make([]string, 0, len(s.files))
	for t := range s.files {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	var published []string
	for _, t := range tables {
		rel := s.partition(t)
		final := filepath.Join(s.w.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
			return fmt.Errorf("publish %s: %w", t, err)
		}
		if err := os.Rename(filepath.Dir(s.files[t]), final); err != nil {
			return fmt.Errorf("publish %s: %w", t, err)
		}
		published = append(published, final)
		syncDir(filepath.Dir(final))
		m.Files[t] = filepath.Join(rel, partFile)
		CrashPoint("renamed " + t)
	}
	CrashPoint("before manifest")
	if err := s.w.WriteManifest(m); err != nil {
		// Not committed: take the published partitions back out now rather
		// than leave them, unclaimed, to the next run's recovery.
		for _, p := range published {
			os.RemoveAll(p)
		}
		return err
	}
	CrashPoint("committed")
	os.RemoveAll(filepath.Join(s.w.Dir, stagingDir, s.run, s.installation))
	// Remove the run's and the staging directory once empty.
	os.Remove(filepath.Join(s.w.Dir, stagingDir, s.run))
	os.Remove(filepath.Join(s.w.Dir, stagingDir))
	return nil
}

// Discard removes the staged files of a failed run, and the run's and the
// staging directory once empty.
func (s *Staging) Discard() {
	os.RemoveAll(s.Dir)
	os.Remove(filepath.Join(s.w.Dir, stagingDir, s.run))
	os.Remove(filepath.Join(s.w.Dir, stagingDir))
}

// WriteManifest writes a manifest atomically (temp, fsync, rename, fsync dir).
func (w *Warehouse) WriteManifest(m models.Manifest) error {
	m.Format, m.Version = models.ManifestFormat, models.DocumentVersion
	dir := filepath.Join(w.Dir, runsDir, m.InstallationID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	path := filepath.Join(dir, m.RunID+".json")
	if err := writeFileAtomic(path, b); err != nil {
		return fmt.Errorf("manifest %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes path through a temporary file (created with
// createFile, so a full disk can be injected), fsyncs it, renames it into
// place and fsyncs the directory. On error nothing is left behind.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp := path + ".tmp"
	os.Remove(tmp) // left by a crash; createFile never overwrites
	f, err := createFile(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Prune keeps the newest keep committed runs of each installation and
// removes older ones (and failed-run records older than the oldest kept
// run). The manifest goes first: a crash in between leaves only unclaimed
// partitions, which recover removes.
func (w *Warehouse) Prune(keep int) (removed int, err error) {
	if keep < 1 {
		return 0, nil
	}
	all, err := w.Manifests()
	if err != nil {
		return 0, err
	}
	byInst := map[string][]models.Manifest{}
	for _, m := range all {
		byInst[m.InstallationID] = append(byInst[m.InstallationID], m)
	}
	for inst, ms := range byInst { // oldest first
		var committed []models.Manifest
		for _, m := range ms {
			if m.Status == models.RunCommitted {
				committed = append(committed, m)
			}
		}
		if len(committed) <= keep {
			continue
		}
		oldestKept := committed[len(committed)-keep].FinishedAt
		for _, m := range ms {
			if !m.FinishedAt.Before(oldestKept) {
				continue
			}
			if err := os.Remove(filepath.Join(w.Dir, runsDir, inst, m.RunID+".json")); err != nil {
				return removed, fmt.Errorf("prune %s/%s: %w", inst, m.RunID, err)
			}
			for _, rel := range m.Files {
				if err := os.RemoveAll(filepath.Dir(filepath.Join(w.Dir, rel))); err != nil {
					return removed, fmt.Errorf("prune %s/%s: %w", inst, m.RunID, err)
				}
			}
			removed++
		}
	}
	return removed, nil
}
