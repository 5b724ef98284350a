package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/report"
)

const defaultReportFile = "kandev-report.html"

func newReportCmd(g *globals) *cobra.Command {
	s := &settings{}
	var out string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write a self-contained HTML report with charts from the warehouse",
		Long: `Write one self-contained HTML file (inline CSS and SVG, no script, no
external resource) from warehouse.duckdb, opened read-only with no access to
any other file: per installation, the fan-out distribution and the fan-out
over time, contexts per card by workflow step, subagent usage (invocations,
and average tokens over measured rows only) and writer health over every
retained run. Each chart is captioned with the disclosures that apply to
its data: unknown is never drawn as zero, backfill is kept apart from live.

A banner at the top says how fresh each installation's data is: stale when
the snapshot is older than the staleness threshold or the latest attempt
failed, and also when the data is current but a healthy writer's newest
subagent row is over 36 h old (what 'kandev-extract health' calls stale:
nothing shows the writer still works).

Like query, report first swaps in a database that waits in _pending/ (a run
found warehouse.duckdb held open by another process, on Windows) when
nothing holds the file any more, and otherwise reads the waiting one.`,
		Example: `  kandev-extract report
  kandev-extract report --warehouse /srv/kandev-wh --out /tmp/kandev.html
  kandev-extract report --out -    # to stdout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, settled, err := s.database(cmd)
			if err != nil {
				return err
			}
			settledNotes(g, settled)
			if out == "-" {
				if !g.stdoutTerminal() {
					return report.Write(cmd.Context(), path, g.stdout, time.Now())
				}
				// HTML on a terminal: its text is store text, escaped
				// like every other output on a terminal.
				var b strings.Builder
				if err := report.Write(cmd.Context(), path, &b, time.Now()); err != nil {
					return err
				}
				_, err := io.WriteString(g.stdout, termSafeLines(b.String()))
				return err
			}
			return writeReport(cmd, g, path, out)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&out, "out", "o", defaultReportFile, "HTML file to write ('-' for stdout)")
	return cmd
}

// writeReport writes the report beside its final name, then renames it into
// place, so a reader never sees a half-written file.
func writeReport(cmd *cobra.Command, g *globals, dbPath, out string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.tmp")
	if err != nil {
		return fmt.Errorf("report %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := report.Write(cmd.Context(), dbPath, tmp, time.Now()); err != nil {
		if errors.Is(err, report.ErrNoRuns) {
			return &exitError{code: exitFailure, err: err}
		}
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("report %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("report %s: %w", out, err)
	}
	if !g.quiet {
		printSafe(g.stdout, "report written to %s\n", out)
	}
	return nil
}
