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
	"strings"

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
// either the previous file or the new one, never a partial one.
// Installations no longer served leave the layout.
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

// publishCurrent makes current/ hold the served run of each installation.
func (w *Warehouse) publishCurrent(rows []runRow) error {
	latest := map[string]models.Manifest{}
	for _, r := range rows { // in run order per installation
		if r.served {
			latest[r.m.InstallationID] = r.m
		}
	}
	doc := CurrentManifest{Format: CurrentManifestFormat, Version: 1, Installations: map[string]CurrentEntry{}}
	insts := make([]string, 0, len(latest))
	for i := range latest {
		insts = append(insts, i)
	}
	sort.Strings(insts)
	for _, inst := range insts {
		m := latest[inst]
		e := CurrentEntry{RunID: m.RunID, CommitSeq: m.CommitSeq, Files: map[string]models.FileSummary{}}
		if m.Provenance != nil {
			e.SnapshotAt = m.Provenance.SnapshotAt.UTC().Format("2006-01-02T15:04:05.999999Z07:00")
		}
		for _, t := range baseTables {
			if _, ok := m.Files[t]; !ok {
				w.removeAll(filepath.Join(currentDir, t, "installation_id="+inst))
				continue
			}
			sum, err := w.swapCurrent(t, inst, m.RunID)
			if err != nil {
				return fmt.Errorf("current/%s of %s: %w", t, inst, err)
			}
			e.Files[t] = sum
		}
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
			if _, served := latest[inst]; !served {
				if err := w.removeAll(filepath.Join(currentDir, t, d)); err != nil {
					return err
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
	return writeFileAtomic(filepath.Join(dir, "_manifest.json"), b)
}

// swapCurrent puts the run's file of a table at current/<table>/
// installation_id=<i>/part-0.parquet unless it is there already.
func (w *Warehouse) swapCurrent(table, inst, run string) (models.FileSummary, error) {
	src, err := w.inside(fileRel(table, inst, run), false)
	if err != nil {
		return models.FileSummary{}, err
	}
	dir, err := w.mkdirs(filepath.Join(currentDir, table, "installation_id="+inst))
	if err != nil {
		return models.FileSummary{}, err
	}
	dst := filepath.Join(dir, partFile)
	if a, err := os.Lstat(src); err == nil {
		if b, err := os.Lstat(dst); err == nil && os.SameFile(a, b) {
			return summarize(dst)
		}
	}
	tmp := filepath.Join(dir, "."+partFile+".tmp")
	if err := w.remove(filepath.Join(currentDir, table, "installation_id="+inst, "."+partFile+".tmp")); err != nil {
		return models.FileSummary{}, err
	}
	if err := os.Link(src, tmp); err != nil {
		if err := copyNew(src, tmp); err != nil {
			return models.FileSummary{}, err
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return models.FileSummary{}, err
	}
	syncDir(dir)
	return summarize(dst)
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
