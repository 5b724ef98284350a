package extract

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
)

// TestPGRowDecoderMatchesValues: the PostgreSQL reader's row decoder gives,
// cell for cell, the Go value (type and value) pgx's Rows.Values() gives —
// for the types read directly (text, varchar, bpchar, name, bool, int2,
// int4, int8, timestamp: NULLs, extremes, infinities, instants outside
// the years 1-9999, fractions, negative epochs) and for the rest, decoded
// by the codec (timestamptz, numeric, jsonb, bytea, uuid, date, float8, an
// enum pgx has no type for) — and the same errors, under the session time
// zones that must change nothing. Repeated short values (interned) and
// long ones are compared across many rows.
func TestPGRowDecoderMatchesValues(t *testing.T) {
	c := pgtest.Shared(t)
	ctx := context.Background()
	db := pgtest.NewDatabase(t, c, "")
	if err := c.Exec(ctx, db, `CREATE TYPE kx_mood AS ENUM ('ok', 'sad');
		CREATE TABLE kx_types (n int, t text, v varchar(300), b bpchar(4), nm name, bo bool, i2 int2, i4 int4, i8 int8,
			ts timestamp, ts3 timestamp(3), tz timestamptz, nu numeric, j jsonb, by bytea, u uuid, d date, f float8, e kx_mood);
		INSERT INTO kx_types VALUES
			(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(2, '', '', '', '', true, -32768, -2147483648, -9223372036854775808, '2026-02-24 07:12:00.123457', '2026-02-24 07:12:00.123',
				'2026-02-24 07:12:00.123457+05:30', 1.5, '{"a":1}', '\x00ff', '6ba7b810-9dad-11d1-80b4-00c04fd430c8', '2026-02-24', 1.25, 'ok'),
			(3, 'héllo', 'wörld', 'ab', 'nm', false, 32767, 2147483647, 9223372036854775807, 'infinity', '-infinity',
				'infinity', 'NaN', 'null', '\x', '00000000-0000-0000-0000-000000000000', 'infinity', 'NaN', 'sad'),
			(4, repeat('x', 100), repeat('é', 150), 'abcd', repeat('n', 63), NULL, 0, 0, 0, '0001-01-01 00:00:00', '9999-12-31 23:59:59.999',
				'1970-01-01 00:00:00+00', -0.0, '[]', NULL, NULL, '0001-01-01', '-Infinity', NULL),
			(5, 'x', 'y', 'z', 'w', true, 1, 1, 255, '4713-01-01 00:00:00 BC', '294276-12-31 23:59:59.999999',
				'4713-01-01 00:00:00+00 BC', 1e100, '"s"', '\x01', NULL, '4713-01-01 BC', 1e308, 'ok'),
			(6, 'x', 'y', 'z', 'w', true, 1, 1, 256, '1969-12-31 23:59:59.999999', '1999-12-31 23:59:59.999999',
				NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(7, 'x', 'y', 'z', 'w', true, 1, 1, 256, '10000-01-01 00:00:00', '9999-12-31 23:59:59.999999',
				NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(8, 'x', 'y', 'z', 'w', true, 1, 1, 256, '0001-12-31 23:59:59.999999 BC', '2000-01-01 00:00:00',
				NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		INSERT INTO kx_types (n, t, v, b, nm, ts, i8)
			SELECT 100 + g, CASE WHEN g % 3 = 0 THEN 'state-' || (g % 5) ELSE 'id-' || g END, 'v' || (g % 7), 'b', 'n' || (g % 2),
				'2026-01-01'::timestamp + g * interval '1.000001 second', g FROM generate_series(1, 12000) g`); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	queries := []string{
		`SELECT * FROM kx_types WHERE n > 8 OR n IN (1, 2, 4, 6) ORDER BY n`,
		// Text format for every column: pgx asks binary only of types it knows.
		`SELECT n::text, ts::text, i8::text, e, e::text FROM kx_types ORDER BY n`,
		`SELECT NULL, 1, 'a', true, 1::int8, now()::timestamp - now()::timestamp FROM kx_types LIMIT 3`,
	}
	for _, tz := range []string{"UTC", "America/New_York", "Asia/Kolkata"} {
		if _, err := conn.Exec(ctx, `SET TIME ZONE '`+tz+`'`); err != nil {
			t.Fatal(err)
		}
		qs := append([]string(nil), queries...)
		// One row at a time too: a value pgx refuses ends its query.
		for n := 1; n <= 8; n++ {
			qs = append(qs, fmt.Sprintf(`SELECT * FROM kx_types WHERE n = %d`, n))
		}
		errors := 0
		for _, q := range qs {
			want, werr := tryValues(conn, q)
			got, gerr := tryDecoded(conn, q)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("TimeZone %s: %s: error: decoded %v, Values() %v", tz, q, gerr, werr)
			}
			if werr != nil {
				errors++
			}
			if len(got) != len(want) {
				t.Fatalf("TimeZone %s: %s: %d rows decoded, %d from Values()", tz, q, len(got), len(want))
			}
			for i := range want {
				for j := range want[i] {
					if !sameCell(got[i][j], want[i][j]) {
						t.Fatalf("TimeZone %s: %s: row %d column %d: decoded %T %#v, Values() %T %#v", tz, q, i, j, got[i][j], got[i][j], want[i][j], want[i][j])
					}
				}
			}
		}
		if errors == 0 {
			t.Fatalf("no query failed: the error path is not compared")
		}
	}
	// Every row but the refused ones is compared in the full scans.
	rows, err := tryDecoded(conn, `SELECT * FROM kx_types WHERE n > 8 ORDER BY n`)
	if err != nil || len(rows) != 12000 {
		t.Fatalf("the generated rows: %d, %v", len(rows), err)
	}
}

func tryValues(conn *pgx.Conn, q string) ([][]any, error) {
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func tryDecoded(conn *pgx.Conn, q string) ([][]any, error) {
	rows, err := conn.Query(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dec := newPGRowDecoder(rows)
	var out [][]any
	for rows.Next() {
		v, err := dec.decode(rows.RawValues())
		if err != nil {
			return out, err
		}
		out = append(out, append([]any(nil), v...))
	}
	return out, rows.Err()
}

// sameCell: the same type and value (a NaN equals a NaN).
func sameCell(a, b any) bool {
	if x, ok := a.(float64); ok && math.IsNaN(x) {
		y, ok := b.(float64)
		return ok && math.IsNaN(y)
	}
	return reflect.DeepEqual(a, b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)
}

// TestPGIntern: the shared strings are always the value read — repeats of
// the previous value, of a few short values, long values, empty ones, and
// a column of distinct ids long enough for the table to give up.
func TestPGIntern(t *testing.T) {
	var c pgIntern
	check := func(s string) {
		t.Helper()
		buf := []byte(s)
		got := c.get(buf)
		for i := range buf {
			buf[i] = '#' // the decoder's buffer is reused
		}
		if g, ok := got.(string); !ok || g != s {
			t.Fatalf("get(%q) = %#v", s, got)
		}
	}
	long := strings.Repeat("L", pgInternMaxLen+1)
	for i := 0; i < 3*pgInternGiveUp; i++ {
		check(fmt.Sprintf("id-%d", i))
		check(fmt.Sprintf("id-%d", i))
		check([]string{"live", "backfill", "", "é"}[i%4])
		check(long + fmt.Sprint(i%3))
		check(long + fmt.Sprint(i%3))
	}
	if !c.off {
		t.Errorf("the table did not give up on distinct ids")
	}
	for _, s := range []string{"a", "a", "", "", "b", long, long, "a"} {
		check(s)
	}
}
