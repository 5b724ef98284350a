package membound

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/models"
)

// capsTable is the table both dialects' cap tests read; each row's label
// exercises one case.
var capsRows = []struct {
	id, label string // SQL expressions
}{
	{"'a'", "'short'"},
	{"'b'", "%[1]s('x', 300)"},
	{"'c'", "%[1]s('a', 255) || 'é' || 'b'"},
	{"'d'", "%[1]s('y', 2000000)"},
	{"'e'", "NULL"},
	{"'f'", "%[1]s('é', 200)"},
}

func capsSpec() models.TableSpec {
	return models.TableSpec{Name: "kx_caps", Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", Required: true, MaxBytes: models.MaxLabelBytes},
		{Name: "label", MaxBytes: models.MaxLabelBytes},
		{Name: "stamp", Kind: models.KindStamp, MaxBytes: models.MaxScalarBytes},
		{Name: "n", Kind: models.KindInt, MaxBytes: models.MaxScalarBytes},
		{Name: "missing", MaxBytes: models.MaxLabelBytes},
		{Name: "computed", Kind: models.KindCount, Expr: "CAST(1 AS BIGINT)"},
	}}
}

// render shows a cell: a Truncated as T(bytes,prefix bytes|none), a long
// string by its length.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case models.Truncated:
		p := "none"
		if x.HasPrefix {
			p = fmt.Sprintf("%d:%.3s", len(x.Prefix), x.Prefix)
		}
		return fmt.Sprintf("T(%d,%s,cap %d,kind %d)", x.Bytes, p, x.Cap, x.Kind)
	case string:
		if len(x) > 16 {
			return fmt.Sprintf("%d:%.3s", len(x), x)
		}
		return x
	}
	return fmt.Sprintf("%T %v", v, v)
}

