package main

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

func newQueryCmd(g *globals) *cobra.Command {
	s := &settings{}
	var format string
	cmd := &cobra.Command{
		Use:   "query SQL",
		Short: "Run a read-only SQL query against the warehouse and print the result",
		Long: `Run one SQL statement against warehouse.duckdb, opened read-only with the
embedded DuckDB, for users without a DuckDB CLI. Views worth starting with:
disclosures, installations, fanout_distribution, fanout_by_turn,
subagent_usage, execution_identity_by_session, contexts_by_step, runs.`,
		Example: `  kandev-extract query "SELECT * FROM disclosures"
  kandev-extract query --format csv "SELECT * FROM fanout_by_turn" > turns.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := s.database(cmd)
			if err != nil {
				return err
			}
			return query(cmd, g.stdout, path, args[0], format)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&format, "format", "f", "table", "output format: table, csv or json")
	return cmd
}

func query(cmd *cobra.Command, w io.Writer, path, q, format string) error {
	switch format {
	case "table", "csv", "json":
	default:
		return &exitError{code: exitUsage, err: fmt.Errorf("--format %q: use table, csv or json", format)}
	}
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		return err
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
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var (
		tw   *tabwriter.Writer
		cw   *csv.Writer
		recs []map[string]any
	)
	switch format {
	case "table":
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	case "csv":
		cw = csv.NewWriter(w)
		cw.Write(cols)
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		switch format {
		case "table":
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = cell(v, "NULL")
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		case "csv":
			cells := make([]string, len(vals))
			for i, v := range vals {
				cells[i] = cell(v, "")
			}
			cw.Write(cells)
		case "json":
			rec := make(map[string]any, len(cols))
			for i, c := range cols {
				rec[c] = jsonValue(vals[i])
			}
			recs = append(recs, rec)
		}
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
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if recs == nil {
			recs = []map[string]any{}
		}
		return enc.Encode(recs)
	}
}

func cell(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999Z07:00")
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
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
			fmt.Fprintf(g.stdout, "kandev-extract %s (warehouse schema %d)\n", pipeline.Version, models.SchemaVersion)
			return nil
		},
	}
}
