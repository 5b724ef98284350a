package extract

import (
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/models"
)

func TestCutUTF8(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"},                // é cut after its first byte
		{"a\xc3", 5, "a"},             // already cut by the query inside é
		{"ab€", 4, "ab"},              // € is 3 bytes: 2 of them fit
		{"ab€", 5, "ab€"},             // exactly
		{"a\U0001F600", 4, "a"},       // 4-byte rune, 3 fit
		{"a\xff\xfe", 3, "a\xff\xfe"}, // invalid bytes stay (repaired later)
		{strings.Repeat("é", 200), 256, strings.Repeat("é", 128)},
		{"", 3, ""},
	} {
		if got := CutUTF8(tt.in, tt.max); got != tt.want {
			t.Errorf("CutUTF8(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestCapSpecRendersBoundedSQL: a capped column is read through octet_length
// and, on SQLite, a substr bounded by models.SQLitePrefixBytes, an
// over-long value coming back as a marked cell; uncapped, computed and
// missing columns are left to selectList.
func TestCapSpecRendersBoundedSQL(t *testing.T) {
	spec := models.TableSpec{Name: "x", Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", MaxBytes: 256},
		{Name: "at", Kind: models.KindStamp, MaxBytes: 64},
		{Name: "plain"},
		{Name: "gone", MaxBytes: 256},
		{Name: "n", Kind: models.KindCount, Expr: "1", MaxBytes: 9},
	}}
	have := map[string]bool{"id": true, "at": true, "plain": true}
	q, sqlitePlan, err := sqliteScanSQL("", spec, []string{"id", "at", "plain"})
	if err != nil {
		t.Fatal(err)
	}
	m := "'" + capMarker + "'"
	want := `SELECT CASE WHEN octet_length(t."id") > 256 THEN CASE WHEN octet_length(t."id") <= 1048576 THEN ` + m + ` || octet_length(t."id") || ':' || substr(CAST(t."id" AS BLOB), 1, 256) ELSE ` + m + ` || octet_length(t."id") END ELSE t."id" END, ` +
		`CASE WHEN octet_length(t."at") > 64 THEN CASE WHEN octet_length(t."at") <= 1048576 THEN ` + m + ` || octet_length(t."at") || ':' || substr(CAST(t."at" AS BLOB), 1, 64) ELSE ` + m + ` || octet_length(t."at") END ELSE CAST(t."at" AS TEXT) END, ` +
		`t."plain", NULL, 1 FROM "x" AS t`
	if q != want {
		t.Errorf("SQLite:\n got %s\nwant %s", q, want)
	}
	if p := sqlitePlan; !p.inline || p.width != 5 || len(p.cols) != 2 || p.cols[0].idx != 0 || p.cols[1].idx != 1 {
		t.Errorf("SQLite plan %+v", sqlitePlan)
	}
	if strings.ContainsAny(capMarker, "'\\") || len(capMarker) < 32 {
		t.Errorf("marker %q cannot stand in a SQL literal or is too short", capMarker)
	}
	_, lengths, plan := capSpec(spec, have, pgCap(map[string]pgColumnType{"id": {varlena: true, text: true}, "at": {}}))
	if len(plan.cols) != 1 || plan.cols[0].idx != 0 || !strings.Contains(lengths, `octet_length(t."id"::text) > 256`) || strings.Contains(lengths, `"at"`) {
		t.Errorf("PostgreSQL: plan %+v, lengths %s", plan, lengths)
	}
}

// TestCapPlanApply: the lengths column turns over-long cells into
// models.Truncated, and is dropped.
func TestCapPlanApply(t *testing.T) {
	plan := capPlan{width: 3, cols: []capCol{{idx: 0, max: 4, kind: models.KindText}, {idx: 2, max: 4, kind: models.KindInt}}}
	var got []any
	fn := plan.wrap(func(row []any) error { got = append([]any(nil), row...); return nil })
	if err := fn([]any{"abcdé", "x", nil, "0:9,2:2000000,"}); err != nil {
		t.Fatal(err)
	}
	want := []any{
		models.Truncated{Prefix: "abcd", HasPrefix: true, Bytes: 9, Cap: 4, Kind: models.KindText},
		"x",
		models.Truncated{Bytes: 2000000, Cap: 4, Kind: models.KindInt},
	}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("row = %#v, want %#v", got, want)
	}
	if err := fn([]any{"ab", "x", "1", nil}); err != nil || got[0] != "ab" || got[2] != "1" {
		t.Errorf("row within caps = %#v, %v", got, err)
	}
	for _, bad := range []any{"7:1,", "x", "0:y,", int64(3)} {
		if err := fn([]any{"ab", "x", "1", bad}); err == nil {
			t.Errorf("lengths %v: no error", bad)
		}
	}
}

// TestCapPlanInline: a marked cell becomes a models.Truncated, with its
// prefix cut to the cap on a UTF-8 boundary when it was read; any other
// value, a marker-like string included, is left as it is.
func TestCapPlanInline(t *testing.T) {
	plan := capPlan{width: 3, inline: true, cols: []capCol{{idx: 0, max: 4, kind: models.KindText}, {idx: 2, max: 4, kind: models.KindInt}}}
	var got []any
	fn := plan.wrap(func(row []any) error { got = append([]any(nil), row...); return nil })
	if err := fn([]any{capMarker + "9:abcé", capMarker + "9", capMarker + "2000000"}); err != nil {
		t.Fatal(err)
	}
	want := []any{
		models.Truncated{Prefix: "abc", HasPrefix: true, Bytes: 9, Cap: 4, Kind: models.KindText},
		capMarker + "9", // column 1 is not capped: a value like any other
		models.Truncated{Bytes: 2000000, Cap: 4, Kind: models.KindInt},
	}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("row = %#v, want %#v", got, want)
	}
	if err := fn([]any{"kx!cap:0123", []byte(capMarker + "9"), int64(7)}); err != nil || got[0] != "kx!cap:0123" || got[2] != int64(7) {
		t.Errorf("row within caps = %#v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "4:abcd", "-9", "9x:ab"} {
		if err := fn([]any{capMarker + bad, nil, nil}); err == nil {
			t.Errorf("marked cell %q: no error", bad)
		}
	}
	if err := fn([]any{"a", "b"}); err == nil {
		t.Error("a short row: no error")
	}
}
