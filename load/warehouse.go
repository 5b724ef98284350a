package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/models"
)

// Layout of a warehouse directory:
//
//	warehouse.duckdb                                   the served database (self-contained)
//	<table>/installation_id=<i>/run_id=<r>/part-0.parquet   Hive-style partitions
//	_runs/<i>/<r>.json                                 run manifests (commit markers)
//	_staging/<r>/...                                   a run being written
//	_build/                                            warehouse.duckdb being rebuilt
//	_quarantine/                                       manifests that failed validation
//	.lock                                              held by the running extractor
const (
	DatabaseFile  = "warehouse.duckdb"
	runsDir       = "_runs"
	stagingDir    = "_staging"
	buildDir      = "_build"
	quarantineDir = "_quarantine"
	lockFile      = ".lock"
	partFile      = "part-0.parquet"
)

// ValidName checks an installation name or run id: it becomes a directory
// name (models.ValidName).
func ValidName(name string) error { return models.ValidName(name) }

// Warehouse is an output directory, locked for one run at a time.
type Warehouse struct {
	Dir  string
	lock *os.File
	// leftovers are paths a step could not remove or move because another
	// process holds them open (Windows); each is retried by a later run.
	leftovers []string
	// Settled is what opening the warehouse finished of what an earlier
	// run left waiting.
	Settled Settled
	// JournalProblem is why _attempts.journal could not be allocated (nil
	// when it is there).
	JournalProblem error
}

// leftover records a path that could not be removed yet.
func (w *Warehouse) leftover(rel string, err error) {
	w.leftovers = append(w.leftovers, filepath.ToSlash(rel))
}

// Leftovers are the paths this process could not remove or move so far
// because another process holds them open (Windows). Nothing served depends
// on them; every later run tries again.
func (w *Warehouse) Leftovers() []string { return slices.Clone(w.leftovers) }

// ErrLocked is returned when another run holds the warehouse.
var ErrLocked = errors.New("warehouse is locked by another kandev-extract run")

// ErrBadWarehouse is returned for a warehouse path that cannot be used (a
// usage error).
var ErrBadWarehouse = errors.New("unusable warehouse path")

// errLockHeld is openLock's "another process holds it".
var errLockHeld = errors.New("lock held")

// readHolder reads what the lock's holder wrote (its pid), bounded and
// printable only.
func readHolder(path string) string {
	f, err := openNoFollow(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.Read(b)
	out := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r > 0x7e {
			return -1
		}
		return r
	}, string(b[:n]))
	if out = strings.TrimSpace(out); out == "" {
		return "unknown"
	}
	return out
}

// OpenWarehouse creates dir if needed, takes its lock (non-blocking) and
// clears what a crashed run left behind.
func OpenWarehouse(dir string) (*Warehouse, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if strings.Contains(abs, "?") {
		// DuckDB cuts a database path at "?" (its own write-ahead log
		// included), so neither the extractor nor an analyst could open it.
		return nil, fmt.Errorf("warehouse %s: %w: DuckDB cannot open a database whose path contains '?'; choose another directory", abs, ErrBadWarehouse)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("warehouse %s: %w", abs, err)
	}
	f, err := openLock(filepath.Join(abs, lockFile))
	if errors.Is(err, errLockHeld) {
		holder := readHolder(filepath.Join(abs, lockFile))
		return nil, fmt.Errorf("warehouse %s: %w (holder: %s); try again when it finishes", abs, ErrLocked, holder)
	}
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: lock: %w", abs, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	w := &Warehouse{Dir: abs, lock: f}
	if err := w.recover(); err != nil {
		w.Close()
		return nil, err
	}
	// Allocated while there is room, for the failures that find none.
	w.JournalProblem = w.ensureJournal()
	// What an earlier run left waiting (a database, current/ files) is
	// finished now if nothing holds it any more; the run's own rebuild
	// supersedes it otherwise.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if w.Settled, err = w.settle(ctx); err != nil {
		// Not this run's concern: its own rebuild supersedes what waits.
		w.Settled.Problem = err.Error()
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
	unlock(w.lock)
	err := w.lock.Close()
	w.lock = nil
	return err
}

