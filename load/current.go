package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// The current layout is for readers that know nothing about runs (a Power
// BI folder source, an external table, Spark, pandas):
//
//	current/<table>/installation_id=<i>/part-0.parquet   the served run's file
//	current/_manifest.json                               which run each installation is at
//
// Each file is a hard link to (or, where links are not possible, a copy
// of) the served run's verified file, swapped in by rename: a reader sees
// either the previous file or the new one, never a partial one, and an
// installation's files move together (see publishCurrent). Installations
// no longer served leave the layout. Temporary files are made under
// _build/, never beside the files readers list.
const currentDir = "current"

// CurrentManifest describes the current layout.
type CurrentManifest struct {
	Format        string                  `json:"format"`
	Version       int                     `json:"version"`
	Installations map[string]CurrentEntry `json:"installations"`
}

// CurrentEntry is the run one installation's current files come from.
type CurrentEntry struct {
	RunID      string                        `json:"run_id"`
	CommitSeq  int64                         `json:"commit_seq,omitempty"`
	SnapshotAt string                        `json:"snapshot_at,omitempty"`
	Files      map[string]models.FileSummary `json:"files"`
}

// CurrentManifestFormat names the current layout's manifest.
const CurrentManifestFormat = "kandev-extract/current"

// currentTarget is the current layout the served runs call for: each
// installation's latest served run, with the tables it has and their
// recorded summaries.
func currentTarget(rows []runRow) CurrentManifest {
	doc := CurrentManifest{Format: CurrentManifestFormat, Version: 1, Installations: map[string]CurrentEntry{}}
	for _, r := range rows { // in run order per installation
		if !r.served {
			continue
		}
		m := r.m
		e := CurrentEntry{RunID: m.RunID, CommitSeq: m.CommitSeq, Files: map[string]models.FileSummary{}}
		if m.Provenance != nil {
			e.SnapshotAt = m.Provenance.SnapshotAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
		}
		for _, t := range baseTables {
			if _, ok := m.Files[t]; ok {
				e.Files[t] = m.Checksums[t]
			}
		}
		doc.Installations[m.InstallationID] = e
	}
	return doc
}

// publishCurrent makes current/ hold the target layout, one installation at
// a time: all of an installation's tables move to its new run, or (when a
// file of it is held open by another process, on Windows) all stay at the
// previous one. What could not be done is kept in _pending/current.json for
// a later command (retryCurrent), and _manifest.json says what current/
// holds. work is a fresh directory of the tool's own for temporary links.
func (w *Warehouse) publishCurrent(target CurrentManifest, work string) error {
	have, err := ReadCurrentManifest(w.Dir)
	if err != nil {
		have = CurrentManifest{} // rewritten below from what is done
	}
	doc := CurrentManifest{Format: CurrentManifestFormat, Version: 1, Installations: map[string]CurrentEntry{}}
	behind := false
	insts := make([]string, 0, len(target.Installations))
	for i := range target.Installations {
		insts = append(insts, i)
	}
	sort.Strings(insts)
	for _, inst := range insts {
		e := target.Installations[inst]
		if h, ok := have.Installations[inst]; ok && h.RunID == e.RunID && w.currentIsAt(inst, e) {
			doc.Installations[inst] = h
			continue
		}
		files, err := w.swapInstallation(inst, e, filepath.Join(work, "current", inst))
		if isHeldOpen(err) {
			behind = true
			if h, ok := have.Installations[inst]; ok {
				doc.Installations[inst] = h
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("current/ of %s: %w", inst, err)
		}
		e.Files = files
		doc.Installations[inst] = e
	}
	// Installations that are no longer served leave the layout.
	for _, t := range baseTables {
		dirs, err := w.realDirEntries(filepath.Join(currentDir, t))
		if err != nil {
			return err
		}
		for _, d := range dirs {
			inst, ok := strings.CutPrefix(d, "installation_id=")
			if !ok || ValidName(inst) != nil {
				continue
			}
			if _, served := target.Installations[inst]; !served {
				if err := w.removeAll(filepath.Join(currentDir, t, d)); err != nil {
					if !isHeldOpen(err) {
						return err
					}
					behind = true
					if h, ok := have.Installations[inst]; ok {
						doc.Installations[inst] = h
					}
				}
			}
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	dir, err := w.mkdirs(currentDir)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "_manifest.json"), b); err != nil {
		if !isHeldOpen(err) {
			return err
		}
		behind = true
	}
	if !behind {
		return w.remove(filepath.Join(pendingDir, pendingCurrentFile))
	}
	want, err := json.MarshalIndent(target, "", "  ")
	if err != nil {
		return err
	}
	pdir, err := w.mkdirs(pendingDir)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(pdir, pendingCurrentFile), want)
}

// currentIsAt reports whether every current/ file of the installation is
// the run's own file (the same file: a hard link).
func (w *Warehouse) currentIsAt(inst string, e CurrentEntry) bool {
	for _, t := range baseTables {
		dst := filepath.Join(w.Dir, currentDir, t, "installation_id="+inst, partFile)
		if _, ok := e.Files[t]; !ok {
			if _, err := os.Lstat(filepath.Dir(dst)); err == nil {
				return false
			}
			continue
		}
		a, err := os.Lstat(filepath.Join(w.Dir, fileRel(t, inst, e.RunID)))
		if err != nil {
			return false
		}
		b, err := os.Lstat(dst)
		if err != nil || !os.SameFile(a, b) {
			return false
		}
	}
	return true
}

