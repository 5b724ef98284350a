package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/config"
	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/internal/demo"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// Defaults for locating a source when none is given.
const (
	defaultWarehouse  = config.DefaultWarehouse
	kandevDefaultPath = "~/.kandev/data/kandev.db"
	envSource         = config.EnvSource
	envWarehouse      = config.EnvWarehouse
	// whyDemo is resolveSource's reason for the bundled demo store.
	whyDemo = "demo"
)

func newRunCmd(g *globals) *cobra.Command {
	s := &settings{}
	var full bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Extract Kandev stores into the warehouse (Parquet + DuckDB)",
		Long: `Extract each installation in one consistent, read-only snapshot, write the
run's Parquet tables, publish them atomically, apply retention and rebuild
warehouse.duckdb.

Installations come from, in order: --source (one store); $` + envSource + `;
the config file's [[installation]] blocks (--config or $KANDEV_EXTRACT_CONFIG);
Kandev's default store ` + kandevDefaultPath + ` if it exists; else the demo
store bundled in this binary (installation "demo"; written read-only to
kandev-extract/` + demo.FileName + ` in the user's cache directory, e.g.
~/.cache on Linux, and read from there), so 'kandev-extract run' works from
any directory.

A source is a SQLite file path or a PostgreSQL URL/DSN. Passwords in a DSN
are never printed or written; prefer PGPASSWORD, ~/.pgpass or source_env.
'kandev-extract check' tests the sources and says what a run would do,
writing nothing.

One failing installation does not stop the others: its previous data stays
current and the failure is recorded in the runs table. A source that cannot
be opened or read for an installation the warehouse does not know yet fails
before anything is written for it: no manifest, no empty installation, and
no warehouse directory when nothing else runs.

warehouse.duckdb is built beside the old file, then renamed into place.
Usually a copy of the previous build is updated: the runs retention drops
are deleted and only this run's files are read in (the views and their
comments are kept when this version would create the same ones), so the
work is one run's plus copying and hashing the file, whatever the
retention. It is built in full from every retained run's files when the
old file is not exactly what the last build installed (an analyst's
objects or writes, a write-ahead log, no _database.json, another DuckDB
version), when it is mostly free space, when the update fails, or with
--full-rebuild; the log line "warehouse.duckdb rebuilt" and the summary
say which and why. Both give the same tables, views and rows.

On a terminal a progress line names each phase (the table being read with
its rows against the source's own count, writer health, publish, rebuild),
with the read rate and an ETA; the summary follows on stdout. With JSON
logs (--log-format json, or auto when stderr is not a terminal, as under
cron) there is no progress line and no summary on stdout: the summary is a
"run summary" log record per installation. With --log-format json (or the
config's log_format) the error a command ends with is a record too
("kandev-extract failed", with err and exit_status). --quiet prints
warnings and errors only.

Files held open (Windows): when another process (a DuckDB session, Excel,
Power BI) holds warehouse.duckdb open, the run still commits its data and
exits 0 with a warning; the rebuilt database waits in _pending/ and replaces
warehouse.duckdb at the next run, status, query or report once the file is
closed ('query' reads the waiting one meanwhile; 'status' shows it). Held
current/ files stay at the previous run, all of an installation's together;
held leftovers are removed by a later run. On Linux and macOS nothing waits.

A changed activation key (Kandev writes subagent_context_capture_since and
subagent_context_backfill_through once) is recorded in the installation's
binding, _installations/<name>.json, with both raw values and the run that
first saw it. It stays an alarm (the activation_key_changed disclosure;
status and health exit 9) at every later run until an operator who has
looked into it runs once with --acknowledge-key-change: that run records
who acknowledged what (the activation_key_change_acknowledged disclosure,
for ever after). A change is never acknowledged by the run that first sees
it. Use --installation NAME to acknowledge one installation's only.

When a failure cannot be recorded where failures go (a full disk, an
unwritable _runs/), it is written to _attempts.journal, a small file of
fixed size allocated while there was room, which status reads. When the
run's Parquet committed but warehouse.duckdb could not be rebuilt, the
summary says so: warehouse.duckdb still serves the previous run, and the
next run rebuilds it.

Exit status: 0 when every installation committed (also when the swap of
warehouse.duckdb waits: see above), 1 when any failed, 2 on a usage or
configuration error (an unknown --log-format value included) or a source
refused (bound to another store: --rebind), 75 when another run holds the
warehouse (retry later, or pass --wait).`,
		Example: `  kandev-extract run
  kandev-extract run --source ~/.kandev/data/kandev.db --warehouse /srv/kandev-wh --installation laptop
  kandev-extract run --source 'postgres://kandev_reader@db.internal:5432/kandev' --installation team
  kandev-extract run --config /etc/kandev-extract.toml --wait 10m --quiet`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd, g, s, full)
		},
	}
	s.addSources(cmd)
	cmd.Flags().BoolVar(&s.acknowledge, "acknowledge-key-change", false, "acknowledge the activation key changes earlier runs recorded (status and health exit 9 until then); the acknowledgement is disclosed for ever after")
	cmd.Flags().BoolVar(&full, "full-rebuild", false, "build warehouse.duckdb from every retained run's Parquet files, even when the previous build could be updated with this run alone")
	return cmd
}

