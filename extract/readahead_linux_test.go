//go:build linux

package extract

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// mainFile is the read-ahead state of c's main database file.
func mainFile(t *testing.T, c *liteConn) *raFile {
	t.Helper()
	out := c.tls.Alloc(8)
	defer c.tls.Free(8)
	if rc := sqlite3.Xsqlite3_file_control(c.tls, c.db, 0, sqlite3.SQLITE_FCNTL_FILE_POINTER, out); rc != sqlite3.SQLITE_OK {
		t.Fatalf("SQLITE_FCNTL_FILE_POINTER: %d", rc)
	}
	f, ok := raFiles.Load(*(*uintptr)(cPointer(out)))
	if !ok {
		t.Fatal("the connection's main file is not read through kx-readahead")
	}
	return f.(*raFile)
}

// tableDigest reads every row of a query through c and digests them.
func tableDigest(t *testing.T, c *liteConn, q string) (string, int) {
	t.Helper()
	h := sha256.New()
	n := 0
	if err := c.query(context.Background(), q, nil, func(row []any) error {
		n++
		fmt.Fprintf(h, "%#v\n", row)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n
}

// The bulk reads go through the read-ahead VFS, serve pages from its
// windows, and read what the default VFS reads; and a window never
// outlives the lock it was read under: a connection that reads, then
// reads again after another connection changed the file, sees the change,
// in rollback-journal and WAL mode, after a checkpoint too.
func TestReadAheadReadsWhatSQLiteWrites(t *testing.T) {
	if readAheadVFS() == "" {
		t.Fatal("the read-ahead VFS is not registered")
	}
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			testkit.SQLiteExec(t, path,
				`PRAGMA journal_mode = `+mode,
				`CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT)`,
				`CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT)`,
				// Interleaved pages of two tables, and values that span pages.
				`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
				 INSERT INTO a SELECT i, printf('a%d-', i) || hex(randomblob(40 + i % 300)) FROM n`,
				`INSERT INTO b SELECT id, 'b' || v FROM a WHERE id % 3 = 0`)
			c, err := openLite(path, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			plain, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			plain.SetMaxOpenConns(1)
			want := func(q string) (string, int) {
				t.Helper()
				rows, err := plain.Query(q)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				h := sha256.New()
				n := 0
				for rows.Next() {
					var id int64
					var v string
					if err := rows.Scan(&id, &v); err != nil {
						t.Fatal(err)
					}
					n++
					fmt.Fprintf(h, "%#v\n", []any{id, v})
				}
				return fmt.Sprintf("%x", h.Sum(nil)), n
			}
			f := mainFile(t, c)
			for round, change := range []string{
				`UPDATE a SET v = 'changed-' || v WHERE id % 7 = 0`,
				`DELETE FROM a WHERE id % 5 = 0`,
				`PRAGMA wal_checkpoint(TRUNCATE)`,
				`INSERT INTO a SELECT id + 100000, v FROM a WHERE id < 3000`,
				``,
			} {
				for _, q := range []string{`SELECT id, v FROM a`, `SELECT id, v FROM b`} {
					got, n := tableDigest(t, c, q)
					// The read transaction has ended, and its lock with it.
					if f.n != 0 {
						t.Errorf("round %d, %s: a window of %d bytes outlived the read's lock", round, q, f.n)
					}
					w, wn := want(q)
					if got != w || n != wn {
						t.Fatalf("round %d, %s: %d rows read ahead, %d by the default VFS, digests differ: %v", round, q, n, wn, got != w)
					}
				}
				if change != "" {
					if _, err := plain.Exec(change); err != nil {
						t.Fatal(err)
					}
				}
			}
			if f.served == 0 {
				t.Error("no read was served from a window")
			}
		})
	}
}
