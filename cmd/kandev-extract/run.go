package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// Defaults for locating a source when none is given.
const (
	defaultWarehouse  = "warehouse"
	kandevDefaultPath = "~/.kandev/data/kandev.db"
	demoStorePath     = "testdata/demo/kandev-demo.db"
	envSource         = "KANDEV_EXTRACT_SOURCE"
	envWarehouse      = "KANDEV_EXTRACT_WAREHOUSE"
	envInstallation   = "KANDEV_EXTRACT_INSTALLATION"
)

type runFlags struct {
	source, warehouse, installation string
}

func newRunCmd(g *globals) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Extract a Kandev store into the warehouse (Parquet + DuckDB)",
		Long: `Extract one Kandev store in one consistent, read-only snapshot, write the
run's Parquet tables, publish them atomically and rebuild warehouse.duckdb.

The source is, in order: --source; $` + envSource + `; Kandev's default store
` + kandevDefaultPath + ` if it exists; else the bundled demo store
` + demoStorePath + ` (when run from the repository).

A source is a SQLite file path or a PostgreSQL URL/DSN. Passwords in a DSN
are never printed or written; prefer PGPASSWORD or ~/.pgpass for them.

Exit status: 0 when every installation committed, 1 when one failed (the
warehouse keeps its previous data for it and records the failure in the
runs table), 2 on a usage error.`,
		Example: `  kandev-extract run
  kandev-extract run --source ~/.kandev/data/kandev.db --warehouse /srv/kandev-wh --installation laptop
  kandev-extract run --source 'postgres://kandev_reader@db.internal:5432/kandev' --installation team`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, g, f)
		},
	}
	cmd.Flags().StringVarP(&f.source, "source", "s", "", "Kandev store: SQLite path or PostgreSQL URL (default: see above)")
	cmd.Flags().StringVarP(&f.warehouse, "warehouse", "w", "", "warehouse directory (default $"+envWarehouse+" or ./"+defaultWarehouse+")")
	cmd.Flags().StringVarP(&f.installation, "installation", "i", "", "stable installation name, becomes installation_id (default: derived from the source)")
	return cmd
}

func runRun(cmd *cobra.Command, g *globals, f *runFlags) error {
	source, why, err := resolveSource(f.source)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	warehouse := firstNonEmpty(f.warehouse, os.Getenv(envWarehouse), defaultWarehouse)
	name := firstNonEmpty(f.installation, os.Getenv(envInstallation))
	if name == "" {
		name = deriveName(source, why == "demo")
	}
	log := g.logger()
	log.Info("starting run", "source", redact(source), "chosen_because", why, "warehouse", warehouse, "installation", name)
	res, err := pipeline.Run(cmd.Context(), pipeline.Options{
		Warehouse:     warehouse,
		Installations: []pipeline.Installation{{Name: name, Source: source}},
		Logger:        log,
	})
	if err != nil {
		return err
	}
	printSummary(g.stdout, warehouse, res)
	if res.Failed() {
		return &exitError{code: exitFailure, err: errors.New("one or more installations failed; the warehouse keeps their previous data")}
	}
	return nil
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
	fmt.Fprintf(w, "\nQuery it:\n  kandev-extract query --warehouse %s \"SELECT * FROM fanout_distribution\"\n  duckdb -readonly %s \"SELECT * FROM disclosures\"\n", warehouse, db)
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
