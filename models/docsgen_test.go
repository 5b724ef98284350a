package models

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/warehouse.md's Parquet column tables and reason codes from the catalog")

// TestDataDictionaryIsGenerated: the column tables of docs/warehouse.md's
// Parquet tables and its reason-code tables are what the catalog
// generates; `go test ./models -run TestDataDictionaryIsGenerated
// -update-docs` rewrites them after a catalog change (the prose around
// them is hand-written).
func TestDataDictionaryIsGenerated(t *testing.T) {
	path := filepath.Join("..", "docs", "warehouse.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	want := generateDictionary(got)
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/warehouse.md's generated tables differ from the catalog: run `go test ./models -run TestDataDictionaryIsGenerated -update-docs`")
}

// generateDictionary replaces, in doc, the rows of every `| column | type
// | meaning |` table under a "## Parquet tables" section heading with the
// catalog's columns, and the rows of the two `| code | meaning |` tables
// of "## Reason codes" with the reason lists.
func generateDictionary(doc string) string {
	lines := strings.Split(doc, "\n")
	var out []string
	part, table, reasonTables := "", "", 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		out = append(out, l)
		switch {
		case strings.HasPrefix(l, "## "):
			part, table, reasonTables = l, "", 0
		case strings.HasPrefix(l, "### "):
			table = ""
			if m := docHeading.FindStringSubmatch(l); m != nil {
				table = m[1]
			}
		case part == "## Parquet tables" && l == "| column | type | meaning |" && Lookup(table) != nil:
			out = append(out, lines[i+1])
			for _, c := range Lookup(table).Columns {
				out = append(out, "| `"+c.Name+"` | "+c.Type.DuckDB()+" | "+escapeCell(c.Comment)+" |")
			}
			i = skipRows(lines, i+2)
		case part == "## Reason codes" && l == "| code | meaning |":
			list := CompletenessReasonList
			if reasonTables == 1 {
				list = ExecutionReasonList
			}
			reasonTables++
			out = append(out, lines[i+1])
			for _, r := range list {
				out = append(out, "| `"+string(r.Code)+"` | "+escapeCell(r.Meaning)+" |")
			}
			i = skipRows(lines, i+2)
		}
	}
	return strings.Join(out, "\n")
}

// skipRows returns the index of the last table row from i on.
func skipRows(lines []string, i int) int {
	for i < len(lines) && strings.HasPrefix(lines[i], "|") {
		i++
	}
	return i - 1
}

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
