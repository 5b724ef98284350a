package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root, g := newRootWith(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	_, err := root.ExecuteContextC(ctx)
	var ee *exitError
	if err != nil && !errors.As(err, &ee) && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's error for a command that does not exist: usage.
		return &exitError{code: exitUsage, err: err}
	}
	if err != nil && g.logFormat == "json" {
		return g.logFailure(err)
	}
	return err
}

// logFailure writes the error a command ends with as one JSON log record
// ("kandev-extract failed", with err and exit_status) when JSON logs were
// asked for (--log-format json or the config's log_format), so that a
// journal or log pipeline reading JSON lines gets no plain line; it
// returns the exit status with nothing left to print.
func (g *globals) logFailure(err error) error {
	code, msg := exitFailure, err.Error()
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return err // the failures were logged where they happened
		}
		code, msg = ee.code, ee.err.Error()
	}
	slog.New(slog.NewJSONHandler(g.stderr, nil)).Error("kandev-extract failed", "err", msg, "exit_status", code)
	return &exitError{code: code}
}

type globals struct {
	logFormat    string
	logFormatSet bool
	verbose      bool
	quiet        bool
	stdout       io.Writer
	stderr       io.Writer
	// bar is the progress line being drawn on the terminal, if any: log
	// records written meanwhile clear it first and redraw it after.
	bar atomic.Pointer[progress]
}

// Log formats (--log-format, log_format in the config file).
var logFormats = []string{"auto", "text", "json"}

func validLogFormat(f string) bool {
	for _, v := range logFormats {
		if f == v {
			return true
		}
	}
	return false
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root, _ := newRootWith(stdout, stderr)
	return root
}

// newRootWith is newRoot, with the settings its commands share.
func newRootWith(stdout, stderr io.Writer) (*cobra.Command, *globals) {
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

Start with:   kandev-extract run    (the demo store if there is no Kandev store)
Then query:   kandev-extract query "SELECT * FROM disclosures"`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "auto", "log format on stderr: text, json, or auto (text on a terminal, JSON otherwise). With JSON logs run prints no human summary on stdout")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log every stage (debug level)")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no summary and no progress: warnings and errors only (the output asked for, e.g. by query or status, is still printed)")
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		g.logFormatSet = c.Flags().Changed("log-format")
		if !validLogFormat(g.logFormat) {
			return &exitError{code: exitUsage, err: usageErr(c, fmt.Errorf("--log-format %q: use text, json or auto", g.logFormat))}
		}
		if g.quiet && g.verbose {
			return &exitError{code: exitUsage, err: usageErr(c, errors.New("--quiet and --verbose exclude each other"))}
		}
		return nil
	}
	root.Version = pipeline.ExtractorVersion()
	root.SetVersionTemplate(fmt.Sprintf("kandev-extract {{.Version}} (warehouse schema %d)\n", models.SchemaVersion))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: usageErr(c, err)}
	})
	root.AddCommand(newRunCmd(g), newCheckCmd(g), newScheduleCmd(g), newStatusCmd(g), newHealthCmd(g), newQueryCmd(g), newReportCmd(g), newInspectCmd(g), newGenStoreCmd(g), newVersionCmd(g))
	for _, c := range root.Commands() {
		// A wrong number of arguments is a usage error (exit 2), like a
		// bad flag.
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &exitError{code: exitUsage, err: usageErr(c, err)}
				}
				return nil
			}
		}
	}
	return root, g
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

// format is the effective log format: text or json (auto resolved: text
// on a terminal, JSON otherwise).
func (g *globals) format() string {
	switch g.logFormat {
	case "text", "json":
		return g.logFormat
	}
	if g.onTerminal() {
		return "text"
	}
	return "json"
}

// jsonLogs reports whether stderr carries JSON lines: then stdout gets no
// human summary and the terminal no progress line.
func (g *globals) jsonLogs() bool { return g.format() == "json" }

// showSummary reports whether run (and gen-store, report) print their
// human summary on stdout: not under --quiet, not with JSON logs (cron
// logs stay pure JSON lines).
func (g *globals) showSummary() bool { return !g.quiet && !g.jsonLogs() }

// logger builds the one slog logger: text on a terminal, JSON for cron.
func (g *globals) logger() *slog.Logger {
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	format := g.format()
	if (g.logFormat == "auto" || g.logFormat == "") && format == "text" && !g.verbose {
		// On a terminal the progress line and the summary tell the
		// story; logs show only problems unless -v.
		level = slog.LevelWarn
	}
	if g.quiet {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	w := barSafeWriter{g}
	if format == "json" {
		// encoding leaves DEL, C1 and bidi controls raw in strings; the
		// writer escapes them (the text handler quotes them itself).
		return slog.New(slog.NewJSONHandler(jsonSafeWriter{w}, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// barSafeWriter writes log records to stderr around the progress line: the
// line is cleared before a record and redrawn after it.
type barSafeWriter struct{ g *globals }

func (b barSafeWriter) Write(p []byte) (int, error) {
	if bar := b.g.bar.Load(); bar != nil {
		return bar.around(func() (int, error) { return b.g.stderr.Write(p) })
	}
	return b.g.stderr.Write(p)
}
