package e2e_test

// Tests that keep docs/warehouse.md true, and that the Parquet files are
// readable, with the right values, by a reader this project did not write,
// on the shared warehouse the pipeline builds from the real Kandev
// fixtures (main_test.go).

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/load"
)

// ---- the data dictionary -----------------------------------------------------

type docColumn struct{ name, typ, meaning string }

type docObject struct {
	names      []string
	disclosure string
	columns    []docColumn
	line       int
}

var (
	headingName = regexp.MustCompile("`([a-z0-9_]+)`")
	columnRow   = regexp.MustCompile("^\\|\\s*`([a-z0-9_]+)`\\s*\\|\\s*([^|]+?)\\s*\\|\\s*(.*?)\\s*\\|$")
)

// parseDictionary reads docs/warehouse.md in the format its header states:
// one `### ` heading per object (several backticked names when they share
// columns), a `Disclosure:` line, and a `| column | type | meaning |` table.
func parseDictionary(t *testing.T, path string) (map[string]*docObject, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objects := map[string]*docObject{}
	var cur *docObject
	var examples []string
	var inSQL bool
	var block strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case inSQL && strings.HasPrefix(line, "```"):
			examples = append(examples, block.String())
			block.Reset()
			inSQL = false
		case inSQL:
			block.WriteString(line + "\n")
		case strings.HasPrefix(line, "```sql"):
			inSQL = true
		case strings.HasPrefix(line, "### "):
			cur = &docObject{line: n}
			for _, m := range headingName.FindAllStringSubmatch(line, -1) {
				cur.names = append(cur.names, m[1])
			}
			if len(cur.names) == 0 {
				t.Errorf("docs line %d: heading %q names no object in backticks", n, line)
			}
			for _, name := range cur.names {
				if objects[name] != nil {
					t.Errorf("docs line %d: %s documented twice (first at line %d)", n, name, objects[name].line)
				}
				objects[name] = cur
			}
		case strings.HasPrefix(line, "## "):
			cur = nil
		case cur != nil && strings.HasPrefix(line, "Disclosure:"):
			cur.disclosure = strings.TrimSpace(strings.TrimPrefix(line, "Disclosure:"))
		case cur != nil && strings.HasPrefix(line, "|"):
			if m := columnRow.FindStringSubmatch(line); m != nil {
				cur.columns = append(cur.columns, docColumn{m[1], m[2], strings.ReplaceAll(m[3], `\|`, "|")})
			} else if !strings.HasPrefix(line, "| column | type | meaning |") && !strings.HasPrefix(line, "|---") {
				t.Errorf("docs line %d: not a `| `column` | type | meaning |` row: %q", n, line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inSQL {
		t.Error("docs: unterminated ```sql block")
	}
	return objects, examples
}

type dbColumn struct{ name, typ string }

// TestDataDictionary fails when an object or column of the warehouse is not
// documented in docs/warehouse.md, when the docs document one that does not
// exist, when a type differs, when a section lacks its disclosure rule or a
// column its meaning, or when an example query no longer runs.
func TestDataDictionary(t *testing.T) {
	wh := sharedWarehouse(t)
	db := duck(t, wh)
	docPath := filepath.Join(repoRoot(t), "docs", "warehouse.md")
	docs, examples := parseDictionary(t, docPath)
	if len(docs) < 20 {
		t.Fatalf("parsed only %d objects from %s: the format changed?", len(docs), docPath)
	}

	// What exists: every user table and view of warehouse.duckdb...
	actual := map[string][]dbColumn{}
	rows, err := db.Query(`SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c
		WHERE c.database_name = current_database() AND c.schema_name = 'main' AND NOT c.internal
		ORDER BY c.table_name, c.column_index`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col, typ string
		if err := rows.Scan(&tbl, &col, &typ); err != nil {
			t.Fatal(err)
		}
		actual[tbl] = append(actual[tbl], dbColumn{col, typ})
	}
	rows.Close()
	// ...and every Parquet table, read from its files (by DuckDB's Parquet
	// reader, independently of the views).
	parquetTables := 0
	dirs, _ := filepath.Glob(filepath.Join(wh, "*", "installation_id=*"))
	seen := map[string]bool{}
	for _, d := range dirs {
		table := filepath.Base(filepath.Dir(d))
		if seen[table] {
			continue
		}
		seen[table] = true
		parquetTables++
		files, _ := filepath.Glob(filepath.Join(wh, table, "*", "*", "*.parquet"))
		ordered := describeOrdered(t, db, files)
		if prev, ok := actual[table]; ok && !slices.Equal(prev, ordered) {
			t.Errorf("parquet table %s and the view %s differ in columns:\n parquet %v\n view    %v", table, table, ordered, prev)
		}
		actual[table] = ordered
	}
	if parquetTables < 10 {
		t.Errorf("only %d Parquet tables found in %s", parquetTables, wh)
	}

	for name, cols := range actual {
		doc := docs[name]
		if doc == nil {
			t.Errorf("%s exists in the warehouse but docs/warehouse.md has no `### `%s`` section", name, name)
			continue
		}
		var got []dbColumn
		for _, c := range doc.columns {
			got = append(got, dbColumn{c.name, c.typ})
		}
		if !slices.Equal(got, cols) {
			t.Errorf("%s: documented columns differ from the warehouse (docs line %d)\n%s", name, doc.line, diffColumns(got, cols))
		}
	}
	for name, doc := range docs {
		if actual[name] == nil {
			t.Errorf("docs/warehouse.md line %d documents %s, which does not exist in the warehouse", doc.line, name)
		}
		if doc.disclosure == "" {
			t.Errorf("docs/warehouse.md line %d: %s has no `Disclosure:` line", doc.line, name)
		}
		for _, c := range doc.columns {
			if c.meaning == "" || strings.Contains(c.meaning, "TODO") {
				t.Errorf("docs/warehouse.md: %s.%s has no meaning", name, c.name)
			}
		}
	}

	// Every view carries a COMMENT ON text (what BI tools show).
	for _, r := range rowsOf(t, db, `SELECT view_name FROM duckdb_views() WHERE database_name = current_database() AND NOT internal AND (comment IS NULL OR comment = '')`) {
		t.Errorf("view %s has no COMMENT ON text", r)
	}

	// A base view's comment says it holds the latest served run of each
	// installation and its _history table's that it holds every retained
	// one, and neither says the other's scope.
	scoped := rowsOf(t, db, `SELECT v.view_name || '|' || v.comment || '|' || h.comment FROM duckdb_views() v
			JOIN duckdb_tables() h ON h.table_name = v.view_name || '_history' AND h.database_name = v.database_name
			WHERE v.database_name = current_database() ORDER BY 1`)
	if len(scoped) < 10 {
		t.Errorf("only %d base views with a _history table", len(scoped))
	}
	for _, r := range scoped {
		f := strings.SplitN(r, "|", 3)
		if !strings.HasSuffix(f[1], " The latest served run of each installation.") || strings.Contains(f[1], "retained") {
			t.Errorf("view %s's comment does not say it is the latest served run of each installation: %q", f[0], f[1])
		}
		if !strings.HasSuffix(f[2], " Every retained served run.") || strings.Contains(f[2], "latest") {
			t.Errorf("table %s_history's comment does not say it holds every retained served run: %q", f[0], f[2])
		}
	}

	// Every analytic view's comment ends with the current disclosures, each
	// as "[installation] rule: text" (what a BI tool shows beside the view),
	// and the docs say so.
	disclosures := rowsOf(t, db, `SELECT '[' || installation_id || '] ' || rule || ': ' || text FROM disclosures ORDER BY installation_id, rule`)
	if len(disclosures) == 0 {
		t.Fatal("the shared warehouse has no disclosures to check the comments with")
	}
	analytic, err := load.AnalyticViews()
	var views []string
	for _, v := range analytic {
		views = append(views, v.Name)
	}
	if err != nil || len(views) < 20 {
		t.Fatalf("analytic views %v: %v", views, err)
	}
	for _, v := range views {
		var comment string
		if err := db.QueryRow(`SELECT comment FROM duckdb_views() WHERE database_name = current_database() AND view_name = ?`, v).Scan(&comment); err != nil {
			t.Fatalf("comment of %s: %v", v, err)
		}
		own, tail, found := strings.Cut(comment, load.DisclosuresLead)
		if !found || own == "" || tail != strings.Join(disclosures, " ") {
			t.Errorf("view %s's comment does not end with the current disclosures: %q", v, comment)
		}
	}
	if b, _ := os.ReadFile(docPath); !strings.Contains(strings.Join(strings.Fields(string(b)), " "), "Every analytic view (each DuckDB view documented below that is not a base view, `runs`, `current_runs` or `disclosures`) has a comment that ends with the current disclosures") {
		t.Error("docs/warehouse.md no longer says which views' comments carry the current disclosures")
	}

	// The example queries run as written, from the warehouse directory (the
	// Parquet example uses paths relative to it), and return rows.
	if len(examples) < 5 {
		t.Errorf("only %d example queries in the docs", len(examples))
	}
	t.Chdir(wh)
	for i, q := range examples {
		if got := rowsOf(t, db, q); len(got) == 0 {
			t.Errorf("example query %d returned no rows on the fixture warehouse:\n%s", i+1, q)
		}
	}
}

// describeOrdered returns the Parquet files' columns in file order.
func describeOrdered(t *testing.T, db *sql.DB, files []string) []dbColumn {
	t.Helper()
	rows, err := db.Query(`DESCRIBE SELECT * FROM read_parquet(` + sqlList(files) + `, union_by_name = true, hive_partitioning = false)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []dbColumn
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, dbColumn{fmt.Sprint(vals[0]), fmt.Sprint(vals[1])})
	}
	return out
}

func diffColumns(doc, actual []dbColumn) string {
	var b strings.Builder
	d := map[string]string{}
	for _, c := range doc {
		d[c.name] = c.typ
	}
	a := map[string]string{}
	for _, c := range actual {
		a[c.name] = c.typ
		switch typ, ok := d[c.name]; {
		case !ok:
			fmt.Fprintf(&b, "  undocumented column %s %s\n", c.name, c.typ)
		case typ != c.typ:
			fmt.Fprintf(&b, "  column %s: documented %s, is %s\n", c.name, typ, c.typ)
		}
	}
	for _, c := range doc {
		if _, ok := a[c.name]; !ok {
			fmt.Fprintf(&b, "  documented column %s does not exist\n", c.name)
		}
	}
	if b.Len() == 0 {
		b.WriteString("  same columns, different order\n")
	}
	return b.String()
}

// TestDataDictionaryParserCatchesDrift checks the parser on a page with a
// missing disclosure, a bad row and a duplicate: the dictionary test would
// otherwise pass vacuously on a format it no longer understands.
func TestDataDictionaryParserCatchesDrift(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "w.md")
	os.WriteFile(p, []byte("# x\n\n### `a` `a_history`\nDisclosure: rule\n\n| column | type | meaning |\n|---|---|---|\n| `x` | BIGINT | the x |\n| `y` | VARCHAR |  |\n\n## Examples\n\n```sql\nSELECT 1\n```\n"), 0o644)
	docs, examples := parseDictionary(t, p)
	if len(docs) != 2 || docs["a"] != docs["a_history"] || docs["a"].disclosure != "rule" {
		t.Fatalf("parsed %v", docs)
	}
	if got := fmt.Sprint(docs["a"].columns); got != "[{x BIGINT the x} {y VARCHAR }]" {
		t.Errorf("columns = %s", got)
	}
	if len(examples) != 1 || strings.TrimSpace(examples[0]) != "SELECT 1" {
		t.Errorf("examples = %q", examples)
	}
	if d := diffColumns([]dbColumn{{"x", "BIGINT"}, {"z", "BIGINT"}}, []dbColumn{{"x", "INTEGER"}, {"y", "VARCHAR"}}); !strings.Contains(d, "undocumented column y") ||
		!strings.Contains(d, "column x: documented BIGINT, is INTEGER") || !strings.Contains(d, "documented column z does not exist") {
		t.Errorf("diff = %s", d)
	}
}

func sqlList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quote(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ---- an independent Parquet reader ---------------------------------------------

// requireTool skips when a tool the test needs is missing, except under
// CI=true, where it fails: CI installs it (.ci/run).
func requireTool(t *testing.T, what, hint string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing under CI=true: %s", what, hint)
	}
	t.Skipf("%s is missing (%s); skipped locally, fails under CI=true", what, hint)
}

type jsReading struct {
	NumRows   int `json:"num_rows"`
	RowGroups []struct {
		NumRows int `json:"num_rows"`
	} `json:"row_groups"`
	Schema []struct {
		Name          string          `json:"name"`
		PhysicalType  string          `json:"physical_type"`
		LogicalType   json.RawMessage `json:"logical_type"`
		ConvertedType *string         `json:"converted_type"`
	} `json:"schema"`
	KVKeys []string         `json:"kv_keys"`
	Rows   []map[string]any `json:"rows"`
}

// readWithHyparquet runs testdata/readers/read.mjs (hyparquet, pure
// JavaScript) on one Parquet file.
func readWithHyparquet(t *testing.T, file string) jsReading {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		requireTool(t, "node", "apt-get install nodejs")
	}
	dir := filepath.Join(repoRoot(t), "testdata", "readers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "hyparquet", "package.json")); err != nil {
		requireTool(t, "the hyparquet npm package", "run 'npm ci' in testdata/readers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "read.mjs", file)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node read.mjs %s: %v\n%s", file, err, stderr.String())
	}
	var r jsReading
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("hyparquet output: %v", err)
	}
	return r
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// TestParquetReadByHyparquet reads every Parquet table of one run with
// hyparquet and checks its values against the source store, queried
// directly with SQLite (not through the extractor).
func TestParquetReadByHyparquet(t *testing.T) {
	t.Parallel()
	wh := sharedWarehouse(t)
	srcPath := fixture(t, "upgraded-backfill.db")
	src := sourceDB(t, srcPath)
	run := shared.runs[0]
	file := func(table string) string {
		return filepath.Join(wh, table, "installation_id=up", "run_id="+run, "part-0.parquet")
	}

	// Every table: names lowercase snake_case, no unsigned, INT96 or
	// non-MICROS timestamps, the provenance key present, row groups adding up.
	want := map[string]string{
		"fact_subagent_context":   `SELECT count(*) FROM task_session_subagents`,
		"dim_session":             `SELECT count(*) FROM task_sessions`,
		"dim_turn":                `SELECT count(*) FROM task_session_turns`,
		"dim_task":                `SELECT count(*) FROM tasks`,
		"dim_workflow":            `SELECT count(*) FROM workflows`,
		"dim_workflow_step":       `SELECT count(*) FROM workflow_steps`,
		"fact_installation_state": `SELECT 1`,
		"fact_writer_health":      `SELECT 1`,
		"disclosures":             ``,
		"rejects":                 `SELECT 0`,
	}
	readings := map[string]jsReading{}
	for table, countSQL := range want {
		r := readWithHyparquet(t, file(table))
		readings[table] = r
		if countSQL != "" {
			if w := one(t, src, countSQL); strconv.Itoa(r.NumRows) != w || len(r.Rows) != r.NumRows {
				t.Errorf("%s: hyparquet read %d rows (metadata %d), source has %s", table, len(r.Rows), r.NumRows, w)
			}
		}
		sum := 0
		for _, g := range r.RowGroups {
			sum += g.NumRows
		}
		if sum != r.NumRows || (r.NumRows > 0 && len(r.RowGroups) == 0) {
			t.Errorf("%s: row groups hold %d rows, file %d", table, sum, r.NumRows)
		}
		if !slices.Contains(r.KVKeys, "kandev_extract.provenance") {
			t.Errorf("%s: no provenance key in %v", table, r.KVKeys)
		}
		for _, c := range r.Schema {
			if !snakeCase.MatchString(c.Name) {
				t.Errorf("%s.%s: not lowercase snake_case", table, c.Name)
			}
			lt := string(c.LogicalType)
			conv := ""
			if c.ConvertedType != nil {
				conv = *c.ConvertedType
			}
			if c.PhysicalType == "INT96" || strings.Contains(lt, `"isSigned":false`) || strings.HasPrefix(conv, "UINT") {
				t.Errorf("%s.%s: %s %s %s is not portable", table, c.Name, c.PhysicalType, lt, conv)
			}
			if strings.Contains(lt, `"TIMESTAMP"`) && (!strings.Contains(lt, `"unit":"MICROS"`) || !strings.Contains(lt, `"isAdjustedToUTC":true`)) {
				t.Errorf("%s.%s: timestamp %s is not TIMESTAMP(MICROS, UTC)", table, c.Name, lt)
			}
		}
	}

	fact := readings["fact_subagent_context"]
	// observed_at: the exact microseconds (the source's nanoseconds
	// truncated), parsed here from the source text with the standard library.
	var stamps []string
	for _, row := range fact.Rows {
		stamps = append(stamps, fmt.Sprintf("%v|%v|%v", row["subagent_id"], row["observed_at"], row["settled_at"]))
	}
	sort.Strings(stamps)
	var wantStamps []string
	for _, r := range rowsOf(t, src, `SELECT id || '|' || observed_at || '|' || coalesce(settled_at, 'NULL') FROM task_session_subagents`) {
		p := strings.Split(r, "|")
		wantStamps = append(wantStamps, p[0]+"|"+micros(t, p[1])+"|"+micros(t, p[2]))
	}
	sort.Strings(wantStamps)
	equalSets(t, "observed_at/settled_at microseconds read by hyparquet", stamps, wantStamps)

	// Metrics: NULL stays null (never 0); values equal the source's.
	var metrics []string
	for _, row := range fact.Rows {
		metrics = append(metrics, fmt.Sprintf("%v|%v|%v|%v|%v", row["subagent_id"], jsInt(row["total_tokens"]), jsInt(row["tool_use_count"]), jsInt(row["duration_ms"]), row["source"]))
	}
	sort.Strings(metrics)
	equalSets(t, "metrics read by hyparquet", metrics, rowsOf(t, src,
		`SELECT id || '|' || coalesce(total_tokens, 'null') || '|' || coalesce(tool_use_count, 'null') || '|' || coalesce(duration_ms, 'null') || '|' || source FROM task_session_subagents`))
	nulls := 0
	for _, row := range fact.Rows {
		if v, ok := row["total_tokens"]; ok && v == nil {
			nulls++
		}
	}
	if w := one(t, src, `SELECT count(*) FROM task_session_subagents WHERE total_tokens IS NULL`); strconv.Itoa(nulls) != w || nulls == 0 {
		t.Errorf("null total_tokens read by hyparquet = %d, source %s", nulls, w)
	}
	// The sentinel is never an execution id.
	var execIDs []string
	for _, row := range fact.Rows {
		if id, ok := row["execution_id"].(string); ok {
			execIDs = append(execIDs, row["subagent_id"].(string)+"|"+id)
		}
	}
	sort.Strings(execIDs)
	equalSets(t, "execution ids read by hyparquet", execIDs,
		rowsOf(t, src, `SELECT id || '|' || agent_execution_id FROM task_session_subagents WHERE agent_execution_id <> 'unknown'`))

	// Installation state: raw keys verbatim, capture_since to the microsecond.
	inst := readings["fact_installation_state"].Rows[0]
	rawC := one(t, src, `SELECT value FROM kandev_meta WHERE key = 'subagent_context_capture_since'`)
	rawB := one(t, src, `SELECT value FROM kandev_meta WHERE key = 'subagent_context_backfill_through'`)
	if inst["capture_since_raw"] != rawC || inst["backfill_through_raw"] != rawB || inst["execution_since_raw"] != nil {
		t.Errorf("raw keys read by hyparquet: %v %v %v, want %s %s null", inst["capture_since_raw"], inst["backfill_through_raw"], inst["execution_since_raw"], rawC, rawB)
	}
	keyTime, err := time.Parse(time.RFC3339Nano, rawC)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := inst["capture_since"], "us:"+strconv.FormatInt(keyTime.UnixMicro(), 10); got != want {
		t.Errorf("capture_since read by hyparquet = %v, want %s", got, want)
	}
	// dim_session keeps task_sessions' ids exactly.
	var sessions []string
	for _, row := range readings["dim_session"].Rows {
		sessions = append(sessions, row["session_id"].(string))
	}
	sort.Strings(sessions)
	equalSets(t, "dim_session ids read by hyparquet", sessions, rowsOf(t, src, `SELECT id FROM task_sessions`))
	// Unknown fan-out is null, not 0.
	unknown := 0
	for _, row := range readings["dim_turn"].Rows {
		if row["fanout_completeness"] == "unknown" {
			if row["fanout"] != nil {
				t.Errorf("turn %v: unknown fan-out read as %v", row["turn_id"], row["fanout"])
			}
			unknown++
		}
	}
	if unknown == 0 {
		t.Error("no unknown turn read: the fixture should have some")
	}
}

// micros parses a Kandev SQLite timestamp and renders it as the reader's
// "us:<microseconds since the epoch>" (nanoseconds truncated), or "null".
func micros(t *testing.T, s string) string {
	t.Helper()
	if s == "NULL" {
		return "<nil>"
	}
	ts, err := time.Parse("2006-01-02 15:04:05.999999999-07:00", s)
	if err != nil {
		t.Fatalf("source timestamp %q: %v", s, err)
	}
	return "us:" + strconv.FormatInt(ts.UnixMicro(), 10)
}

// jsInt renders a hyparquet INT64 (a decimal string in the JSON) or null.
func jsInt(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}
