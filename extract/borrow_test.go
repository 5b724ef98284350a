package extract

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// The package's tests read borrowed values (liteConn.queryBorrowed)
// poisoned: a value the message pass kept beyond its row would read as
// 0xa5 bytes, and its comparisons with SQL (TestMessagePassMatchesSQL and
// the others) would fail instead of passing by luck.
func init() { borrowPoison = true }

// A borrowed TEXT value reads right while its row is handed out (short,
// long, empty, and next to a BLOB, which is copied), and, under
// borrowPoison, as garbage once it is kept beyond its row — the guard the
// tests above rely on.
func TestBorrowedValuesLastTheirRow(t *testing.T) {
	path := testkit.CopyFixture(t, "fresh-activated.db")
	c, err := openLite(path, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const rows = 3000
	q := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		SELECT printf('%%d-', i) || CASE WHEN i %% 97 = 0 THEN replace(hex(zeroblob(3000)), '0', 'x') ELSE '' END, '', x'00ff' FROM n`, rows)
	var kept []string
	var blobs [][]byte
	n := 0
	err = c.queryBorrowed(context.Background(), q, nil, func(row []any) error {
		n++
		want := fmt.Sprintf("%d-", n)
		if n%97 == 0 {
			want += strings.Repeat("x", 6000)
		}
		if s, _ := row[0].(string); s != want {
			return fmt.Errorf("row %d: %.40q… (%d bytes) while handed out, want %.40q…", n, s, len(s), want)
		}
		if e, ok := row[1].(string); !ok || e != "" {
			return fmt.Errorf("row %d: empty text read as %#v", n, row[1])
		}
		kept = append(kept, row[0].(string))
		blobs = append(blobs, row[2].([]byte))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
	for i, s := range kept {
		if len(s) == 0 || bytes.Count([]byte(s), []byte{0xa5}) != len(s) {
			t.Fatalf("row %d kept beyond its row reads %.40q, want it poisoned", i+1, s)
		}
		if string(blobs[i]) != "\x00\xff" {
			t.Fatalf("row %d: a BLOB kept beyond its row reads %x, want 00ff (BLOBs are copied)", i+1, blobs[i])
		}
	}
}
