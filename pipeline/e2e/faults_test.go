package e2e_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// Disk full and an unwritable warehouse: the run fails with a clear error,
// the failure is recorded, the previous committed run stays current and
// byte-identical, and the next run succeeds. Tests run as root, which file
// modes do not stop, so the faults are injected through load's
// internal/seams.CreateFile.

// faultStore is a real Kandev store (never written).
func faultStore(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "kandev", "fresh-activated.db"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func faultRun(t *testing.T, wh, source string) pipeline.Result {
	t.Helper()
	res, err := pipeline.Run(context.Background(), pipeline.Options{
		Warehouse:     wh,
		Installations: []pipeline.Installation{{Name: "disk", Source: source}},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// faultHashes digests every published file except warehouse.duckdb (which
// every run rebuilds to list the runs) and the lock.
func faultHashes(t *testing.T, wh string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(wh, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(wh, p)
		if rel == load.DatabaseFile || rel == ".lock" || rel == load.JournalFile {
			// The journal records failures, like _runs/ (checked apart).
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if rel == "_database.json" {
			// The record of the database in place, rewritten by every
			// build (and dropped when it cannot be written): it must
			// describe warehouse.duckdb byte for byte.
			var stamp struct {
				Bytes  int64  `json:"bytes"`
				SHA256 string `json:"sha256"`
			}
			if err := json.Unmarshal(b, &stamp); err != nil {
				t.Fatalf("_database.json: %v", err)
			}
			db, err := os.ReadFile(filepath.Join(wh, load.DatabaseFile))
			if err != nil {
				t.Fatal(err)
			}
			if h := sha256.Sum256(db); stamp.Bytes != int64(len(db)) || stamp.SHA256 != hex.EncodeToString(h[:]) {
				t.Errorf("_database.json describes another file than warehouse.duckdb")
			}
			return nil
		}
		h := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(h[:])
		return nil
	})
	return out
}

func faultQuery(t *testing.T, wh, q string) string {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(wh, load.DatabaseFile)+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// fullDisk is a file that accepts limit bytes, then fails like a full disk.
type fullDisk struct {
	*os.File
	left *atomic.Int64
}

func (f *fullDisk) Write(b []byte) (int, error) {
	n := int64(len(b))
	if left := f.left.Add(-n); left < 0 {
		keep := max(0, n+left)
		w, _ := f.File.Write(b[:keep])
		return w, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(b)
}

func TestWarehouseFaultsKeepThePreviousRun(t *testing.T) {
	open := func(path string) (*os.File, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	isParquet := func(path string) bool { return strings.HasSuffix(path, ".parquet") }
	cases := []struct {
		name   string
		create func(left *atomic.Int64) func(string) (seams.File, error)
		wants  []string
		// recorded: the failure's own manifest could be written (the fault
		// spared it), so runs lists the failed run.
		recorded bool
	}{
		{"disk full while writing Parquet", func(left *atomic.Int64) func(string) (seams.File, error) {
			return func(path string) (seams.File, error) {
				f, err := open(path)
				if err != nil || !isParquet(path) {
					return f, err
				}
				return &fullDisk{File: f, left: left}, nil
			}
		}, []string{"parquet ", "no space left on device"}, true},
		{"Parquet directory not writable", func(*atomic.Int64) func(string) (seams.File, error) {
			return func(path string) (seams.File, error) {
				if isParquet(path) {
					return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EROFS}
				}
				return open(path)
			}
		}, []string{"parquet ", "read-only file system"}, true},
		// The Parquet files are published (renamed into their partitions);
		// the commit marker then hits a full disk: the partitions are taken
		// back out.
		{"disk full while writing the manifest", func(*atomic.Int64) func(string) (seams.File, error) {
			var manifests atomic.Int64
			return func(path string) (seams.File, error) {
				f, err := open(path)
				if err != nil || isParquet(path) || manifests.Add(1) > 1 {
					return f, err
				}
				var none atomic.Int64
				none.Store(10)
				return &fullDisk{File: f, left: &none}, nil
			}
		}, []string{"manifest ", ".json", "no space left on device"}, true},
		// Nothing can be written, not even the failure's record.
		{"warehouse read-only", func(*atomic.Int64) func(string) (seams.File, error) {
			return func(path string) (seams.File, error) {
				return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EROFS}
			}
		}, []string{"parquet ", "read-only file system"}, false},
	}
	// seams.CreateFile is one process-wide seam, so the cases share one opener
	// that hands each case's files to the fault its case has set for its
	// own warehouse (nil: none, a plain file); that lets the cases run in
	// parallel. The test itself stays serial: no other test's files go
	// through this opener.
	var mu sync.Mutex
	faults := map[string]func(string) (seams.File, error){}
	setFault := func(wh string, create func(string) (seams.File, error)) {
		mu.Lock()
		defer mu.Unlock()
		faults[wh] = create
	}
	t.Cleanup(seams.SetCreateFile(func(path string) (seams.File, error) {
		var create func(string) (seams.File, error)
		known := false
		mu.Lock()
		for wh, f := range faults {
			if strings.HasPrefix(path, wh+string(filepath.Separator)) {
				create, known = f, true
			}
		}
		mu.Unlock()
		if !known {
			t.Errorf("a file outside the cases' warehouses: %s", path)
		}
		if create != nil {
			return create(path)
		}
		return open(path)
	}))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			source := faultStore(t)
			wh := filepath.Join(t.TempDir(), "wh")
			setFault(wh, nil)
			first := faultRun(t, wh, source)
			if first.Failed() {
				t.Fatalf("first run: %v", first.Outcomes[0].Err)
			}
			before := faultHashes(t, wh)

			var left atomic.Int64
			left.Store(20_000) // a few files fit, then the disk is full
			setFault(wh, tc.create(&left))
			second, runErr := pipeline.Run(context.Background(), pipeline.Options{
				Warehouse: wh, Installations: []pipeline.Installation{{Name: "disk", Source: source}}})
			// The rebuild writes through DuckDB (not injected); only the
			// current layout's manifest goes through seams.CreateFile, and on a
			// warehouse where nothing can be written the run says so too.
			if runErr != nil && (tc.recorded || !errors.Is(runErr, syscall.EROFS)) {
				t.Fatalf("Run: %v", runErr)
			}
			err := second.Outcomes[0].Err
			if err == nil || !second.Failed() {
				t.Fatal("the run succeeded on a full or read-only warehouse")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EROFS) {
				t.Errorf("error %v does not wrap the OS error", err)
			}
			// The previous run is intact and still current; the failure is
			// recorded; nothing of the failed run is left.
			after := faultHashes(t, wh)
			for rel, h := range before {
				if after[rel] != h {
					t.Errorf("%s changed or vanished", rel)
				}
			}
			for rel := range after {
				if _, ok := before[rel]; !ok && !strings.HasPrefix(rel, filepath.Join("_runs", "disk")) {
					t.Errorf("the failed run left %s", rel)
				}
			}
			if got := faultQuery(t, wh, `SELECT run_id FROM current_runs`); got != first.RunID {
				t.Errorf("current run = %s, want the previous %s", got, first.RunID)
			}
			if got := faultQuery(t, wh, `SELECT count(*)::VARCHAR FROM subagent_contexts`); got != "253" {
				t.Errorf("current rows = %s, want 253", got)
			}
			if tc.recorded {
				if got := faultQuery(t, wh, fmt.Sprintf(`SELECT status || '|' || (error = %s) FROM runs WHERE run_id = '%s'`,
					"'"+strings.ReplaceAll(err.Error(), "'", "''")+"'", second.RunID)); got != "failed|true" {
					t.Errorf("runs = %s", got)
				}
			} else if got := faultQuery(t, wh, fmt.Sprintf(`SELECT count(*)::VARCHAR FROM runs WHERE run_id = '%s'`, second.RunID)); got != "0" {
				t.Errorf("runs lists a failure that could not be written: %s", got)
			}
			// A failure its manifest could not hold is in the journal,
			// allocated before the fault, with its error.
			var journaled []string
			as, jerr := load.ReadAttempts(wh)
			for _, a := range as {
				if a.Kind == load.AttemptFailed && a.RunID == second.RunID && a.Installation == "disk" && a.Error == err.Error() {
					journaled = append(journaled, a.RunID)
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tc.recorded]; jerr != nil || len(journaled) != want {
				t.Errorf("journal holds the failure %d times, want %d (%v)", len(journaled), want, jerr)
			}

			// The disk has room again: the next run commits and is current.
			setFault(wh, nil)
			third := faultRun(t, wh, source)
			if third.Failed() {
				t.Fatalf("run after the fault: %v", third.Outcomes[0].Err)
			}
			if got := faultQuery(t, wh, `SELECT run_id FROM current_runs`); got != third.RunID {
				t.Errorf("current run = %s, want %s", got, third.RunID)
			}
		})
	}
}

// TestWarehouseIsAFile: a warehouse path that cannot be a directory fails
// the whole run, naming it, before any source is read.
func TestWarehouseIsAFile(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	if err := os.WriteFile(wh, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Run(context.Background(), pipeline.Options{
		Warehouse:     wh,
		Installations: []pipeline.Installation{{Name: "disk", Source: faultStore(t)}},
	})
	if err == nil || !strings.Contains(err.Error(), "warehouse "+wh) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("error = %v, want one naming the warehouse %s (not a directory)", err, wh)
	}
}
