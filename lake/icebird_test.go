package lake_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/lake"
)

// icebirdTable is what testdata/readers/iceberg.mjs prints for a table.
type icebirdTable struct {
	Name    string  `json:"name"`
	Comment *string `json:"comment"`
	Fields  []struct {
		ID   int             `json:"id"`
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
		Doc  *string         `json:"doc"`
	} `json:"fields"`
	Rows []map[string]any `json:"rows"`
}

// readWithIcebird reads every table of the catalog with icebird (pure
// JavaScript, testdata/readers) from its iceberg_tables row's
// metadata_location, over the in-process S3 server, and compares each
// with the hub's DuckDB (attached as w): T_history with the table, T and
// every results table with the view of that name, as multisets of rows,
// every column; a results table's comment and docs with the view's.
func readWithIcebird(t *testing.T, c *pgtest.Cluster, dbName, bucketURL string, duck *sql.DB, results int) {
	t.Helper()
	ctx := context.Background()
	node, err := exec.LookPath("node")
	if err != nil {
		requireTool(t, "node", "apt-get install nodejs")
		return
	}
	dir := filepath.Join(repoRoot(t), "testdata", "readers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "icebird", "package.json")); err != nil {
		requireTool(t, "the icebird npm package", "run 'npm ci' in testdata/readers")
		return
	}
	conn, err := c.Connect(ctx, dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, metadata_location FROM iceberg_tables WHERE catalog_name = 'kandev' AND table_namespace = 'kandev' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name     string `json:"name"`
		Metadata string `json:"metadata_location"`
	}
	var list []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.Name, &e.Metadata); err != nil {
			t.Fatal(err)
		}
		list = append(list, e)
	}
	rows.Close()
	in, _ := json.Marshal(list)
	u, err := url.Parse(bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	endpoint := u.Query().Get("endpoint")
	// icebird as published cannot inflate the Avro files iceberg-go writes
	// (testdata/readers/avro-inflate.mjs says why); when it can, the fix
	// in iceberg.mjs can go.
	one, _ := json.Marshal(list[:1])
	cmd := exec.CommandContext(ctx, node, "iceberg.mjs", endpoint, "--as-published")
	cmd.Dir, cmd.Stdin = dir, bytes.NewReader(one)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "RangeError: offset is out of bounds") || !strings.Contains(string(out), "hyparquet-compressors/src/gzip.js") {
		t.Errorf("icebird as published on %s: %v, want its gunzip's RangeError on Go's deflate (is it fixed? then drop avro-inflate.mjs):\n%s", list[0].Name, err, out)
	}
	start := time.Now()
	cmd = exec.CommandContext(ctx, node, "iceberg.mjs", endpoint)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node iceberg.mjs: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	var got []icebirdTable
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(list) {
		t.Fatalf("icebird read %d tables, the catalog has %d", len(got), len(list))
	}
	var nrows, withDocs int
	seenResults := 0
	for _, it := range got {
		isResult := !lake.IsTable(strings.TrimSuffix(it.Name, "_history"))
		if isResult {
			seenResults++
			checkDocs(t, duck, it)
			withDocs++
		}
		var cols []string
		for _, f := range it.Fields {
			cols = append(cols, `"`+f.Name+`"`)
		}
		drows, err := duck.QueryContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM w.`+it.Name)
		if err != nil {
			t.Fatalf("%s: %v", it.Name, err)
		}
		var fromDuck []string
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for drows.Next() {
			if err := drows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, f := range it.Fields {
				b.WriteString(canon(t, it.Name+"."+f.Name, f.Type, vals[i]))
				b.WriteByte('\x1f')
			}
			fromDuck = append(fromDuck, b.String())
		}
		drows.Close()
		var fromIcebird []string
		for _, r := range it.Rows {
			var b strings.Builder
			for _, f := range it.Fields {
				b.WriteString(canon(t, it.Name+"."+f.Name, f.Type, r[f.Name]))
				b.WriteByte('\x1f')
			}
			fromIcebird = append(fromIcebird, b.String())
		}
		slices.Sort(fromDuck)
		slices.Sort(fromIcebird)
		if !slices.Equal(fromDuck, fromIcebird) {
			i := 0
			for i < min(len(fromDuck), len(fromIcebird)) && fromDuck[i] == fromIcebird[i] {
				i++
			}
			first := func(s []string) string {
				if i < len(s) {
					return strings.ReplaceAll(s[i], "\x1f", " | ")
				}
				return "(none)"
			}
			t.Errorf("%s: icebird read %d rows, the hub's DuckDB has %d; first difference:\n  icebird: %s\n  duckdb:  %s",
				it.Name, len(fromIcebird), len(fromDuck), first(fromIcebird), first(fromDuck))
		}
		nrows += len(fromIcebird)
	}
	if seenResults != results {
		t.Errorf("icebird read %d results tables, want %d", seenResults, results)
	}
	t.Logf("icebird read %d tables (%d rows) in %s, equal to the hub's DuckDB; %d results tables with their comments and docs",
		len(got), nrows, time.Since(start).Round(time.Millisecond), withDocs)
}

// checkDocs: a results table's comment is its view's own comment, and
// each field's doc its column's comment.
func checkDocs(t *testing.T, duck *sql.DB, it icebirdTable) {
	t.Helper()
	var c string
	if err := duck.QueryRow(`SELECT coalesce(comment, '') FROM duckdb_views() WHERE database_name = 'w' AND view_name = ?`, it.Name).Scan(&c); err != nil {
		t.Fatalf("%s: %v", it.Name, err)
	}
	own, _, _ := strings.Cut(c, "Disclosures for the current data:")
	if it.Comment == nil || *it.Comment == "" || strings.TrimSpace(*it.Comment) != strings.TrimSpace(own) {
		t.Errorf("%s: table comment %v, the view's %q", it.Name, it.Comment, own)
	}
	documented := 0
	for _, f := range it.Fields {
		var want string
		if err := duck.QueryRow(`SELECT coalesce(comment, '') FROM duckdb_columns() WHERE database_name = 'w' AND table_name = ? AND column_name = ?`, it.Name, f.Name).Scan(&want); err != nil {
			t.Fatalf("%s.%s: %v", it.Name, f.Name, err)
		}
		got := ""
		if f.Doc != nil {
			got = *f.Doc
		}
		if got != want {
			t.Errorf("%s.%s: doc %q, the column comment %q", it.Name, f.Name, got, want)
		}
		if got != "" {
			documented++
		}
	}
	if documented == 0 {
		t.Errorf("%s: no field has a doc", it.Name)
	}
}

// canon renders a value of an Iceberg type the same way whether it came
// from icebird's JSON (64-bit integers as strings, instants as ISO
// strings at millisecond precision) or from DuckDB (Go values): instants
// are compared at milliseconds, icebird's precision.
func canon(t *testing.T, col string, typ json.RawMessage, v any) string {
	if v == nil {
		return "∅"
	}
	var name string
	if err := json.Unmarshal(typ, &name); err != nil {
		var nested struct {
			Type    string          `json:"type"`
			Element json.RawMessage `json:"element"`
			Key     json.RawMessage `json:"key"`
			Value   json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(typ, &nested); err != nil || (nested.Type != "list" && nested.Type != "map") {
			t.Fatalf("%s: type %s not compared here", col, typ)
		}
		if nested.Type == "map" {
			var parts []string
			add := func(k, v any) {
				parts = append(parts, canon(t, col, nested.Key, k)+":"+canon(t, col, nested.Value, v))
			}
			switch m := v.(type) {
			case map[string]any: // icebird: an object
				for k, x := range m {
					add(k, x)
				}
			case duckdb.OrderedMap:
				ks, vs := m.Keys(), m.Values()
				for i := range ks {
					add(ks[i], vs[i])
				}
			default:
				t.Fatalf("%s: map value %T", col, v)
			}
			slices.Sort(parts)
			return "{" + strings.Join(parts, ",") + "}"
		}
		items, ok := v.([]any)
		if !ok {
			t.Fatalf("%s: list value %T", col, v)
		}
		parts := make([]string, len(items))
		for i, x := range items {
			parts[i] = canon(t, col, nested.Element, x)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	num := func() string {
		switch x := v.(type) {
		case json.Number:
			return x.String()
		case string:
			return x
		case *big.Int:
			return x.String()
		default:
			return fmt.Sprint(x)
		}
	}
	switch name {
	case "long", "int":
		return num()
	case "double", "float":
		f, err := strconv.ParseFloat(num(), 64)
		if err != nil {
			t.Fatalf("%s: %v", col, err)
		}
		return strconv.FormatFloat(f, 'g', 12, 64)
	case "string":
		s, ok := v.(string)
		if !ok {
			t.Fatalf("%s: string value %T", col, v)
		}
		return strconv.Quote(s)
	case "boolean":
		return fmt.Sprint(v)
	case "timestamptz", "timestamp", "date":
		var tm time.Time
		switch x := v.(type) {
		case time.Time:
			tm = x
		case string:
			var err error
			if tm, err = time.Parse(time.RFC3339Nano, x); err != nil {
				t.Fatalf("%s: %v", col, err)
			}
		default:
			t.Fatalf("%s: instant value %T", col, v)
		}
		if name == "date" {
			return tm.UTC().Format(time.DateOnly)
		}
		return tm.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	}
	t.Fatalf("%s: type %s not compared here", col, name)
	return ""
}

// requireTool fails under CI=true for want of a tool; elsewhere it says
// what was not checked (the rest of the test stands).
func requireTool(t *testing.T, what, install string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (%s): required under CI=true", what, install)
	}
	t.Logf("NOT CHECKED: the icebird read: %s not found (%s)", what, install)
}

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Dir(filepath.Dir(file))
}
