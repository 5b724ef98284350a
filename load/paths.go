package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// Every path the warehouse creates, overwrites or deletes is built here from
// fixed names, table names of this build and names that passed ValidName,
// and is reached from the warehouse directory through real directories only:
// no component may be a symbolic link, so nothing planted in the warehouse
// can point a delete or a write outside it. Nothing is ever globbed: a
// warehouse path may hold glob metacharacters (`wh[1]`).

// errOutside is wrapped by every refusal of a path that would leave the
// warehouse.
var errOutside = errors.New("refused: would leave the warehouse")

// isTable reports whether name is one of the tables this build publishes.
func isTable(name string) bool { return slices.Contains(baseTables, name) }

// IsTable reports whether name is one of the tables this build publishes.
func IsTable(name string) bool { return isTable(name) }

// BaseTables lists the tables this build publishes.
func BaseTables() []string { return slices.Clone(baseTables) }

// PartFile is the one file of a table's run partition.
const PartFile = partFile

// FileRel is a table's run file relative to a warehouse (or a bucket's
// landing area), with forward slashes, built from names the caller has
// validated (ValidName).
func FileRel(table, installation, run string) string {
	return filepath.ToSlash(fileRel(table, installation, run))
}

// OpenRunFile opens a committed run's file of a table for reading,
// reached from the warehouse through real directories only and refusing a
// symbolic link.
func OpenRunFile(dir string, m models.Manifest, table string) (*os.File, error) {
	if !isTable(table) || ValidName(m.InstallationID) != nil || ValidName(m.RunID) != nil {
		return nil, fmt.Errorf("not a run file: %q of %q/%q", table, m.InstallationID, m.RunID)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	w := &Warehouse{Dir: abs}
	p, err := w.inside(fileRel(table, m.InstallationID, m.RunID), false)
	if err != nil {
		return nil, err
	}
	return openNoFollow(p)
}

// partitionRel is the Hive-style directory of one table's run partition,
// relative to the warehouse.
func partitionRel(table, installation, run string) string {
	return filepath.Join(table, "installation_id="+installation, "run_id="+run)
}

// fileRel is the one file of a table's run partition.
func fileRel(table, installation, run string) string {
	return filepath.Join(partitionRel(table, installation, run), partFile)
}

// inside resolves rel (relative to the warehouse) to an absolute path,
// proving that every existing component up to the parent of the last is a
// real directory inside the warehouse. The last component may not exist; if
// it exists it must not be a symbolic link unless lastMayBeLink (removing a
// link removes the link, never its target).
func (w *Warehouse) inside(rel string, lastMayBeLink bool) (string, error) {
	clean := filepath.Clean(rel)
	if rel == "" || filepath.IsAbs(clean) || filepath.VolumeName(clean) != "" || clean == "." ||
		clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("warehouse %s: path %q: %w", w.Dir, rel, errOutside)
	}
	parts := strings.Split(clean, string(filepath.Separator))
	cur := w.Dir
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(w.Dir, clean), nil
		}
		if err != nil {
			return "", fmt.Errorf("warehouse %s: %w", w.Dir, err)
		}
		last := i == len(parts)-1
		if fi.Mode()&fs.ModeSymlink != 0 && !(last && lastMayBeLink) {
			return "", fmt.Errorf("warehouse %s: %s is a symbolic link: %w", w.Dir, cur, errOutside)
		}
		if !last && !fi.IsDir() {
			return "", fmt.Errorf("warehouse %s: %s is not a directory: %w", w.Dir, cur, errOutside)
		}
	}
	return filepath.Join(w.Dir, clean), nil
}

// mkdirs creates rel and its parents inside the warehouse, refusing any
// existing component that is a symbolic link or not a directory.
func (w *Warehouse) mkdirs(rel string) (string, error) {
	clean := filepath.Clean(rel)
	if _, err := w.inside(clean, false); err != nil {
		return "", err
	}
	cur := w.Dir
	for _, p := range strings.Split(clean, string(filepath.Separator)) {
		cur = filepath.Join(cur, p)
		err := os.Mkdir(cur, 0o755)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("warehouse %s: %w", w.Dir, err)
		}
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", fmt.Errorf("warehouse %s: %w", w.Dir, err)
		}
		if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("warehouse %s: %s is not a directory: %w", w.Dir, cur, errOutside)
		}
	}
	return cur, nil
}

// removeAll removes rel (a file, a directory tree, or a symbolic link as a
// link) after proving it lies inside the warehouse. A missing path is not an
// error.
func (w *Warehouse) removeAll(rel string) error {
	p, err := w.inside(rel, true)
	if err != nil {
		return err
	}
	if err := removeAllFiles(p); err != nil {
		return fmt.Errorf("warehouse %s: remove %s: %w", w.Dir, rel, err)
	}
	return nil
}

// remove removes one file or empty directory inside the warehouse; a
// missing one is not an error.
func (w *Warehouse) remove(rel string) error {
	p, err := w.inside(rel, true)
	if err != nil {
		return err
	}
	if err := removeFile(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("warehouse %s: remove %s: %w", w.Dir, rel, err)
	}
	return nil
}

// realDirEntries lists the entries of the directory rel that are real
// directories (symbolic links and files are skipped). A missing directory
// has none.
func (w *Warehouse) realDirEntries(rel string) ([]string, error) {
	return readDirEntries(w.Dir, rel, func(e fs.DirEntry) bool { return e.IsDir() && e.Type()&fs.ModeSymlink == 0 })
}

func readDirEntries(root, rel string, keep func(fs.DirEntry) bool) ([]string, error) {
	p := filepath.Join(root, rel)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("warehouse %s: %s is not a directory: %w", root, p, errOutside)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if keep(e) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
