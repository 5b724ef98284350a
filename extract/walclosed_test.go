package extract_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// walStore is a copy of a fixture converted to WAL mode and closed, as
// Kandev leaves its store when it quits: no -wal or -shm beside it.
func walStore(t *testing.T, fixture string) string {
	t.Helper()
	path := testkit.CopyFixture(t, fixture)
	testkit.SQLiteExec(t, path, `PRAGMA journal_mode = WAL`)
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("-wal left after the conversion")
	}
	head := make([]byte, 20)
	f, _ := os.Open(path)
	f.ReadAt(head, 0)
	f.Close()
	if head[18] != 2 || head[19] != 2 {
		t.Fatalf("%s is not in WAL mode", path)
	}
	return path
}

// verify calls the source's Verify, which every SQLite source has.
func verify(t *testing.T, src any) error {
	t.Helper()
	v, ok := src.(interface{ Verify() error })
	if !ok {
		t.Fatalf("%T has no Verify", src)
	}
	return v.Verify()
}

// A closed WAL-mode store is read whole, exactly as its rollback-journal
// original, and nothing is created beside it (a usual read-only open
// leaves -wal and -shm there); the snapshot verifies.
func TestClosedWALStoreReadLeavesNothingBeside(t *testing.T) {
	t.Parallel()
	path := walStore(t, "upgraded-backfill.db")
	before, beside := testkit.HashFile(t, path), listDir(t, filepath.Dir(path))
	src, snap := begin(t, path)
	got := readAll(t, snap)
	_, origSnap := begin(t, testkit.CopyFixture(t, "upgraded-backfill.db"))
	want := readAll(t, origSnap)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the WAL-mode store reads differently from its original:\n got %+v\nwant %+v", got, want)
	}
	if err := verify(t, src); err != nil {
		t.Errorf("Verify after an undisturbed read: %v", err)
	}
	snap.Close()
	src.Close()
	if after := listDir(t, filepath.Dir(path)); after != beside {
		t.Errorf("files beside the store: %s, before %s", after, beside)
	}
	if testkit.HashFile(t, path) != before {
		t.Error("the store changed")
	}
}

// A closed WAL-mode store that something opens or writes while it is read
// (without locks) fails Verify, naming what happened.
func TestClosedWALStoreChangedWhileReadFailsVerify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		disturb    func(t *testing.T, path string) (undo func())
	}{
		{"written and closed", "the file changed while it was read", func(t *testing.T, path string) func() {
			testkit.SQLiteExec(t, path, `UPDATE tasks SET state = 'kx-changed'`)
			return func() {}
		}},
		{"held open by a writer", "opened the store while it was read", func(t *testing.T, path string) func() {
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`UPDATE tasks SET state = 'kx-changed'`); err != nil {
				t.Fatal(err)
			}
			return func() { db.Close() }
		}},
		{"replaced", "it was replaced", func(t *testing.T, path string) func() {
			b, _ := os.ReadFile(path)
			tmp := path + ".new"
			os.WriteFile(tmp, b, 0o644)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := walStore(t, "fresh-activated.db")
			src, snap := begin(t, path)
			readAll(t, snap)
			undo := c.disturb(t, path)
			defer undo()
			err := verify(t, src)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "run again") {
				t.Errorf("Verify = %v, want an error saying %q about %s", err, c.want, path)
			}
		})
	}
}

// A WAL-mode store that a writer holds open (its -wal beside it) is read
// as usual, under SQLite's snapshot: Verify has nothing to check, and a
// write after the snapshot began is not seen.
func TestOpenWALStoreIsReadUnderItsSnapshot(t *testing.T) {
	t.Parallel()
	path := walStore(t, "fresh-activated.db")
	writer, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.Exec(`UPDATE tasks SET state = 'kx-before'`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src, snap := begin(t, path)
	count := func() (n int64) {
		err := snap.Query(ctx, `SELECT count(*) FROM tasks WHERE state = 'kx-before'`, nil, func(row []any) error { n = row[0].(int64); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := count()
	if n == 0 {
		t.Fatal("the writer's committed change is not in the snapshot")
	}
	if _, err := writer.Exec(`UPDATE tasks SET state = 'kx-after'`); err != nil {
		t.Fatal(err)
	}
	if m := count(); m != n {
		t.Errorf("the snapshot saw a write made after it began: %d rows, then %d", n, m)
	}
	if err := verify(t, src); err != nil {
		t.Errorf("Verify of a store read under SQLite's locks: %v", err)
	}
}