func scanCaps(t *testing.T, source string) ([]string, []models.MetaEntry) {
	t.Helper()
	ctx := context.Background()
	src, err := extract.Open(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var got []string
	err = snap.Scan(ctx, capsSpec(), func(row []any) error {
		if len(row) != len(capsSpec().Columns) {
			return fmt.Errorf("row of %d cells", len(row))
		}
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = render(v)
		}
		got = append(got, strings.Join(cells, "|"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	meta, err := snap.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(meta, func(i, j int) bool { return meta[i].Key < meta[j].Key })
	return got, meta
}

// wantScan is what both dialects hand over; hugeLabel differs (SQLite
// reads no prefix of a value over models.SQLitePrefixBytes).
func wantScan(hugeLabel, stampB, intB string) []string {
	return []string{
		"a|short|NULL|NULL|NULL|" + one,
		"b|T(300,256:xxx,cap 256,kind 0)|" + stampB + "|" + intB + "|NULL|" + one,
		"c|T(258,255:aaa,cap 256,kind 0)|NULL|NULL|NULL|" + one,
		"d|" + hugeLabel + "|NULL|NULL|NULL|" + one,
		"e|NULL|NULL|NULL|NULL|" + one,
		"f|T(400,256:ééé,cap 256,kind 0)|NULL|NULL|NULL|" + one,
	}
}

const one = "int64 1"

func wantMeta() []models.MetaEntry {
	return []models.MetaEntry{
		{Key: models.KeyBackfillThrough, Value: "", Bytes: 0, HasPrefix: true, Rows: 1},
		{Key: models.KeyKandevVersion, Value: strings.Repeat("v", 256), Bytes: 2_000_000, HasPrefix: true, Rows: 1},
		{Key: models.KeyCaptureSince, Value: "2026-08-03T15:00:00Z", Bytes: 20, HasPrefix: true, Rows: 2},
		{Key: models.KeySchemaInitializedAt, Value: "x", Bytes: 1, HasPrefix: true, Rows: 1},
	}
}

func checkMeta(t *testing.T, got []models.MetaEntry) {
	t.Helper()
	want := wantMeta()
	sort.Slice(want, func(i, j int) bool { return want[i].Key < want[j].Key })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Meta:\n got %.300v\nwant %.300v", got, want)
	}
	if n := models.MetaRowsRead(got); n != 5 {
		t.Errorf("rows read %d, want 5 (the junk row is never read)", n)
	}
}

// TestCappedReadsSQLite: SQLite hands over each capped value whole when it
// fits, else its prefix cut at a character boundary (none over
// models.SQLitePrefixBytes) with its length; Meta reads only the keys used.
func TestCappedReadsSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caps.db")
	stmts := []string{
		`CREATE TABLE kx_caps (id TEXT, label TEXT, stamp TIMESTAMP, n INTEGER)`,
		`CREATE TABLE kandev_meta (key TEXT, value TEXT)`,
		`INSERT INTO kandev_meta VALUES ('subagent_context_capture_since', '2026-08-03T15:00:00Z'),
			('subagent_context_capture_since', 'second copy'), ('subagent_context_backfill_through', NULL),
			('kandev_version', printf('%.*c', 2000000, 'v')), ('schema_initialized_at', 'x'), ('junk', 'y')`,
	}
	for _, r := range capsRows {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO kx_caps (id, label) VALUES (%s, %s)", r.id, strings.ReplaceAll(r.label, "%[1]s(", "kx_rep(")))
	}
	stmts = append(stmts,
		`UPDATE kx_caps SET stamp = '2026-08-20 12:00:00+00:00' || printf('%.*c', 100, ' '), n = printf('%.*c', 100, 'n') WHERE id = 'b'`)
	for i := range stmts {
		stmts[i] = sqliteRepeat(stmts[i])
	}
	sqliteExec(t, path, stmts...)
	got, meta := scanCaps(t, path)
	want := wantScan("T(2000000,none,cap 256,kind 0)", "T(125,64:202,cap 64,kind 2)", "T(100,64:nnn,cap 64,kind 1)")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("scan:\n got %q\nwant %q", got, want)
	}
	checkMeta(t, meta)
}

// sqliteRepeat turns kx_rep(s, n) into SQLite's replace-of-zeroblob idiom.
func sqliteRepeat(s string) string {
	for {
		i := strings.Index(s, "kx_rep(")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], ")") + i
		args := strings.SplitN(s[i+len("kx_rep("):j], ",", 2)
		s = s[:i] + fmt.Sprintf("replace(hex(zeroblob(%s)), '00', %s)", strings.TrimSpace(args[1]), args[0]) + s[j+1:]
	}
}

// TestCappedReadsPostgres: the same on PostgreSQL, where left() always
// yields a prefix and fixed-width types (timestamp, bigint) are not capped.
func TestCappedReadsPostgres(t *testing.T) {
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, ""))
	stmts := []string{
		`CREATE TABLE kx_caps (id text, label text, stamp text, n text)`,
		`CREATE TABLE kandev_meta (key text, value text)`,
		`INSERT INTO kandev_meta VALUES ('subagent_context_capture_since', '2026-08-03T15:00:00Z'),
			('subagent_context_capture_since', 'second copy'), ('subagent_context_backfill_through', NULL),
			('kandev_version', repeat('v', 2000000)), ('schema_initialized_at', 'x'), ('junk', 'y')`,
	}
	for _, r := range capsRows {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO kx_caps (id, label) VALUES (%s, %s)", r.id, strings.ReplaceAll(r.label, "%[1]s", "repeat")))
	}
	stmts = append(stmts, `UPDATE kx_caps SET stamp = '2026-08-20 12:00:00+00:00' || repeat(' ', 100), n = repeat('n', 100) WHERE id = 'b'`)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	got, meta := scanCaps(t, dsn)
	want := wantScan("T(2000000,256:yyy,cap 256,kind 0)", "T(125,64:202,cap 64,kind 2)", "T(100,64:nnn,cap 64,kind 1)")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("scan:\n got %q\nwant %q", got, want)
	}
	checkMeta(t, meta)

	// Fixed-width types are never capped: they arrive as the driver reads
	// them.
	for _, s := range []string{`ALTER TABLE kx_caps DROP COLUMN stamp, DROP COLUMN n`,
		`ALTER TABLE kx_caps ADD COLUMN stamp timestamp DEFAULT '2026-08-20 12:00:00', ADD COLUMN n bigint DEFAULT 5`} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	got, _ = scanCaps(t, dsn)
	if len(got) != 6 || !strings.HasSuffix(got[0], "|time.Time 2026-08-20 12:00:00 +0000 UTC|int64 5|NULL|"+one) {
		t.Errorf("fixed-width columns: %q", got)
	}
}