func runRun(cmd *cobra.Command, g *globals, s *settings, full bool) error {
	cfg, installs, why, err := s.resolve(cmd, true)
	if err != nil {
		return err
	}
	g.applyConfig(cfg)
	log := g.logger()
	for _, in := range installs {
		log.Info("installation", "installation", in.Name, "source", location.PrintableLocation(in.Source), "chosen_because", why)
	}
	res, err := runOnce(cmd.Context(), g, runCall{cfg: cfg, installs: installs, wait: s.wait, demo: why == whyDemo, interactive: true, fullRebuild: full})
	if re := res.NotRebuilt; re != nil && errors.Is(err, re) {
		// The runs committed: the summary says so, then the rebuild's
		// failure (exit 1).
		if g.showSummary() {
			printSummary(g.stdout, cfg.Warehouse, res)
		} else {
			logSummary(log, res)
		}
		return &exitError{code: exitFailure, err: fmt.Errorf("%w (warehouse.duckdb still serves the previous runs; the next run rebuilds it)", err)}
	}
	if err != nil {
		return err
	}
	if g.showSummary() {
		printSummary(g.stdout, cfg.Warehouse, res)
	} else {
		logSummary(log, res)
	}
	return runExit(res)
}

// runExit is a finished run's exit status: 2 when a source was refused
// (bound to another store, an unreadable DSN: the operator's to fix), 1
// when an installation failed, else 0.
func runExit(res pipeline.Result) error {
	for _, o := range res.Outcomes {
		if refused(o.Err) {
			return &exitError{code: exitUsage, err: fmt.Errorf("installation %s: %w", o.Installation, o.Err)}
		}
	}
	if res.Failed() && res.RunID == "" {
		// Nothing ran: every installation failed before anything was
		// written for it.
		var errs []error
		for _, o := range res.Outcomes {
			errs = append(errs, fmt.Errorf("installation %s: %w", o.Installation, o.Err))
		}
		return &exitError{code: exitFailure, err: errors.Join(errs...)}
	}
	if res.Failed() {
		return &exitError{code: exitFailure, err: errors.New("one or more installations failed; the warehouse keeps their previous data")}
	}
	return nil
}

// refused reports whether a run's error is a source refused as a usage
// error (exit 2).
func refused(err error) bool {
	return errors.Is(err, load.ErrSourceChanged) || errors.Is(err, location.ErrUnsupportedSource) || errors.Is(err, location.ErrBadDSN)
}

// runCall is one run of the pipeline from the CLI (run, or a schedule tick).
type runCall struct {
	cfg      config.Config
	installs []pipeline.Installation
	wait     time.Duration
	// demo: the one installation reads the bundled demo store, written to
	// the cache directory first.
	demo bool
	// interactive: a progress line may be drawn (run; never schedule).
	interactive bool
	// fullRebuild: warehouse.duckdb is built from every retained run's
	// files even when the previous build could be updated.
	fullRebuild bool
}

