package models

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docTable is one `### ` section of docs/warehouse.md: its names and its
// `| column | type | meaning |` rows.
type docTable struct {
	names []string
	rows  [][3]string
	line  int
}

var (
	docHeading = regexp.MustCompile("`([a-z0-9_]+)`")
	docRow     = regexp.MustCompile("^\\|\\s*`([a-z0-9_]+)`\\s*\\|\\s*([^|]+?)\\s*\\|\\s*(.*?)\\s*\\|$")
)

// unescapeCell undoes the escaping a Markdown table cell needs: a "|" in
// a meaning is written "\|" (GitHub's tables split on a bare one, even
// inside backticks).
func unescapeCell(s string) string { return strings.ReplaceAll(s, `\|`, "|") }

// parquetSections reads the sections under "## Parquet tables" of
// docs/warehouse.md, by name (a heading names the table first, then its
// views).
func parquetSections(t *testing.T) map[string]*docTable {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "warehouse.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*docTable{}
	var cur *docTable
	inParquet := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inParquet, cur = line == "## Parquet tables", nil
		case inParquet && strings.HasPrefix(line, "### "):
			cur = &docTable{line: n}
			for _, m := range docHeading.FindAllStringSubmatch(line, -1) {
				cur.names = append(cur.names, m[1])
			}
			if len(cur.names) == 0 {
				t.Fatalf("docs/warehouse.md line %d: a heading without a name", n)
			}
			out[cur.names[0]] = cur
		case cur != nil:
			if m := docRow.FindStringSubmatch(line); m != nil {
				cur.rows = append(cur.rows, [3]string{m[1], m[2], unescapeCell(m[3])})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCatalogMatchesDataDictionary fails when docs/warehouse.md's Parquet
// tables and the catalog disagree: a table documented and not in the
// catalog or the reverse, or a column whose name, order, DuckDB type or
// meaning differs from its catalog definition.
func TestCatalogMatchesDataDictionary(t *testing.T) {
	t.Parallel()
	docs := parquetSections(t)
	if len(docs) < 10 {
		t.Fatalf("parsed only %d Parquet tables from docs/warehouse.md: the format changed?", len(docs))
	}
	for _, tbl := range Tables() {
		doc := docs[tbl.Name]
		if doc == nil {
			t.Errorf("%s is in the catalog but docs/warehouse.md has no `### `%s`` section under \"## Parquet tables\"", tbl.Name, tbl.Name)
			continue
		}
		if want := []string{tbl.Name, tbl.Name + "_history"}; !slices.Equal(doc.names, want) {
			t.Errorf("docs/warehouse.md line %d names %v, want %v", doc.line, doc.names, want)
		}
		var want [][3]string
		for _, c := range tbl.Columns {
			want = append(want, [3]string{c.Name, c.Type.DuckDB(), c.Comment})
		}
		for i := range max(len(want), len(doc.rows)) {
			var w, g [3]string
			if i < len(want) {
				w = want[i]
			}
			if i < len(doc.rows) {
				g = doc.rows[i]
			}
			if w != g {
				t.Errorf("%s column %d (docs/warehouse.md from line %d):\n docs    %q\n catalog %q", tbl.Name, i+1, doc.line, g, w)
			}
		}
	}
	for name, doc := range docs {
		if Lookup(name) == nil {
			t.Errorf("docs/warehouse.md line %d documents the Parquet table %s, which is not in the catalog", doc.line, name)
		}
	}
}

// TestCatalogIsConsistent checks what the stages rely on: one encoding per
// column name (the Parquet writer looks it up by name), a source id and a
// high water that the scan reads, caps on every stored column read and
// none on computed ones, and archives of tables with an id.
func TestCatalogIsConsistent(t *testing.T) {
	t.Parallel()
	enc := map[string]Encoding{}
	for _, tbl := range Tables() {
		if tbl.Columns[0].Name != "installation_id" || tbl.Columns[1].Name != "run_id" {
			t.Errorf("%s: installation_id and run_id must lead", tbl.Name)
		}
		if strings.TrimSpace(tbl.Comment) == "" {
			t.Errorf("%s has no comment", tbl.Name)
		}
		for _, c := range tbl.Columns {
			if e, ok := enc[c.Name]; ok && e != c.Encoding {
				t.Errorf("%s.%s: encoding %d, another table has %d for the same name", tbl.Name, c.Name, c.Encoding, e)
			}
			enc[c.Name] = c.Encoding
			if got, _ := ColumnEncoding(c.Name); got != c.Encoding {
				t.Errorf("ColumnEncoding(%s) = %d, want %d", c.Name, got, c.Encoding)
			}
		}
		if tbl.Read == nil {
			continue
		}
		if tbl.ReadCol("id") != 0 || !tbl.Read[0].Required {
			t.Errorf("%s: a scan reads the required id first (rejects name the row by cell 0)", tbl.Name)
		}
		if tbl.Col(tbl.ID) != 2 {
			t.Errorf("%s: its id column %s must be its first own column", tbl.Name, tbl.ID)
		}
		if tbl.HighWater != "" && tbl.Read[tbl.ReadCol(tbl.HighWater)].Kind != KindStamp {
			t.Errorf("%s: high water %s is not an instant", tbl.Name, tbl.HighWater)
		}
		computedSeen := false
		for _, c := range tbl.Read {
			switch {
			case c.Computed:
				computedSeen = true
				if c.MaxBytes != 0 || c.Kind != KindCount {
					t.Errorf("%s: computed %s must be an uncapped count", tbl.Name, c.Name)
				}
			case computedSeen:
				t.Errorf("%s: stored %s after a computed column", tbl.Name, c.Name)
			case c.MaxBytes <= 0:
				t.Errorf("%s: stored %s has no cap", tbl.Name, c.Name)
			}
		}
	}
	for _, a := range Archives() {
		of := MustTable(a.Archive.Of)
		if a.ID == "" || a.ID != of.ID || len(a.Columns) != len(of.Columns)+len(ArchiveColumns) {
			t.Errorf("archive %s of %s: id %q, %d columns", a.Name, of.Name, a.ID, len(a.Columns))
		}
	}
	if got := len(Scanned()); got != 6 {
		t.Errorf("%d scanned tables, want 6", got)
	}
}

// TestDataDictionaryNamesTheDocumentVersion: the provenance table of
// docs/warehouse.md names the version the extractor writes (a reader that
// checked for the documented one would refuse every file).
func TestDataDictionaryNamesTheDocumentVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "warehouse.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "`" + ProvenanceFormat + "`, document version " + strconv.Itoa(DocumentVersion) + " "
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/warehouse.md does not say %q", want)
	}
}