// recover removes what a crashed run left behind: staging, a half-built
// database, unfinished manifest writes, and partitions that no manifest
// claims (a run that died between publishing and committing). Manifests
// that fail validation are moved to _quarantine/ and their partitions kept;
// Problems lists them.
func (w *Warehouse) recover() error {
	for _, rel := range []string{stagingDir, buildDir} {
		if err := w.removeAll(rel); err != nil {
			if !isHeldOpen(err) {
				return fmt.Errorf("warehouse %s: clear %s: %w", w.Dir, rel, err)
			}
			// A leftover held open elsewhere (Windows) blocks nothing: new
			// staging and build work get fresh names. Retried by every run.
			w.leftover(rel, err)
		}
	}
	insts, err := w.realDirEntries(runsDir)
	if err != nil {
		return fmt.Errorf("warehouse %s: %w", w.Dir, err)
	}
	for _, inst := range insts {
		names, err := readDirEntries(w.Dir, filepath.Join(runsDir, inst), func(e fs.DirEntry) bool {
			// <run>.json.tmp, or <run>.json.<unique id>.tmp when the first
			// was held open (writeFileAtomic).
			return strings.HasSuffix(e.Name(), ".tmp") && strings.Contains(e.Name(), ".json.")
		})
		if err != nil {
			return fmt.Errorf("warehouse %s: %w", w.Dir, err)
		}
		for _, n := range names {
			if err := w.remove(filepath.Join(runsDir, inst, n)); err != nil {
				if !isHeldOpen(err) {
					return err
				}
				w.leftover(filepath.Join(runsDir, inst, n), err)
			}
		}
	}
	set, err := ScanManifests(w.Dir)
	if err != nil {
		return err
	}
	claimed := map[[2]string]bool{}
	for _, m := range set.Valid {
		claimed[[2]string{m.InstallationID, m.RunID}] = true
	}
	for _, p := range set.Problems {
		if p.Installation != "" && p.Run != "" {
			claimed[[2]string{p.Installation, p.Run}] = true // kept for the operator
		}
		if p.Action == ProblemQuarantined {
			if err := w.quarantine(p); err != nil {
				if !isHeldOpen(err) {
					return err
				}
				// Still not served (it fails validation where it is);
				// moved by a later run.
				w.leftover(p.Path, err)
			}
		}
	}
	for _, p := range w.quarantined() {
		if p.Installation != "" {
			claimed[[2]string{p.Installation, p.Run}] = true
		}
	}
	for _, table := range baseTables {
		insts, err := w.realDirEntries(table)
		if err != nil {
			return fmt.Errorf("warehouse %s: %w", w.Dir, err)
		}
		for _, id := range insts {
			inst, ok := strings.CutPrefix(id, "installation_id=")
			if !ok || ValidName(inst) != nil {
				continue // not ours: left alone
			}
			runs, err := w.realDirEntries(filepath.Join(table, id))
			if err != nil {
				return fmt.Errorf("warehouse %s: %w", w.Dir, err)
			}
			for _, rd := range runs {
				run, ok := strings.CutPrefix(rd, "run_id=")
				if !ok || ValidName(run) != nil || claimed[[2]string{inst, run}] {
					continue
				}
				if err := w.removeAll(partitionRel(table, inst, run)); err != nil {
					if !isHeldOpen(err) {
						return fmt.Errorf("warehouse %s: remove uncommitted run %s of %s: %w", w.Dir, run, inst, err)
					}
					// Unclaimed, so never served: removed by a later run.
					w.leftover(partitionRel(table, inst, run), err)
				}
			}
		}
	}
	return nil
}

// quarantine moves a manifest that failed validation out of _runs/, to
// _quarantine/<installation>/<run>.json when its path names are valid (so
// its partitions stay claimed for the operator) or to
// _quarantine/invalid/<n>.json otherwise. Nothing in it is acted on.
func (w *Warehouse) quarantine(p ManifestProblem) error {
	from, err := w.inside(p.Path, true)
	if err != nil {
		return err
	}
	destDir := filepath.Join(quarantineDir, "invalid")
	name := strconv.FormatInt(time.Now().UnixNano(), 10)
	if p.Installation != "" && p.Run != "" {
		destDir, name = filepath.Join(quarantineDir, p.Installation), p.Run+".json"
	}
	dir, err := w.mkdirs(destDir)
	if err != nil {
		return err
	}
	to := filepath.Join(dir, name)
	if _, err := os.Lstat(to); err == nil {
		to = filepath.Join(dir, strings.TrimSuffix(name, ".json")+"."+strconv.FormatInt(time.Now().UnixNano(), 10)+".json")
	}
	if err := renameFile(from, to); err != nil {
		return fmt.Errorf("warehouse %s: quarantine %s: %w", w.Dir, p.Path, err)
	}
	syncDir(dir)
	return nil
}