// retryCurrent brings current/ to the layout a rebuild wanted and could not
// complete (_pending/current.json), for the runs that are still committed
// and whose files still match their recorded summaries; a run gone since
// (retention, quarantine) leaves it to the next run's rebuild. The caller
// holds the lock.
func (w *Warehouse) retryCurrent() error {
	want, ok, err := readPendingCurrent(w.Dir)
	if err != nil {
		// Not ours to trust: the next rebuild writes the layout anew.
		return w.remove(filepath.Join(pendingDir, pendingCurrentFile))
	}
	if !ok {
		return nil
	}
	set, err := ScanManifests(w.Dir)
	if err != nil {
		return err
	}
	committed := map[[2]string]models.Manifest{}
	for _, m := range set.Valid {
		if m.Status == models.RunCommitted {
			committed[[2]string{m.InstallationID, m.RunID}] = m
		}
	}
	var rows []runRow
	for inst, e := range want.Installations {
		m, ok := committed[[2]string{inst, e.RunID}]
		if ValidName(inst) != nil || !ok || verifyRun(w.Dir, m) != nil {
			return nil // superseded or broken since: the next run rebuilds the layout
		}
		rows = append(rows, runRow{m: m, served: true})
	}
	work := filepath.Join(buildDir, uniqueID(time.Now()))
	if _, err := w.mkdirs(work); err != nil {
		return err
	}
	defer func() {
		if err := w.removeAll(work); err != nil {
			w.leftover(work, err)
		}
		w.remove(buildDir) // once empty
	}()
	return w.publishCurrent(currentTarget(rows), work)
}

// swapInstallation moves every current/ file of an installation to the
// run's files. New files are prepared in work (hard links to the run's
// files, or copies), and the files they replace are kept there too (hard
// links); then each is renamed into place. When one rename is refused
// (held open), the ones already done are put back, so the installation's
// tables stay at one run, and the error is returned. It returns the
// summaries of the files now in place.
func (w *Warehouse) swapInstallation(inst string, e CurrentEntry, work string) (map[string]models.FileSummary, error) {
	type step struct{ dst, tmp, prev string }
	var steps []step
	var drops []string
	wdir, err := w.mkdirs(work)
	if err != nil {
		return nil, err
	}
	for _, t := range baseTables {
		rel := filepath.Join(currentDir, t, "installation_id="+inst)
		if _, ok := e.Files[t]; !ok {
			if p, err := w.inside(rel, false); err == nil {
				if _, err := os.Lstat(p); err == nil {
					drops = append(drops, rel)
				}
			}
			continue
		}
		src, err := w.inside(fileRel(t, inst, e.RunID), false)
		if err != nil {
			return nil, err
		}
		dir, err := w.mkdirs(rel)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, partFile)
		if a, err := os.Lstat(src); err == nil {
			if b, err := os.Lstat(dst); err == nil && os.SameFile(a, b) {
				continue
			}
		}
		s := step{dst: dst, tmp: filepath.Join(wdir, t+".new")}
		if err := os.Link(src, s.tmp); err != nil {
			if err := copyNew(src, s.tmp); err != nil {
				return nil, err
			}
		}
		if _, err := os.Lstat(dst); err == nil {
			s.prev = filepath.Join(wdir, t+".prev")
			if err := os.Link(dst, s.prev); err != nil {
				if err := copyNew(dst, s.prev); err != nil {
					s.prev = ""
				}
			}
		}
		steps = append(steps, s)
	}
	// Tables the run does not have leave first (moved into work, so they
	// can come back).
	var moved [][2]string
	undo := func(done []step) {
		for i := len(done) - 1; i >= 0; i-- {
			if done[i].prev != "" {
				renameFile(done[i].prev, done[i].dst)
			} else {
				removeFile(done[i].dst)
			}
		}
		for _, m := range moved {
			renameFile(m[1], m[0])
		}
	}
	for i, rel := range drops {
		from, err := w.inside(rel, false)
		if err != nil {
			return nil, err
		}
		to := filepath.Join(wdir, "dropped-"+strconv.Itoa(i))
		if err := renameFile(from, to); err != nil {
			undo(nil)
			return nil, err
		}
		moved = append(moved, [2]string{from, to})
	}
	for i, s := range steps {
		if err := renameFile(s.tmp, s.dst); err != nil {
			undo(steps[:i])
			return nil, err
		}
		syncDir(filepath.Dir(s.dst))
	}
	files := map[string]models.FileSummary{}
	for _, t := range baseTables {
		if _, ok := e.Files[t]; !ok {
			continue
		}
		sum, err := summarize(filepath.Join(w.Dir, currentDir, t, "installation_id="+inst, partFile))
		if err != nil {
			return nil, err
		}
		files[t] = sum
	}
	return files, nil
}

// copyNew copies src to a new file dst (which must not exist).
func copyNew(src, dst string) error {
	in, err := openNoFollow(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

// ReadCurrentManifest reads current/_manifest.json of a warehouse.
func ReadCurrentManifest(dir string) (CurrentManifest, error) {
	var doc CurrentManifest
	f, err := openNoFollow(filepath.Join(dir, currentDir, "_manifest.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, err
	}
	defer f.Close()
	err = json.NewDecoder(io.LimitReader(f, maxManifestBytes)).Decode(&doc)
	return doc, err
}
