package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/config"
	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// Defaults for locating a source when none is given.
const (
	defaultWarehouse  = config.DefaultWarehouse
	kandevDefaultPath = "~/.kandev/data/kandev.db"
	demoStorePath     = "testdata/demo/kandev-demo.db"
	envSource         = config.EnvSource
	envWarehouse      = config.EnvWarehouse
)

func newRunCmd(g *globals) *cobra.Command {
	s := &settings{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Extract Kandev stores into the warehouse (Parquet + DuckDB)",
		Long: `Extract each installation in one consistent, read-only snapshot, write the
run's Parquet tables, publish them atomically, apply retention and rebuild
warehouse.duckdb.

Installations come from, in order: --source (one store); $` + envSource + `;
the config file's [[installation]] blocks (--config or $KANDEV_EXTRACT_CONFIG);
Kandev's default store ` + kandevDefaultPath + ` if it exists; else the
bundled demo store ` + demoStorePath + ` (when run from the repository).

A source is a SQLite file path or a PostgreSQL URL/DSN. Passwords in a DSN
are never printed or written; prefer PGPASSWORD, ~/.pgpass or source_env.

One failing installation does not stop the others: its previous data stays
current and the failure is recorded in the runs table.

Exit status: 0 when every installation committed, 1 when any failed,
2 on a usage or configuration error, 75 when another run holds the
warehouse (retry later, or pass --wait).`,
		Example: `  kandev-extract run
  kandev-extract run --source ~/.kandev/data/kandev.db --warehouse /srv/kandev-wh --installation laptop
  kandev-extract run --source 'postgres://kandev_reader@db.internal:5432/kandev' --installation team
  kandev-extract run --config /etc/kandev-extract.toml --wait 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, g, s)
		},
	}
	s.addSources(cmd)
	return cmd
}

func runRun(cmd *cobra.Command, g *globals, s *settings) error {
	cfg, installs, why, err := s.resolve(cmd, true)
	if err != nil {
		return err
	}
	g.applyConfig(cfg)
	log := g.logger()
	for _, in := range installs {
		log.Info("installation", "installation", in.Name, "source", redact(in.Source), "chosen_because", why)
	}
	res, err := runOnce(cmd.Context(), g, cfg, installs, s.wait)
	if err != nil {
		return err
	}
	printSummary(g.stdout, cfg.Warehouse, res)
	if res.Failed() {
		return &exitError{code: exitFailure, err: errors.New("one or more installations failed; the warehouse keeps their previous data")}
	}
	return nil
}

// runOnce runs the pipeline with progress on a terminal.
func runOnce(ctx context.Context, g *globals, cfg config.Config, installs []pipeline.Installation, wait time.Duration) (pipeline.Result, error) {
	progress := g.progress()
	res, err := pipeline.Run(ctx, pipeline.Options{
		Warehouse:     cfg.Warehouse,
		Installations: installs,
		Logger:        g.logger(),
		Retention:     cfg.Retention,
		WaitLock:      wait,
		Progress:      progress.update,
	})
	progress.done()
	if errors.Is(err, load.ErrLocked) {
		return res, &exitError{code: exitLocked, err: err}
	}
	return res, err
}

// resolveSource applies the documented order and says why it chose.
func resolveSource(flag string) (source, why string, err error) {
	if flag != "" {
		return flag, "--source", nil
	}
	if env := os.Getenv(envSource); env != "" {
		return env, "$" + envSource, nil
	}
	if p := extract.ExpandHome(kandevDefaultPath); fileExists(p) {
		return p, "Kandev's default store", nil
	}
	if fileExists(demoStorePath) {
		return demoStorePath, "demo", nil
	}
	return "", "", fmt.Errorf("no source: give --source (a Kandev SQLite file or PostgreSQL URL); %s does not exist and the demo store %s is not here (run from the repository)", kandevDefaultPath, demoStorePath)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// deriveName makes an installation name from a source: the database name
// for PostgreSQL, the file's base name for SQLite.
func deriveName(source string, demo bool) string {
	if demo {
		return "demo"
	}
	base := ""
	if extract.IsPostgres(source) {
		if u, err := url.Parse(source); err == nil && u.Path != "" {
			base = strings.TrimPrefix(u.Path, "/")
		}
		if m := regexp.MustCompile(`dbname=(\S+)`).FindStringSubmatch(source); m != nil {
			base = m[1]
		}
	} else {
		base = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
	}
	base = strings.Trim(nonName.ReplaceAllString(base, "-"), "-._")
	if base == "" {
		return "default"
	}
	if len(base) > 64 {
		base = base[:64]
	}
	return base
}

// redact hides a password in a PostgreSQL URL or keyword DSN.
func redact(source string) string {
	if !extract.IsPostgres(source) {
		return source
	}
	return extract.RedactDSN(source)
}

func printSummary(w io.Writer, warehouse string, res pipeline.Result) {
	fmt.Fprintf(w, "run %s → %s\n", res.RunID, warehouse)
	for _, o := range res.Outcomes {
		if o.Err != nil {
			fmt.Fprintf(w, "\ninstallation %s: FAILED: %v\n", o.Installation, o.Err)
			continue
		}
		p := o.Manifest.Provenance
		st := o.Facts.State
		fmt.Fprintf(w, "\ninstallation %s (%s %s, kandev %s)\n", o.Installation, p.SourceDialect, p.SourceLocation, deref(p.KandevVersion))
		fmt.Fprintf(w, "  activation state: %s; subagent table: %s\n", st.Activation, st.Shape)
		for _, k := range []models.ActivationKey{st.CaptureSince, st.BackfillThrough, st.ExecutionSince} {
			fmt.Fprintf(w, "  %-34s %s\n", k.Name+":", describeKey(k))
		}
		sa := o.Facts.Subagent
		fmt.Fprintf(w, "  rows: %d subagents (%d live, %d backfill), %d sessions, %d turns; %d refused values\n",
			sa.Rows, sa.Live, sa.Backfill, o.Facts.Sessions.Rows, o.Facts.Turns.Rows, o.Facts.Rejected)
		fmt.Fprintln(w, "  disclosures:")
		for _, d := range o.Disclosures {
			fmt.Fprintf(w, "   - [%s] %s\n", d.Rule, d.Text)
		}
	}
	db := filepath.Join(warehouse, "warehouse.duckdb")
	fmt.Fprintf(w, "\nQuery it:\n  %s query --warehouse %s \"SELECT * FROM fanout_distribution\"\n  duckdb -readonly %s \"SELECT * FROM disclosures\"\n", selfName(), warehouse, db)
}

func describeKey(k models.ActivationKey) string {
	switch k.State {
	case models.KeyAbsent:
		return "absent"
	case models.KeyNoneMatched:
		return "'' (the backfill matched nothing)"
	case models.KeyUnparseable:
		return fmt.Sprintf("UNPARSEABLE %q", *k.Raw)
	}
	return fmt.Sprintf("%s (%s precision)", *k.Raw, k.Precision)
}

func deref(s *string) string {
	if s == nil {
		return "unknown"
	}
	return *s
}

// selfName is how the user invoked this program, for copy-paste hints.
func selfName() string {
	if strings.Contains(os.Args[0], "/") && !strings.Contains(os.Args[0], "go-build") && !strings.HasSuffix(os.Args[0], ".test") {
		return os.Args[0]
	}
	return "kandev-extract"
}
