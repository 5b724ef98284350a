package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/internal/demo"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
	"github.com/kandev/kandev-extract/transform"
)

func newCheckCmd(g *globals) *cobra.Command {
	s := &settings{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Test each source and say what a run would do, writing nothing",
		Long: `Before the night: connect to each source a run would read (chosen as run
chooses them: --source, $` + envSource + `, the config file's installations,
Kandev's default store, the bundled demo store), take one read-only snapshot,
read the activation keys and the schema, and print what a run would do:

  * the installation name and its binding in the warehouse: whether the
    source is the store the name is bound to, not bound yet (the first
    committed run binds it), or another store, which a run refuses
    (unless --rebind);
  * the activation state, the activation keys and the subagent table's shape;
  * the tables a run reads, with their rows: counted exactly on SQLite
    (count(*) reads an index, not the rows), PostgreSQL's planner estimate
    (pg_class.reltuples: nothing is scanned; "unknown" when never analyzed);
  * the disclosures the keys and the shape already decide (a run adds those
    that depend on the rows, and writer health: see 'kandev-extract health');
  * the warehouse: whether it exists, and whether a run holds it now.

Nothing is written anywhere: not the sources (opened read-only, as a run
opens them), not the warehouse (never created, never locked: its bindings
and manifests are only read), not the cache directory (the bundled demo
store is read from a temporary copy, removed after, unless the cache holds
it already).

--json prints one JSON object per installation, one per line.

Exit status: 0 when a run would read every source, 2 when a run would
refuse one (a source bound to another store: --rebind; an unknown URL
scheme or an unreadable DSN; a warehouse path DuckDB cannot use) or on a
usage error, 1 when a source cannot be opened or read (no such file, not
a Kandev store, a connection refused or timed out, a password refused).`,
		Example: `  kandev-extract check
  kandev-extract check --source ~/.kandev/data/kandev.db --installation laptop --warehouse /srv/kandev-wh
  kandev-extract check --config /etc/kandev-extract.toml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd, g, s, asJSON)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&s.source, "source", "s", "", "one Kandev store: SQLite path or PostgreSQL URL (default: the config's installations, or as for run)")
	cmd.Flags().StringVarP(&s.installation, "installation", "i", "", "installation name: names --source's installation, or picks one from the config")
	cmd.Flags().BoolVar(&s.rebind, "rebind", false, "check as 'run --rebind' would run: a source bound to another store would be rebound, not refused")
	s.addSourceTimeouts(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per installation, one per line")
	return cmd
}

// checkReport is what check says of one installation (also its --json).
type checkReport struct {
	Installation  string  `json:"installation"`
	Source        string  `json:"source"` // redacted
	ChosenBecause string  `json:"chosen_because"`
	Dialect       string  `json:"dialect,omitempty"`
	KandevVersion *string `json:"kandev_version"`
	SnapshotAt    string  `json:"snapshot_at,omitempty"`
	// Verdict: would_run, would_be_refused (exit 2) or cannot_open (1).
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
	// Would is the verdict in words.
	Would           string            `json:"would"`
	Binding         *checkBinding     `json:"binding"`
	ActivationState string            `json:"activation_state,omitempty"`
	TableShape      string            `json:"subagent_table_shape,omitempty"`
	Keys            []checkKey        `json:"activation_keys,omitempty"`
	Tables          []tableProbe      `json:"tables,omitempty"`
	CountMillis     int64             `json:"count_ms"`
	Disclosures     []checkDisclosure `json:"disclosures,omitempty"`
	Warehouse       checkWarehouse    `json:"warehouse"`
	code            int               // the exit status it calls for
}

type checkKey struct {
	Name      string  `json:"name"`
	Raw       *string `json:"raw"`
	State     string  `json:"state"`
	Precision string  `json:"precision,omitempty"`
}

// checkBinding is the installation's binding against this source.
type checkBinding struct {
	// State: matches, unbound, would_rebind, refused or unreadable.
	State   string               `json:"state"`
	BoundTo *load.SourceIdentity `json:"bound_to,omitempty"`
	Source  load.SourceIdentity  `json:"source"`
	Text    string               `json:"text"`
}

type checkDisclosure struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Text     string `json:"text"`
}

type checkWarehouse struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Known: the warehouse has a binding or a manifest of the installation.
	Known  bool   `json:"installation_known"`
	Locked bool   `json:"locked"`
	Holder string `json:"lock_holder,omitempty"`
	Usable string `json:"problem,omitempty"`
}

const (
	verdictRun     = "would_run"
	verdictRefused = "would_be_refused"
	verdictNoOpen  = "cannot_open"
)

func runCheck(cmd *cobra.Command, g *globals, s *settings, asJSON bool) error {
	cfg, installs, why, err := s.resolve(cmd, true)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	whAbs, err := filepath.Abs(cfg.Warehouse)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	wh := checkWarehouse{Path: whAbs}
	if st, err := os.Stat(whAbs); err == nil && st.IsDir() {
		wh.Exists = true
		if held, holder, err := load.LockHolder(whAbs); err == nil && held {
			wh.Locked, wh.Holder = true, holder
		}
	}
	if strings.Contains(whAbs, "?") {
		wh.Usable = "DuckDB cannot open a database whose path contains '?': a run refuses this warehouse (exit 2); choose another directory"
	}
	worst := exitOK
	for _, in := range installs {
		r := checkOne(ctx, in, why, cfg.Warehouse, s.rebind, wh)
		if asJSON {
			if err := writeJSONLine(g.stdout, r); err != nil {
				return err
			}
		} else {
			printCheck(g.stdout, r)
		}
		if r.code == exitUsage || (r.code == exitFailure && worst == exitOK) {
			worst = r.code
		}
	}
	if wh.Usable != "" {
		worst = exitUsage
	}
	if worst != exitOK {
		return &exitError{code: worst}
	}
	return nil
}

// checkOne probes one installation's source and compares it with the
// warehouse, writing nothing.
func checkOne(ctx context.Context, in pipeline.Installation, why, warehouse string, rebind bool, wh checkWarehouse) checkReport {
	r := checkReport{Installation: in.Name, Source: location.PrintableLocation(in.Source), ChosenBecause: why, Warehouse: wh}
	r.Warehouse.Known = installationKnown(warehouse, in.Name)
	in.Rebind = in.Rebind || rebind
	runsFrom := "" // the location a run reads, when check reads another (a copy of the demo)
	if why == whyDemo {
		// The bundled store: read where a run reads it when the cache holds
		// it, else from a temporary copy (removed at once).
		runsFrom = in.Source
		if !demo.Current(in.Source) {
			tmp, err := tempDemo()
			if err != nil {
				r.fail(verdictNoOpen, fmt.Errorf("read the bundled demo store: %w", err))
				return r
			}
			defer os.Remove(tmp)
			in.Source = tmp
		}
		r.ChosenBecause = "demo: the store bundled in this binary, which a run writes to this path and reads there"
	}
	p, err := probeSource(ctx, in, true)
	if err != nil {
		if refused(err) {
			r.fail(verdictRefused, err)
		} else {
			r.fail(verdictNoOpen, err)
		}
		return r
	}
	if runsFrom != "" {
		p.Location, p.Identity.Location = runsFrom, runsFrom
	}
	r.Source, r.Dialect, r.KandevVersion = p.Location, string(p.Dialect), p.KandevVersion
	r.SnapshotAt = p.SnapshotAt.UTC().Format(time.RFC3339Nano)
	st := p.State
	r.ActivationState, r.TableShape = string(st.Activation), string(st.Shape)
	for _, k := range []models.ActivationKey{st.CaptureSince, st.BackfillThrough, st.ExecutionSince} {
		r.Keys = append(r.Keys, checkKey{Name: k.Name, Raw: k.Raw, State: string(k.State), Precision: string(k.Precision)})
	}
	r.Tables, r.CountMillis = p.Tables, p.CountTime.Milliseconds()
	r.Disclosures = stateDisclosures(st, p.Tables)
	r.Binding = bindingVerdict(warehouse, in.Name, p.Identity, in.Rebind)
	if r.Binding.State == "would_rebind" {
		r.Disclosures = append(r.Disclosures, checkDisclosure{Rule: "source_rebound", Severity: "warning",
			Text: "The installation name is rebound to this source; the rebind is disclosed for ever after."})
	}
	var missing []string
	for _, t := range p.Tables {
		if !t.Present && t.Table != transform.TableFact {
			missing = append(missing, t.Source)
		}
	}
	switch {
	case r.Binding.State == "refused":
		r.Verdict, r.code = verdictRefused, exitUsage
		r.Would = "refuse it (exit 2): " + r.Binding.Text
	case r.Binding.State == "unreadable":
		r.Verdict, r.code = verdictNoOpen, exitFailure
		r.Would = "fail (exit 1): " + r.Binding.Text
	case len(missing) > 0:
		r.Verdict, r.code = verdictNoOpen, exitFailure
		r.Would = "fail (exit 1): the store lacks the table(s) " + strings.Join(missing, ", ") + "; is this a Kandev store?"
	default:
		r.Verdict, r.code = verdictRun, exitOK
		r.Would = "read it and commit a run of installation " + in.Name
	}
	return r
}

func (r *checkReport) fail(verdict string, err error) {
	r.Verdict, r.Error = verdict, err.Error()
	r.code = exitFailure
	if verdict == verdictRefused {
		r.code = exitUsage
		r.Would = "refuse it (exit 2)"
	} else {
		r.Would = "fail (exit 1)"
		if !r.Warehouse.Known {
			r.Would += ", writing nothing for this installation (the warehouse does not know it yet)"
		} else {
			r.Would += ", recording the failed attempt in the runs table (the previous data stays current)"
		}
	}
}

// tempDemo writes the bundled demo store to a temporary file.
func tempDemo() (string, error) {
	f, err := os.CreateTemp("", "kandev-extract-check-*.db")
	if err != nil {
		return "", err
	}
	_, err = f.Write(demo.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// bindingVerdict compares a source's identity with the installation's
// binding as load.(*Warehouse).CheckBinding does when a run commits,
// reading only.
func bindingVerdict(warehouse, name string, id load.SourceIdentity, rebind bool) *checkBinding {
	v := &checkBinding{Source: id}
	b, err := load.ReadBinding(warehouse, name)
	switch {
	case err != nil && rebind:
		v.State, v.Text = "would_rebind", fmt.Sprintf("its binding cannot be read (%v); --rebind binds it anew to %s", err, id)
	case err != nil:
		v.State, v.Text = "unreadable", fmt.Sprintf("%v (run once with --rebind to bind it anew)", err)
	case b == nil:
		if prev := lastCommittedSource(warehouse, name); prev != nil && !sameAsLegacy(*prev, id) {
			v.BoundTo = prev
			if rebind {
				v.State, v.Text = "would_rebind", fmt.Sprintf("its last committed run read %s; --rebind binds it to this source", prev)
			} else {
				v.State, v.Text = "refused", fmt.Sprintf("installation %q's last committed run read %s, and this source is %s: give this store its own name (--installation), or run once with --rebind if it moved or was replaced on purpose", name, prev, id)
			}
			return v
		}
		v.State, v.Text = "unbound", fmt.Sprintf("not bound yet: the first committed run binds installation %q to %s", name, id)
	case b.Source.Same(id):
		v.BoundTo = &b.Source
		v.State, v.Text = "matches", fmt.Sprintf("the source is the store installation %q is bound to (since %s)", name, b.BoundAt.Format(time.RFC3339))
	default:
		v.BoundTo = &b.Source
		if rebind {
			v.State, v.Text = "would_rebind", fmt.Sprintf("bound to %s; --rebind binds it to this source (disclosed for ever after)", b.Source)
		} else {
			v.State, v.Text = "refused", fmt.Sprintf("installation %q is bound to %s, and this source is %s: give this store its own name (--installation), or run once with --rebind if it moved or was replaced on purpose", name, b.Source, id)
		}
	}
	return v
}

// lastCommittedSource is the source of the installation's latest valid
// committed run (what a warehouse from before bindings is bound by).
func lastCommittedSource(warehouse, name string) *load.SourceIdentity {
	ms, err := load.ReadManifests(warehouse)
	if err != nil {
		return nil
	}
	var last *load.SourceIdentity
	for _, m := range ms {
		if m.InstallationID == name && m.Status == models.RunCommitted && m.Provenance != nil {
			p := m.Provenance
			last = &load.SourceIdentity{Dialect: string(p.SourceDialect), Location: p.SourceLocation, Fingerprint: p.SourceFingerprint}
		}
	}
	return last
}

// sameAsLegacy: a source recorded before fingerprints matches on dialect
// and location alone.
func sameAsLegacy(prev, id load.SourceIdentity) bool {
	if prev.Fingerprint == nil {
		return prev.Dialect == id.Dialect && prev.Location == id.Location
	}
	return prev.Same(id)
}

// stateDisclosures are the disclosures the activation keys and the table
// shape decide on their own (their rule names are transform.Disclose's).
func stateDisclosures(st models.InstallationState, tables []tableProbe) []checkDisclosure {
	var out []checkDisclosure
	add := func(rule, sev, format string, args ...any) {
		out = append(out, checkDisclosure{Rule: rule, Severity: sev, Text: fmt.Sprintf(format, args...)})
	}
	if st.Shape == models.ShapeAbsent {
		add("feature_absent", "warning", "No task_session_subagents table (a Kandev build from before subagent capture): fan-out is UNKNOWN, not zero, for every session and turn.")
		return out
	}
	for _, k := range []models.ActivationKey{st.CaptureSince, st.BackfillThrough, st.ExecutionSince} {
		if k.State == models.KeyUnparseable {
			add("key_unparseable", "warning", "kandev_meta key %s holds %q, which is not an RFC 3339 instant (%s): no boundary is published from it.", k.Name, *k.Raw, k.Problem)
		}
	}
	if c := st.CaptureSince; !c.Valid() {
		add("no_capture_boundary", "warning", "subagent_context_capture_since is %s: no capture boundary is known, so no fan-out is complete (a lower bound where rows exist, UNKNOWN where none do).", map[bool]string{true: "unparseable", false: "absent"}[c.State == models.KeyUnparseable])
	} else {
		add("capture_boundary", "info", "Subagent capture is complete from %s: fan-out of activity from then on is exact; before it, a lower bound or UNKNOWN.", c.At.Format(time.RFC3339Nano))
		if c.Precision == models.PrecisionSecond {
			add("second_precision_boundary", "warning", "subagent_context_capture_since (%q) is only second-precise: rows observed in the second after it are flagged capture_boundary_ambiguous.", *c.Raw)
		}
	}
	switch b := st.BackfillThrough; b.State {
	case models.KeyAbsent:
		if st.CaptureSince.Valid() {
			add("partial_key_pair", "warning", "subagent_context_backfill_through is missing while capture_since is present (a partial key pair).")
		}
	case models.KeyNoneMatched:
		add("backfill_matched_nothing", "info", "subagent_context_backfill_through is '': the backfill matched nothing (every fresh install).")
	case models.KeyPresent:
		add("backfill_through", "info", "The one-time backfill recovered subagents up to %s.", b.At.Format(time.RFC3339Nano))
	}
	if st.Shape == models.ShapePreAmendment {
		rows := "all"
		for _, t := range tables {
			if t.Table == transform.TableFact && t.Rows != nil {
				rows = fmt.Sprintf("all %d", *t.Rows)
			}
		}
		add("pre_amendment_shape", "warning", "task_session_subagents has the pre-amendment shape (no execution-scoped unique key): %s rows are not_recorded and execution_id is NULL.", rows)
	}
	if e := st.ExecutionSince; e.Valid() {
		add("execution_since", "info", "subagent_context_execution_since = %q: 'unknown' live rows before it predate execution identity.", *e.Raw)
	}
	return out
}

func printCheck(w io.Writer, r checkReport) {
	printSafe(w, "installation %s\n", r.Installation)
	src := r.Source
	if r.Dialect != "" {
		src = r.Dialect + " " + src
	}
	printSafe(w, "  source:      %s (chosen: %s)\n", src, r.ChosenBecause)
	if r.Error != "" {
		// pgx breaks a connection error over lines ("…:\n\thostname
		// resolving error"): one line here, as in the JSON.
		printSafe(w, "  error:       %s\n", oneLine(r.Error))
	} else {
		printSafe(w, "  snapshot:    %s, kandev %s\n", r.SnapshotAt, deref(r.KandevVersion))
		if r.Binding != nil {
			printSafe(w, "  binding:     %s: %s\n", r.Binding.State, r.Binding.Text)
		}
		printSafe(w, "  activation:  %s; subagent table: %s\n", r.ActivationState, r.TableShape)
		for _, k := range r.Keys {
			v := "absent"
			switch {
			case k.State == string(models.KeyNoneMatched):
				v = "'' (the backfill matched nothing)"
			case k.Raw != nil && k.State == string(models.KeyUnparseable):
				v = fmt.Sprintf("UNPARSEABLE %q", *k.Raw)
			case k.Raw != nil:
				v = fmt.Sprintf("%s (%s precision)", *k.Raw, k.Precision)
			}
			printSafe(w, "    %-34s %s\n", k.Name+":", v)
		}
		how := "counted"
		for _, t := range r.Tables {
			if t.Estimate {
				how = "PostgreSQL's estimates"
			}
		}
		printSafe(w, "  tables (rows %s in %d ms):\n", how, r.CountMillis)
		for _, t := range r.Tables {
			n := "absent"
			switch {
			case t.Present && t.Rows == nil:
				n = "unknown (never analyzed)"
			case t.Present && t.Estimate:
				n = "~" + count(*t.Rows)
			case t.Present:
				n = count(*t.Rows)
			}
			printSafe(w, "    %-24s %16s  → %s\n", t.Source, n, t.Table)
		}
		if len(r.Disclosures) > 0 {
			printlnSafe(w, "  disclosures the keys and the shape decide (a run adds those that depend on the rows):")
			for _, d := range r.Disclosures {
				printSafe(w, "   - [%s] %s\n", d.Rule, d.Text)
			}
		}
	}
	switch {
	case r.Warehouse.Usable != "":
		printSafe(w, "  warehouse:   %s: %s\n", r.Warehouse.Path, r.Warehouse.Usable)
	case !r.Warehouse.Exists:
		printSafe(w, "  warehouse:   %s does not exist: a run creates it\n", r.Warehouse.Path)
	default:
		known := "does not know this installation yet"
		if r.Warehouse.Known {
			known = "knows this installation"
		}
		lock := ""
		if r.Warehouse.Locked {
			lock = "; a run holds it now (" + r.Warehouse.Holder + "): another run would wait (--wait) or exit 75"
		}
		printSafe(w, "  warehouse:   %s %s%s\n", r.Warehouse.Path, known, lock)
	}
	printSafe(w, "  a run would: %s\n\n", r.Would)
}

// oneLine joins the lines of s with single spaces, each trimmed.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}
