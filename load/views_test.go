package load

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every string literal in the views' SQL (outside their COMMENT ON texts)
// is a constant of package models: an enum renamed in Go cannot leave a
// view comparing against the old spelling.
func TestViewLiteralsAreModelsConstants(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	entries, err := os.ReadDir(filepath.Join("..", "models"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join("..", "models", e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		{
			ast.Inspect(f, func(n ast.Node) bool {
				if vs, ok := n.(*ast.ValueSpec); ok {
					for _, v := range vs.Values {
						if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								known[s] = true
							}
						}
					}
				}
				return true
			})
		}
	}
	if !known["complete"] || !known["lower_bound"] {
		t.Fatalf("models constants not found (%d)", len(known))
	}
	views, err := analyticViews()
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`'((?:[^']|'')*)'`)
	lineComment := regexp.MustCompile(`(?m)--.*$`)
	// DuckDB's own vocabulary (date parts), not enums.
	sqlWords := map[string]bool{"UTC": true, "microsecond": true, "millisecond": true, "second": true, "minute": true, "hour": true,
		"day": true, "week": true, "month": true, "quarter": true, "year": true}
	for _, v := range views {
		var code []string
		for _, stmt := range strings.Split(lineComment.ReplaceAllString(v.sql, ""), ";\n") {
			if s := strings.TrimSpace(stmt); s != "" && !strings.HasPrefix(s, "COMMENT ON") {
				code = append(code, s)
			}
		}
		for _, m := range literal.FindAllStringSubmatch(strings.Join(code, "\n"), -1) {
			if !known[m[1]] && !sqlWords[m[1]] {
				t.Errorf("view %s compares with %q, which is not a models constant", v.name, m[1])
			}
		}
	}
}
