package sqlitedrv

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The package's tests read borrowed values (Conn.QueryBorrowed) poisoned,
// as the message pass's tests do (extract/evidence): a value kept beyond
// its row reads as 0xa5 bytes.
func init() { PoisonBorrowed = true }

// A borrowed TEXT value reads right while its row is handed out (short,
// long, empty, and next to a BLOB, which is copied), and, under
// PoisonBorrowed, as garbage once it is kept beyond its row — the guard the
// message pass's tests rely on.
func TestBorrowedValuesLastTheirRow(t *testing.T) {
	c := openFixtureLite(t)
	const rows = 3000
	q := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		SELECT printf('%%d-', i) || CASE WHEN i %% 97 = 0 THEN replace(hex(zeroblob(3000)), '0', 'x') ELSE '' END, '', x'00ff' FROM n`, rows)
	var kept []string
	var blobs [][]byte
	n := 0
	err := c.QueryBorrowed(context.Background(), q, nil, func(row []any) error {
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

// Every storage class reads back as the driver's type and value, copied or
// borrowed: INTEGER as int64, REAL as float64, TEXT as string (empty and
// with a NUL byte included), BLOB as []byte (empty included), NULL as nil.
func TestReadRowKeepsStorageClasses(t *testing.T) {
	c := openFixtureLite(t)
	q := `SELECT 42, -9223372036854775808, 4.5, -0.0, 1e300, 'text', '', 'a' || char(0) || 'b', x'00ff', x'', NULL, CAST('7' AS INTEGER), CAST(3 AS REAL)`
	want := []any{int64(42), int64(-9223372036854775808), 4.5, math.Copysign(0, -1), 1e300, "text", "", "a\x00b", []byte{0, 0xff}, []byte{}, nil, int64(7), 3.0}
	for _, borrow := range []bool{false, true} {
		rows := 0
		err := c.run(context.Background(), q, nil, borrow, func(row []any) error {
			rows++
			if len(row) != len(want) {
				return fmt.Errorf("%d columns, want %d", len(row), len(want))
			}
			for i, w := range want {
				if fmt.Sprintf("%T %#v", row[i], row[i]) != fmt.Sprintf("%T %#v", w, w) {
					t.Errorf("borrow %v, column %d: %T %#v, want %T %#v", borrow, i, row[i], row[i], w, w)
				}
			}
			return nil
		})
		if err != nil || rows != 1 {
			t.Fatalf("borrow %v: %d rows, %v", borrow, rows, err)
		}
	}
}
