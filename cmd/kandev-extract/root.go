package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/spf13/cobra"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	return err
}

type globals struct {
	logFormat    string
	logFormatSet bool
	verbose      bool
	stdout       io.Writer
	stderr       io.Writer
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "kandev-extract",
		Short: "Turn Kandev stores into an analytics warehouse (Parquet + DuckDB)",
		Long: `kandev-extract reads a Kandev store — a SQLite file (Kandev's default is
~/.kandev/data/kandev.db) or a PostgreSQL database — in one consistent,
read-only snapshot, and writes:

  * Parquet fact and dimension tables (zstd, TIMESTAMP(MICROS, UTC),
    Hive-style partitions, provenance in every file's metadata), and
  * warehouse.duckdb, whose views carry Kandev's disclosure rules, so an
    "unknown" fan-out can never be read as zero.

Start with:   kandev-extract run            (extracts the demo store when no Kandev store exists)
Then query:   kandev-extract query "SELECT * FROM disclosures"`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, JSON otherwise)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log every stage (debug level)")
	root.PersistentPreRun = func(c *cobra.Command, _ []string) {
		g.logFormatSet = c.Flags().Changed("log-format")
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: usageErr(c, err)}
	})
	root.AddCommand(newRunCmd(g), newScheduleCmd(g), newStatusCmd(g), newHealthCmd(g), newQueryCmd(g), newReportCmd(g), newGenStoreCmd(g), newVersionCmd(g))
	return root
}

// usageErr adds a hint to a usage error.
func usageErr(c *cobra.Command, err error) error {
	return &hinted{err: err, hint: "see '" + c.CommandPath() + " --help'"}
}

type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + " (" + h.hint + ")" }
func (h *hinted) Unwrap() error { return h.err }

// logger builds the one slog logger: text on a terminal, JSON for cron.
func (g *globals) logger() *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	format := g.logFormat
	if format == "auto" || format == "" {
		format = "json"
		if g.onTerminal() {
			// On a terminal the progress line and the summary tell the
			// story; logs show only problems unless -v.
			format = "text"
			if !g.verbose {
				level = slog.LevelWarn
			}
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}