// quarantined lists the manifests in _quarantine/ with the reason each
// fails validation (derived again from the file: nothing in it is trusted).
// Those filed under a valid installation and run name keep that run's
// partitions claimed, for the operator to look at.
func (w *Warehouse) quarantined() []ManifestProblem {
	var out []ManifestProblem
	dirs, _ := w.realDirEntries(quarantineDir)
	for _, d := range dirs {
		names, _ := readDirEntries(w.Dir, filepath.Join(quarantineDir, d), func(e fs.DirEntry) bool { return true })
		for _, n := range names {
			rel := filepath.Join(quarantineDir, d, n)
			p := ManifestProblem{Path: filepath.ToSlash(rel), Action: ProblemQuarantined, Reason: "failed validation"}
			if run, ok := strings.CutSuffix(n, ".json"); ok && ValidName(d) == nil && ValidName(run) == nil {
				p.Installation, p.Run = d, run
				if _, _, err := readManifest(filepath.Join(w.Dir, rel), d, run); err != nil {
					p.Reason = err.Error()
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// Manifests returns every valid manifest (committed and failed), oldest
// first within each installation.
func (w *Warehouse) Manifests() ([]models.Manifest, error) {
	return ReadManifests(w.Dir)
}

// NextCommitSeq is the commit sequence of an installation's next run: one
// more than the highest any of its valid manifests holds.
func (w *Warehouse) NextCommitSeq(installation string) (int64, error) {
	ms, err := w.Manifests()
	if err != nil {
		return 0, err
	}
	var top int64
	for _, m := range ms {
		if m.InstallationID == installation {
			top = max(top, m.CommitSeq)
		}
	}
	return top + 1, nil
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
	if err := ValidName(run); err != nil {
		return nil, fmt.Errorf("run id: %w", err)
	}
	dir, err := w.mkdirs(filepath.Join(stagingDir, run, installation))
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: staging: %w", w.Dir, err)
	}
	return &Staging{w: w, Dir: dir, installation: installation, run: run, files: map[string]string{}}, nil
}

// Path returns where a table's staged file goes; its directory is created.
func (s *Staging) Path(table string) string {
	if !isTable(table) {
		panic("load: unknown table " + table) // a programming error: tables are this build's constants
	}
	path := filepath.Join(s.Dir, partitionRel(table, s.installation, s.run), partFile)
	s.files[table] = path
	return path
}

// Commit records each staged file's size and SHA-256, moves every staged
// partition into place, then writes the manifest last: the manifest is the
// commit marker, so a crash before it leaves only unclaimed partitions,
// which the next run removes.
func (s *Staging) Commit(m models.Manifest) error {
	m.Files = map[string]string{}
	m.Checksums = map[string]models.FileSummary{}
	tables := make([]string, 0, len(s.files))
	for t := range s.files {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		sum, err := summarize(s.files[t])
		if err != nil {
			return fmt.Errorf("publish %s: %w", t, err)
		}
		m.Checksums[t] = sum
	}
	var published []string
	for _, t := range tables {
		rel := partitionRel(t, s.installation, s.run)
		parent, err := s.w.mkdirs(filepath.Dir(rel))
		if err != nil {
			return fmt.Errorf("publish %s: %w", t, err)
		}
		final := filepath.Join(parent, filepath.Base(rel))
		if err := renameFile(filepath.Dir(s.files[t]), final); err != nil {
			return fmt.Errorf("publish %s: %w", t, err)
		}
		published = append(published, rel)
		syncDir(parent)
		m.Files[t] = filepath.ToSlash(fileRel(t, s.installation, s.run))
		CrashPoint("renamed " + t)
	}
	CrashPoint("before manifest")
	if err := s.w.WriteManifest(m); err != nil {
		// Not committed: take the published partitions back out now rather
		// than leave them, unclaimed, to the next run's recovery.
		for _, rel := range published {
			s.w.removeAll(rel)
		}
		return err
	}
	CrashPoint("committed")
	s.Discard()
	return nil
}

// Discard removes the staged files of the run (all of them after a
// failure; the emptied directories after a commit), and the run's and the
// staging directory once empty.
func (s *Staging) Discard() {
	s.w.removeAll(filepath.Join(stagingDir, s.run, s.installation))
	s.w.remove(filepath.Join(stagingDir, s.run))
	s.w.remove(stagingDir)
}

// WriteManifest writes a manifest atomically (temp, fsync, rename, fsync dir).
func (w *Warehouse) WriteManifest(m models.Manifest) error {
	m.Format, m.Version = models.ManifestFormat, models.DocumentVersion
	if err := ValidName(m.InstallationID); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := ValidName(m.RunID); err != nil {
		return fmt.Errorf("manifest: run id: %w", err)
	}
	if err := validateManifest(m, m.InstallationID, m.RunID); err != nil {
		return fmt.Errorf("manifest: %w", err) // never write what would be quarantined
	}
	dir, err := w.mkdirs(filepath.Join(runsDir, m.InstallationID))
	if err != nil {
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
// seams.CreateFile, so a full disk can be injected), fsyncs it, renames it into
// place and fsyncs the directory. On error nothing is left behind.
func writeFileAtomic(path string, data []byte) (err error) {
	tmp := path + ".tmp"
	if err := removeFile(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Left by a crash and held open elsewhere: a fresh name instead
		// (seams.CreateFile never overwrites).
		tmp = path + "." + uniqueID(time.Now()) + ".tmp"
	}
	f, err := seams.CreateFile(tmp)
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
	if err := renameFile(tmp, path); err != nil {
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

// expire picks the runs retention removes: per installation (manifests
// ordered by commit sequence), every run older than the keep-th newest
// served run, failed-run records included. Runs that are not served
// (unserved: their files failed verification) are never expired: they stay
// for the operator. keep < 1 keeps everything.
func expire(ms []models.Manifest, keep int, unserved map[[2]string]bool) []models.Manifest {
	if keep < 1 {
		return nil
	}
	byInst := map[string][]models.Manifest{}
	var insts []string
	for _, m := range ms {
		if byInst[m.InstallationID] == nil {
			insts = append(insts, m.InstallationID)
		}
		byInst[m.InstallationID] = append(byInst[m.InstallationID], m)
	}
	var out []models.Manifest
	for _, inst := range insts {
		runs := byInst[inst]
		var served []int
		for i, m := range runs {
			if m.Status == models.RunCommitted && !unserved[[2]string{inst, m.RunID}] {
				served = append(served, i)
			}
		}
		if len(served) <= keep {
			continue
		}
		for _, m := range runs[:served[len(served)-keep]] {
			if !unserved[[2]string{inst, m.RunID}] {
				out = append(out, m)
			}
		}
	}
	return out
}

// Prune removes the runs Rebuild expired. It runs after the new
// warehouse.duckdb, which leaves them out and holds its data itself, is in
// place: no served object ever references a pruned file. Every path removed
// is derived from validated names and proven to lie inside the warehouse;
// the manifest goes first, so a crash in between leaves only unclaimed
// partitions, which the next run's recovery removes. A file another process
// holds open (Windows) is left the same way, not an error: a held manifest
// keeps its run whole until a later rebuild expires it again, a held
// partition is unclaimed and removed by a later run (Leftovers lists both).
func (w *Warehouse) Prune(expired []models.Manifest) (removed int, err error) {
	for _, m := range expired {
		inst, run := m.InstallationID, m.RunID
		if ValidName(inst) != nil || ValidName(run) != nil {
			return removed, fmt.Errorf("prune %q/%q: not a valid run", inst, run)
		}
		CrashPoint("pruning")
		if err := w.remove(filepath.Join(runsDir, inst, run+".json")); err != nil {
			if isHeldOpen(err) {
				// Kept whole (manifest and files); the next rebuild expires
				// it again.
				w.leftover(filepath.Join(runsDir, inst, run+".json"), err)
				continue
			}
			return removed, fmt.Errorf("prune %s/%s: %w", inst, run, err)
		}
		for _, t := range baseTables {
			if err := w.removeAll(partitionRel(t, inst, run)); err != nil {
				if isHeldOpen(err) {
					// Unclaimed now: the next run's recovery removes it.
					w.leftover(partitionRel(t, inst, run), err)
					continue
				}
				return removed, fmt.Errorf("prune %s/%s: %w", inst, run, err)
			}
		}
		removed++
	}
	return removed, nil
}