// runOnce checks the sources, then runs the pipeline, with a progress line
// on a terminal.
//
// Every installation the warehouse does not know yet (no manifest, no
// binding) has its source opened and its keys and schema read first: when
// that fails, the installation is left out of the run and nothing is
// written for it — a wrong path or a store that is not Kandev's never
// becomes an empty installation with a failed run in the warehouse. Its
// failure is an Outcome like any other (stderr, exit 1). A known
// installation goes to the pipeline whatever its source does, so a failed
// attempt is recorded and shown (current_runs.latest_attempt_failed).
// With the progress line, every source is opened first anyway, for the row
// counts the line shows as totals.
func runOnce(ctx context.Context, g *globals, c runCall) (pipeline.Result, error) {
	log := g.logger()
	installs := append([]pipeline.Installation(nil), c.installs...)
	if c.demo && len(installs) == 1 {
		path, err := demo.Path()
		if err != nil {
			return pipeline.Result{}, &exitError{code: exitUsage, err: fmt.Errorf("%w; give --source", err)}
		}
		installs[0].Source = path
	}
	withBar := c.interactive && g.showProgress()
	totals := map[string]map[string]int64{}
	var ready []pipeline.Installation
	skipped := map[string]error{}
	for _, in := range installs {
		known := installationKnown(c.cfg.Warehouse, in.Name)
		if known && !withBar {
			ready = append(ready, in)
			continue
		}
		pr, err := probeSource(ctx, in, withBar)
		switch {
		case err == nil:
			totals[in.Name] = pr.totals()
			ready = append(ready, in)
		case known || ctx.Err() != nil:
			ready = append(ready, in)
		default:
			err = fmt.Errorf("%w (nothing was written to the warehouse for installation %s, which it does not know yet)", err, in.Name)
			log.Error("installation failed", "installation", in.Name, "err", err, "recorded", false)
			skipped[in.Name] = err
		}
	}
	var (
		res pipeline.Result
		err error
	)
	if len(ready) > 0 {
		names := make([]string, len(ready))
		for i, in := range ready {
			names[i] = in.Name
		}
		var bar *progress
		if withBar {
			bar = g.newProgress(names, totals)
			if held, holder, _ := load.LockHolder(c.cfg.Warehouse); held {
				bar.waiting(holder)
			}
		}
		res, err = pipeline.Run(ctx, pipeline.Options{
			Warehouse:     c.cfg.Warehouse,
			Installations: ready,
			Logger:        log,
			Retention:     c.cfg.Retention,
			StaleAfter:    c.cfg.StaleAfter,
			WaitLock:      c.wait,
			FullRebuild:   c.fullRebuild,
			Progress:      bar.update,
			Phase:         bar.step,
		})
		bar.done()
		if c.cfg.PublishTo != "" && err == nil {
			if perr := publishRuns(ctx, log, c.cfg.PublishTo, c.cfg.Warehouse, ready, c.wait); perr != nil {
				return res, &exitError{code: exitFailure, err: perr}
			}
		}
	}
	if len(skipped) > 0 {
		// In the configured order.
		byName := map[string]pipeline.Outcome{}
		for _, o := range res.Outcomes {
			byName[o.Installation] = o
		}
		res.Outcomes = res.Outcomes[:0:0]
		for _, in := range installs {
			if e, ok := skipped[in.Name]; ok {
				res.Outcomes = append(res.Outcomes, pipeline.Outcome{Installation: in.Name, Err: e})
			} else if o, ok := byName[in.Name]; ok {
				res.Outcomes = append(res.Outcomes, o)
			}
		}
	}
	if errors.Is(err, load.ErrLocked) {
		return res, &exitError{code: exitLocked, err: err}
	}
	if errors.Is(err, load.ErrBadWarehouse) || errors.Is(err, load.ErrSourceChanged) {
		return res, &exitError{code: exitUsage, err: err}
	}
	return res, err
}

// installationKnown reports whether the warehouse has anything of an
// installation: a binding or a manifest (valid or not). It reads without
// the lock and creates nothing.
func installationKnown(warehouse, name string) bool {
	if b, err := load.ReadBinding(warehouse, name); b != nil || err != nil {
		return true
	}
	set, err := load.ScanManifests(warehouse)
	if err != nil {
		return true // unreadable: let the pipeline say why
	}
	for _, m := range set.Valid {
		if m.InstallationID == name {
			return true
		}
	}
	for _, p := range set.Problems {
		if p.Installation == name {
			return true
		}
	}
	return false
}

