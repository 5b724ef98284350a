package sqlitedrv

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// openFixtureLite opens a copy of the fresh-activated fixture through a
// Conn, closed when the test ends.
func openFixtureLite(t *testing.T) *Conn {
	t.Helper()
	c, err := Open(testkit.CopyFixture(t, "fresh-activated.db"), false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLiteConnCancel: a cancelled context interrupts a running statement
// (sqlite3_interrupt from the context's goroutine, repeated until the
// statement ends: one interrupt landing before the first step is cleared
// by SQLite, and this test once ran for minutes on a busy machine) and the
// query returns the context's error; the connection stays usable. The
// cancel lands at spread moments, before and after the statement starts.
func TestLiteConnCancel(t *testing.T) {
	c := openFixtureLite(t)
	const forever = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`
	for i := 0; i < 60; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		delay := time.Duration(i%20) * 250 * time.Microsecond
		go func() {
			time.Sleep(delay)
			cancel()
		}()
		done := make(chan error, 1)
		go func() { done <- c.Query(ctx, forever, nil, func([]any) error { return nil }) }()
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Fatalf("cancel after %s: %v, want context.Canceled", delay, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("cancel after %s: the statement still runs 20 s later", delay)
		}
	}
	var n int64
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM sqlite_master`, nil, &n); err != nil || n == 0 {
		t.Fatalf("after the interrupts: %d, %v", n, err)
	}
}

// TestLiteConnValuesOutliveRows keeps every TEXT value a query returned
// and checks them all after the query: the reader's chunks of values
// (textArena) are never written again once handed out, small or large.
func TestLiteConnValuesOutliveRows(t *testing.T) {
	c := openFixtureLite(t)
	const rows = 50000
	q := fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		SELECT i, printf('%%d-', i) || CASE WHEN i %% 997 = 0 THEN zeroblob(0) || replace(hex(zeroblob(3000)), '0', 'x') ELSE '' END, '' FROM n`, rows)
	var kept []string
	err := c.Query(context.Background(), q, nil, func(row []any) error {
		s, ok := row[1].(string)
		if !ok {
			return fmt.Errorf("row %v: a %T", row[0], row[1])
		}
		if e, ok := row[2].(string); !ok || e != "" {
			return fmt.Errorf("row %v: empty text read as %#v", row[0], row[2])
		}
		kept = append(kept, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != rows {
		t.Fatalf("%d rows, want %d", len(kept), rows)
	}
	for i, s := range kept {
		want := fmt.Sprintf("%d-", i+1)
		if (i+1)%997 == 0 {
			want += strings.Repeat("x", 6000)
		}
		if s != want {
			t.Fatalf("row %d reads %.40q… (%d bytes) after the query, want %.40q… (%d bytes)", i+1, s, len(s), want, len(want))
		}
	}
}

// TestLiteConnRepeatsEqualText: a TEXT value equal to the last one its
// column read is handed out again rather than copied, and only then: values
// that differ in length, in one byte, or in storage class (the integer 7,
// the BLOB '7.', against the text) each read as themselves, and every value
// kept reads the same after the query.
func TestLiteConnRepeatsEqualText(t *testing.T) {
	c := openFixtureLite(t)
	q := `SELECT column1 FROM (VALUES ('sess-a'), ('sess-a'), ('sess-a'), ('sess-b'), ('sess-ab'), ('sess-ab'),
		('sess-aC'), ('sess-aB'), (7), ('7'), ('7'), (NULL), ('7'), (''), (''), (x'372e'), ('7.'))`
	want := []any{"sess-a", "sess-a", "sess-a", "sess-b", "sess-ab", "sess-ab",
		"sess-aC", "sess-aB", int64(7), "7", "7", nil, "7", "", "", []byte("7."), "7."}
	var got []any
	err := c.Query(context.Background(), q, nil, func(row []any) error {
		got = append(got, row[0])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %#v,\nwant %#v", got, want)
	}
	shared := func(i, j int) bool {
		return unsafe.StringData(got[i].(string)) == unsafe.StringData(got[j].(string))
	}
	if !shared(0, 1) || !shared(1, 2) || !shared(4, 5) || !shared(9, 10) {
		t.Fatal("a value equal to the row before's was copied again")
	}
}
