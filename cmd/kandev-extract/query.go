package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/mattn/go-isatty"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

func newQueryCmd(g *globals) *cobra.Command {
	s := &settings{}
	var (
		format     string
		allowFiles bool
		file       string
	)
	cmd := &cobra.Command{
		Use:   "query [SQL | -]",
		Short: "Run a read-only SQL query against the warehouse and print the result",
		Long: `Run one SQL statement against warehouse.duckdb with the embedded DuckDB, for
users without a DuckDB CLI. Views worth starting with: disclosures,
installations, fanout_distribution, fanout_by_turn, subagent_usage,
execution_identity_by_session, contexts_by_step, runs.

The SQL is the argument; or the file --file names; or standard input, with
the argument "-", or with no argument when standard input is not a terminal
(kandev-extract query < q.sql). No SQL at all is a usage error (exit 2).
Several statements separated by ";" all run, but only the last one's
result is printed: give one query per invocation.

The query is read-only, and by default it can reach no file but the
warehouse database: the database is attached read-only, DuckDB's external
access is off (no COPY ... TO or FROM a file, no read_text, read_csv,
read_parquet, read_json or glob of a path, no ATTACH, no INSTALL or LOAD
of an extension) and the configuration is locked, so no SET or RESET in
the query can turn it back on. Such a statement fails with DuckDB's
"Permission Error: ... disabled by configuration".

--allow-files keeps DuckDB's external access on, for exports (COPY ... TO
a file) and for reading other files next to the warehouse; the warehouse
itself stays read-only and the configuration locked. To export a result
without it, use --format csv or json and redirect the output.

Formats: table (for people), csv (a header row, then one row per result
row; NULL is empty), json (an array of objects, one per row, whose keys
are the columns in the query's order). Instants are RFC 3339 in UTC with
microseconds (2026-08-03T15:32:20.418203Z) in csv and json; a DATE is
2026-08-03, a TIMESTAMP without time zone has no offset.

Text on a terminal is printed with control characters escaped (\x1b,
\u202e, ...): always in table format, in CSV when stdout is a terminal.
JSON escapes them as JSON does.

Files held open (Windows): when the last run could not replace
warehouse.duckdb because another process held it open, query first swaps
the waiting database in if nothing holds the file any more (and no run is
in progress), and otherwise reads the newer database waiting in _pending/,
with a note on stderr.

Exit status: 0 when the result was printed, 1 when the query failed, 2 on
a usage error (no SQL, an unknown --format, no warehouse).`,
		Example: `  kandev-extract query "SELECT * FROM disclosures"
  kandev-extract query --format csv "SELECT * FROM fanout_by_turn" > turns.csv
  kandev-extract query --format json --file weekly.sql
  echo "SELECT * FROM current_runs" | kandev-extract query -
  kandev-extract query --allow-files "COPY (SELECT * FROM fanout_by_turn) TO 'turns.parquet'"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := querySQL(cmd, args, file)
			if err != nil {
				return err
			}
			path, settled, err := s.database(cmd)
			if err != nil {
				return err
			}
			settledNotes(g, settled)
			return query(cmd, g, path, q, format, allowFiles)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&format, "format", "f", "table", "output format: table, csv or json")
	cmd.Flags().StringVar(&file, "file", "", "read the SQL from this file (\"-\": standard input)")
	cmd.Flags().BoolVar(&allowFiles, "allow-files", false, "let the SQL read and write files other than the warehouse (COPY ... TO, read_csv, ATTACH, ...); off by default")
	return cmd
}

// maxSQLBytes bounds SQL read from a file or standard input.
const maxSQLBytes = 16 << 20

// querySQL is the statement to run: the argument, --file, or standard
// input ("-", or no argument when it is not a terminal). Anything else is
// a usage error.
func querySQL(cmd *cobra.Command, args []string, file string) (string, error) {
	usage := func(format string, a ...any) error {
		return &exitError{code: exitUsage, err: usageErr(cmd, fmt.Errorf(format, a...))}
	}
	if file != "" && len(args) > 0 {
		return "", usage("give the SQL either as the argument or with --file, not both")
	}
	var (
		r    io.Reader
		from string
	)
	switch {
	case file == "-" || (file == "" && len(args) == 1 && args[0] == "-"):
		r, from = cmd.InOrStdin(), "standard input"
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", usage("--file: %v", err)
		}
		defer f.Close()
		r, from = f, file
	case len(args) == 1:
		if strings.TrimSpace(args[0]) == "" {
			return "", usage("the SQL argument is empty")
		}
		return args[0], nil
	default:
		in := cmd.InOrStdin()
		if f, ok := in.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return "", usage("no SQL: give it as the argument, with --file, or on standard input")
		}
		r, from = in, "standard input"
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSQLBytes+1))
	if err != nil {
		return "", &exitError{code: exitFailure, err: fmt.Errorf("query: read the SQL from %s: %w", from, err)}
	}
	if len(b) > maxSQLBytes {
		return "", usage("the SQL in %s is longer than %d MiB", from, maxSQLBytes>>20)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", usage("no SQL: %s is empty", from)
	}
	return string(b), nil
}

func query(cmd *cobra.Command, g *globals, path, q, format string, allowFiles bool) error {
	switch format {
	case "table", "csv", "json":
	default:
		return &exitError{code: exitUsage, err: fmt.Errorf("--format %q: use table, csv or json", format)}
	}
	w := g.stdout
	db, err := openWarehouse(cmd.Context(), path, allowFiles)
	if err != nil {
		return fmt.Errorf("query: cannot open the warehouse %s: %w", path, err)
	}
	defer db.Close()
	rows, err := db.QueryContext(cmd.Context(), q)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	types := make([]string, len(cols))
	if cts, err := rows.ColumnTypes(); err == nil && len(cts) == len(cols) {
		for i, ct := range cts {
			types[i] = strings.ToUpper(ct.DatabaseTypeName())
		}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	// CSV keeps its bytes for a file or a pipe; on a terminal it is
	// escaped like the table.
	csvText := func(s string) string { return s }
	if format == "csv" && g.stdoutTerminal() {
		csvText = termSafe
	}
	var (
		tw *tabwriter.Writer
		cw *csv.Writer
		bw *bufio.Writer
		n  int
	)
	switch format {
	case "table":
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		heads := make([]string, len(cols))
		for i, c := range cols {
			heads[i] = termSafe(c)
		}
		fmt.Fprintln(tw, strings.Join(heads, "\t"))
	case "csv":
		cw = csv.NewWriter(w)
		heads := make([]string, len(cols))
		for i, c := range cols {
			heads[i] = csvText(c)
		}
		cw.Write(heads)
	case "json":
		// Streamed, one object per row, keys in column order.
		bw = bufio.NewWriter(w)
		bw.WriteString("[")
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		switch format {
		case "table":
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = termSafe(cell(v, types[i], "NULL"))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		case "csv":
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = csvText(cell(v, types[i], ""))
			}
			cw.Write(cells)
		case "json":
			b, err := json.MarshalIndent(orderedRow{cols: cols, types: types, vals: vals}, "  ", "  ")
			if err != nil {
				return fmt.Errorf("query: row %d: %w", n+1, err)
			}
			if n > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n  ")
			bw.Write(jsonSafe(b))
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	switch format {
	case "table":
		return tw.Flush()
	case "csv":
		cw.Flush()
		return cw.Error()
	default:
		if n > 0 {
			bw.WriteString("\n")
		}
		bw.WriteString("]\n")
		return bw.Flush()
	}
}

// orderedRow is one result row as a JSON object whose keys are the
// columns in the query's order (a map would sort them).
type orderedRow struct {
	cols, types []string
	vals        []any
}

func (r orderedRow) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range r.cols {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(jsonValue(r.vals[i], r.types[i]))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c, err)
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// Layouts of instants in csv and json: RFC 3339 in UTC with the
// microseconds DuckDB keeps; a DATE as a date; a TIMESTAMP without time
// zone without an offset (it names no instant).
const (
	instantLayout = "2006-01-02T15:04:05.999999Z07:00"
	localLayout   = "2006-01-02T15:04:05.999999"
	dateLayout    = "2006-01-02"
)

// timeText formats a time value by its DuckDB column type.
func timeText(t time.Time, typ string) string {
	switch typ {
	case "DATE":
		return t.Format(dateLayout)
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "DATETIME":
		return t.UTC().Format(localLayout)
	case "TIME":
		return t.Format("15:04:05.999999")
	}
	return t.UTC().Format(instantLayout)
}

func cell(v any, typ, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case time.Time:
		return timeText(x, typ)
	case []byte:
		return string(x)
	case []any: // a LIST, as DuckDB prints it: [a, b]
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e, "", "NULL")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case duckdb.OrderedMap: // a MAP, as DuckDB prints it: {k=v, …}
		keys, values := x.Keys(), x.Values()
		parts := make([]string, len(keys))
		for i := range keys {
			parts[i] = cell(keys[i], "", "NULL") + "=" + cell(values[i], "", "NULL")
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func jsonValue(v any, typ string) any {
	switch x := v.(type) {
	case time.Time:
		return timeText(x, typ)
	case []byte:
		return string(x)
	}
	return v
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the extractor version and warehouse schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(g.stdout, "kandev-extract %s (warehouse schema %d)\n", pipeline.ExtractorVersion(), models.SchemaVersion)
			return nil
		},
	}
}