// resolveSource applies the documented order and says why it chose. The
// bundled demo store's source is its Location in the cache directory,
// written there only when a run uses it (runOnce).
func resolveSource(flag string) (source, why string, err error) {
	if flag != "" {
		return flag, "--source", nil
	}
	if env := os.Getenv(envSource); env != "" {
		return env, "$" + envSource, nil
	}
	if p := location.ExpandHome(kandevDefaultPath); fileExists(p) {
		return p, "Kandev's default store", nil
	}
	loc, err := demo.Location()
	if err != nil {
		return "", "", fmt.Errorf("no source: give --source (a Kandev SQLite file or PostgreSQL URL); %s does not exist, and %v", kandevDefaultPath, err)
	}
	return loc, whyDemo, nil
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
	if location.IsPostgres(source) {
		// From the printable form: never from text that may hold a
		// password.
		if u, err := url.Parse(location.PrintableLocation(source)); err == nil && u.Path != "" {
			base = strings.TrimPrefix(u.Path, "/")
		}
	} else {
		p := location.PrintableLocation(source)
		base = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
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

// printSummary prints a run's summary; every value in it (kandev_version,
// activation keys, disclosures and errors quote store text) goes through
// termSafe.
func printSummary(w io.Writer, warehouse string, res pipeline.Result) {
	if res.RunID == "" {
		printSafe(w, "no run: nothing was written to %s\n", warehouse)
		for _, o := range res.Outcomes {
			printSafe(w, "\ninstallation %s: FAILED: %v\n", o.Installation, o.Err)
		}
		return
	}
	printSafe(w, "run %s → %s\n", res.RunID, warehouse)
	for _, o := range res.Outcomes {
		if o.Err != nil {
			printSafe(w, "\ninstallation %s: FAILED: %v\n", o.Installation, o.Err)
			continue
		}
		p := o.Manifest.Provenance
		st := o.Facts.State
		printSafe(w, "\ninstallation %s (%s %s, kandev %s)\n", o.Installation, p.SourceDialect, p.SourceLocation, deref(p.KandevVersion))
		if res.NotRebuilt != nil {
			printSafe(w, "  %s\n", res.NotRebuilt.Committed(o.Installation))
		}
		printSafe(w, "  activation state: %s; subagent table: %s\n", st.Activation, st.Shape)
		for _, k := range []models.ActivationKey{st.CaptureSince, st.BackfillThrough, st.ExecutionSince} {
			printSafe(w, "  %-34s %s\n", k.Name+":", describeKey(k))
		}
		sa := o.Facts.Subagent
		printSafe(w, "  rows: %d subagents (%d live, %d backfill), %d sessions, %d turns; %d refused values\n",
			sa.Rows, sa.Live, sa.Backfill, o.Facts.Sessions.Rows, o.Facts.Turns.Rows, o.Facts.Rejected)
		printlnSafe(w, "  disclosures:")
		for _, d := range o.Disclosures {
			printSafe(w, "   - [%s] %s\n", d.Rule, d.Text)
		}
	}
	if re := res.NotRebuilt; re != nil {
		printSafe(w, "\nwarehouse.duckdb: NOT rebuilt (%s); it still serves the previous runs, and the next run rebuilds it\n", firstLineOf(re.Err.Error()))
	} else if line := rebuildLine(res); line != "" {
		printSafe(w, "\n%s\n", line)
	}
	if msgs := res.Pending.Messages(); len(msgs) > 0 {
		printlnSafe(w)
		printlnSafe(w, "pending (files open in another process; not a failure):")
		for _, m := range msgs {
			printSafe(w, "  - %s\n", m)
		}
	}
	db := filepath.Join(warehouse, "warehouse.duckdb")
	printSafe(w, "\nQuery it:\n  %s query --warehouse %s \"SELECT * FROM fanout_distribution\"\n  duckdb -readonly %s \"SELECT * FROM disclosures\"\n", selfName(), warehouse, db)
}

// rebuildLine says how warehouse.duckdb was rebuilt ("" when it was not).
func rebuildLine(res pipeline.Result) string {
	r := res.Rebuild
	took := fmt.Sprintf("%.1f s", res.DuckDB.Seconds())
	switch {
	case r.Updated:
		views := "views created anew"
		if r.ViewsKept {
			views = "views kept"
		}
		return fmt.Sprintf("warehouse.duckdb: the previous build updated in %s (%s added, %s removed; %s)", took, runsCount(r.Added), runsCount(r.Removed), views)
	case r.FromTemplate && r.ViewsKept:
		return fmt.Sprintf("warehouse.duckdb: built in full from every retained run in %s, because: %s (starting from the built-in empty warehouse, its views kept)", took, r.FullReason)
	case r.FullReason != "":
		return fmt.Sprintf("warehouse.duckdb: built in full from every retained run in %s, because: %s", took, r.FullReason)
	}
	return ""
}

func runsCount(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}

// logSummary is the summary as log records, one per committed
// installation, for JSON logs (failures are logged where they happen).
func logSummary(log *slog.Logger, res pipeline.Result) {
	for _, o := range res.Outcomes {
		if o.Err != nil {
			continue
		}
		st, sa := o.Facts.State, o.Facts.Subagent
		rules := make([]string, len(o.Disclosures))
		for i, d := range o.Disclosures {
			rules[i] = d.Rule
		}
		if res.NotRebuilt != nil {
			log.Warn(res.NotRebuilt.Committed(o.Installation), "installation", o.Installation, "run_id", o.RunID)
		}
		log.Info("run summary", "installation", o.Installation, "run_id", o.RunID, "activation_state", st.Activation,
			"subagent_table_shape", st.Shape, "subagent_rows", sa.Rows, "subagent_rows_live", sa.Live, "subagent_rows_backfill", sa.Backfill,
			"session_rows", o.Facts.Sessions.Rows, "turn_rows", o.Facts.Turns.Rows, "rejected_values", o.Facts.Rejected,
			"disclosures", rules)
	}
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
