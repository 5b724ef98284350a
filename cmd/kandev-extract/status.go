package main

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newStatusCmd(g *globals) *cobra.Command {
	s := &settings{}
	var last int
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show installations, their last runs, activation state and disclosures",
		Long: `Read the warehouse alone (warehouse.duckdb, opened read-only) and show, per
installation: its last runs (time, outcome, rows, duration), its current
activation state and writer health, and the disclosures that apply to its
current data. The source stores are not touched.`,
		Example: `  kandev-extract status
  kandev-extract status --warehouse /srv/kandev-wh --last 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := s.database(cmd)
			if err != nil {
				return err
			}
			return printStatus(cmd, g, path, last)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().IntVarP(&last, "last", "n", 5, "runs to show per installation")
	return cmd
}

func printStatus(cmd *cobra.Command, g *globals, path string, last int) error {
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := cmd.Context()
	w := g.stdout
	insts, err := db.QueryContext(ctx, `SELECT DISTINCT installation_id FROM runs ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	var names []string
	for insts.Next() {
		var n string
		insts.Scan(&n)
		names = append(names, n)
	}
	insts.Close()
	if len(names) == 0 {
		fmt.Fprintln(w, "no runs recorded yet")
		return nil
	}
	hasViews := true
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE view_name = 'installations'`).Scan(new(int)); err != nil {
		hasViews = false
	}
	for _, name := range names {
		fmt.Fprintf(w, "installation %s\n", name)
		if hasViews {
			var act, shape, health sql.NullString
			db.QueryRowContext(ctx, `SELECT i.activation_state, i.subagent_table_shape, h.status
				FROM installations i LEFT JOIN writer_health h USING (installation_id, run_id) WHERE installation_id = ?`, name).Scan(&act, &shape, &health)
			if act.Valid {
				fmt.Fprintf(w, "  activation: %s; subagent table: %s; writer health: %s\n", act.String, shape.String, health.String)
			} else {
				fmt.Fprintln(w, "  no committed run: no current data")
			}
		}
		fmt.Fprintln(w, "  last runs:")
		rows, err := db.QueryContext(ctx, `SELECT run_id, status, finished_at, duration_ms, subagent_rows, coalesce(error, '')
			FROM runs WHERE installation_id = ? ORDER BY finished_at DESC LIMIT ?`, name, last)
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		for rows.Next() {
			var run, status, errText string
			var finished time.Time
			var ms int64
			var subagents sql.NullInt64
			if err := rows.Scan(&run, &status, &finished, &ms, &subagents, &errText); err != nil {
				rows.Close()
				return err
			}
			line := fmt.Sprintf("    %s  %-9s  %s  %6s", run, status, finished.UTC().Format("2006-01-02 15:04:05Z"), (time.Duration(ms) * time.Millisecond).Round(time.Millisecond))
			if subagents.Valid {
				line += fmt.Sprintf("  %d subagent rows", subagents.Int64)
			}
			if errText != "" {
				line += "  error: " + firstLineOf(errText)
			}
			fmt.Fprintln(w, line)
		}
		rows.Close()
		if hasViews {
			rows, err := db.QueryContext(ctx, `SELECT rule, text FROM disclosures WHERE installation_id = ? ORDER BY rule`, name)
			if err == nil {
				fmt.Fprintln(w, "  disclosures:")
				for rows.Next() {
					var rule, text string
					rows.Scan(&rule, &text)
					fmt.Fprintf(w, "   - [%s] %s\n", rule, text)
				}
				rows.Close()
			}
		}
	}
	return nil
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
