package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

func newStatusCmd(g *globals) *cobra.Command {
	s := &settings{}
	var (
		last   int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show installations, their last runs, data age, activation, health and disclosures",
		Long: `Read the warehouse alone (warehouse.duckdb, opened read-only, with no access
to any other file) and show, per installation: the run its current data
comes from and how old that data is (stale when older than the staleness
threshold of the run that built the database, --stale-after, default 36h),
its latest attempt and whether it failed, its last runs (time, outcome,
rows, duration), its activation state and writer health (and, when the
writer is healthy but its newest subagent row is older than 36 h, that
nothing shows it still works: writer_quiet, the reason 'health' exits 8;
status's exit does not change for it), and the disclosures that apply to
its current data; and whether a run is in progress (the warehouse lock is
held, by "pid N"). The source stores are not touched.

Files held open (Windows): when a run could not replace warehouse.duckdb
because another process held it open, the rebuilt database waits in
_pending/. status first swaps it in if nothing holds warehouse.duckdb any
more and no run is in progress (taking the warehouse lock for that moment
only; when nothing waits, status takes no lock and writes nothing), and
otherwise reads the waiting database and says so ("pending:" lines; in
--json the warehouse-wide "pending" object, null when nothing waits). The
same goes for current/ files held at an earlier run. Something pending does
not change the exit status: the runs themselves committed.

Besides warehouse.duckdb, status reads what the warehouse directory
records that the database may not show yet: run manifests written after
its last rebuild (a rebuild that failed, e.g. on a full disk: "NOT SERVED:
run X committed; warehouse.duckdb still serves run Y; will rebuild next
run"), failures that could only be written to _attempts.journal (their
manifest could not be: "recorded only in _attempts.journal"), and the
activation key changes recorded in _installations/<name>.json ("ALARM:"
until acknowledged with 'kandev-extract run --acknowledge-key-change').

--json prints one JSON object per installation, one per line, with the
same facts (and exit_status, what this installation alone calls for):
latest_attempt (with recorded_in: warehouse.duckdb, manifest or journal),
database_behind (null, or committed_run, serves_run, error, text),
key_changes (key, before, after, previous_run, seen_by_run, seen_at,
acknowledged_by_run, acknowledged_at) and warehouse_read_only (null, or
why no run can write the warehouse).

Exit status (for a monitor; with several installations, the most urgent):
  0  every installation's latest attempt committed, its writer health is
     healthy and its data is fresh
  1  an installation's latest attempt failed (its previous data is still
     served: see latest_attempt.error), also one recorded only in a
     manifest or the journal; warehouse.duckdb does not serve the latest
     committed run (database_behind: its rebuild failed; not while a run is
     in progress); the warehouse's file system is mounted read-only
     (warehouse_read_only: no run can record anything); or the warehouse
     cannot be read (a broken or unreadable warehouse.duckdb, manifest,
     binding or journal: nothing is printed to stdout then, and the error
     says why)
  3, 4, 5, 6, 7  writer health as 'health' exits: shortfall, nothing
     since activation, not activated, capture_since unparseable, no
     subagent table (at the installation's latest run)
  8  data is stale (older than the staleness threshold)
  9  an activation key changed and the change is not acknowledged yet
     (the activation_key_changed alarm, key_changes): it stays so at every
     run until 'kandev-extract run --acknowledge-key-change'
  2  usage error, or no warehouse at --warehouse`,
		Example: `  kandev-extract status
  kandev-extract status --warehouse /srv/kandev-wh --last 10
  kandev-extract status --json || alert "kandev-extract: exit $?"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, dir, settled, err := s.databaseIn(cmd)
			if err != nil {
				return err
			}
			return printStatus(cmd, g, path, dir, settled, last, asJSON)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().IntVarP(&last, "last", "n", 5, "runs to show per installation")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per installation, one per line (for monitors)")
	return cmd
}

// installStatus is one installation's status (also its --json).
type installStatus struct {
	Installation string `json:"installation"`
	// CurrentRun is the run every current view reads; null when no run of
	// the installation is served (it never committed, or none verifies).
	CurrentRun *statusCurrent `json:"current_run"`
	// LatestAttempt is the installation's latest recorded run, committed
	// or failed (by commit sequence, never by clock).
	LatestAttempt       *statusRun `json:"latest_attempt"`
	LatestAttemptFailed bool       `json:"latest_attempt_failed"`
	// DataAgeHours is the age of the current run's snapshot now.
	DataAgeHours *float64 `json:"data_age_hours"`
	IsStale      bool     `json:"is_stale"`
	Activation   *string  `json:"activation_state"`
	TableShape   *string  `json:"subagent_table_shape"`
	HealthStatus *string  `json:"health_status"`
	// NewestRowAgeHours is the age now of the newest subagent row the
	// writer-health check saw (null when it saw none, or did not run);
	// WriterQuiet is set when the writer is healthy but that row is older
	// than load.DefaultStaleAfter: 'health' then reports it stale.
	NewestRowAgeHours *float64 `json:"newest_row_age_hours"`
	WriterQuiet       bool     `json:"writer_quiet"`
	// Alarms are the current disclosures of severity alarm (an activation
	// key that changed).
	Alarms      []string           `json:"alarms,omitempty"`
	Disclosures []statusDisclosure `json:"disclosures"`
	Runs        []statusRun        `json:"runs"`
	// RunInProgress is set while a run holds the warehouse lock.
	RunInProgress *statusLock `json:"run_in_progress"`
	// Pending is what waits in the warehouse because another process held
	// a file open (Windows): a rebuilt database not yet swapped in (status
	// then reads it), current/ files still at an earlier run, leftovers.
	// Warehouse-wide, like run_in_progress; null when nothing waits.
	Pending *load.Pending `json:"pending"`
	// WarehouseReadOnly is set when the warehouse's file system is mounted
	// read-only: no run can write or record anything there, so what
	// status shows may miss failed attempts (exit 1). Warehouse-wide.
	WarehouseReadOnly *string `json:"warehouse_read_only"`
	// DatabaseBehind is set when warehouse.duckdb does not serve the
	// installation's latest committed run (its rebuild failed); null
	// otherwise.
	DatabaseBehind *statusBehind `json:"database_behind"`
	// KeyChanges are the activation key changes recorded in the
	// installation's binding (_installations/<name>.json): each is an
	// alarm (exit 9) until acknowledged_by_run is set.
	KeyChanges []load.KeyChange `json:"key_changes"`
	// ExitStatus is what this installation alone calls for (see --help).
	ExitStatus int `json:"exit_status"`
	// known: the database's runs of the installation; topSeq the highest
	// commit sequence among them.
	known  map[string]bool
	topSeq int64
	// currentKnown: the warehouse has current_runs (a warehouse built by
	// an older version has not, and its served run is not known).
	currentKnown bool
}

type statusCurrent struct {
	RunID                  string     `json:"run_id"`
	FinishedAt             time.Time  `json:"finished_at"`
	CommitSeq              *int64     `json:"commit_seq"`
	SnapshotAt             *time.Time `json:"snapshot_at"`
	NewestSourceActivityAt *time.Time `json:"newest_source_activity_at"`
}

type statusRun struct {
	RunID        string    `json:"run_id"`
	Status       string    `json:"status"`
	FinishedAt   time.Time `json:"finished_at"`
	DurationMS   int64     `json:"duration_ms"`
	SubagentRows *int64    `json:"subagent_rows"`
	Error        *string   `json:"error"`
	// RecordedIn is where status found the run: warehouse.duckdb, its
	// manifest (the database was not rebuilt since), or the journal (its
	// manifest could not be written either).
	RecordedIn string `json:"recorded_in"`
	// order places the run among the others (statusOrder).
	order statusOrder
}

type statusDisclosure struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Text     string `json:"text"`
}

type statusLock struct {
	Holder string `json:"holder"`
}

// printStatus prints the status, or nothing and an error (exit 1) when
// any part of the warehouse cannot be read: a broken warehouse.duckdb is
// never shown as an empty or healthy one.
func printStatus(cmd *cobra.Command, g *globals, path, dir string, settled load.Settled, last int, asJSON bool) error {
	fail := func(err error) error {
		return &exitError{code: exitFailure, err: fmt.Errorf("status: cannot read the warehouse %s: %w (the next 'kandev-extract run' rebuilds warehouse.duckdb from the run manifests and Parquet files)", path, err)}
	}
	ctx := cmd.Context()
	var lock *statusLock
	if held, holder, err := load.LockHolder(dir); err == nil && held {
		lock = &statusLock{Holder: holder}
	}
	var pending *load.Pending
	if !settled.Pending.Empty() {
		pending = &settled.Pending
	}
	db, err := openWarehouse(ctx, path, false)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	sts, err := readStatus(ctx, db, last)
	if err != nil {
		return fail(err)
	}
	if sts, err = addDiskRecords(dir, sts, last, lock != nil); err != nil {
		return fail(err)
	}
	var readOnly *string
	if err := readOnlyFS(dir); err != nil {
		e := err.Error()
		readOnly = &e
	}
	for i := range sts {
		sts[i].WarehouseReadOnly = readOnly
		b, err := load.ReadBinding(dir, sts[i].Installation)
		if err != nil {
			return fail(err)
		}
		sts[i].KeyChanges = []load.KeyChange{}
		if b != nil && len(b.KeyChanges) > 0 {
			sts[i].KeyChanges = b.KeyChanges
		}
		sts[i].ExitStatus = sts[i].exitFor()
	}
	var out bytes.Buffer
	if asJSON {
		for i := range sts {
			sts[i].RunInProgress = lock
			sts[i].Pending = pending
			if err := writeJSONLine(&out, sts[i]); err != nil {
				return err
			}
		}
	} else {
		if readOnly != nil {
			printSafe(&out, "READ-ONLY:  the warehouse's file system is mounted read-only (%s): no run can write or record anything there, so failed attempts since may be missing below\n\n", *readOnly)
		}
		writeStatus(&out, sts, lock, settled)
	}
	if _, err := g.stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if code := statusExit(sts); code != exitOK {
		return &exitError{code: code}
	}
	return nil
}

// statusExit is the exit status for the installations: 1 when a latest
// attempt failed, else the most urgent health status's code, stale data
// counting as health's stale (8).
func statusExit(sts []installStatus) int {
	worst, rank := exitOK, 0
	for _, st := range sts {
		if st.ExitStatus == exitFailure {
			return exitFailure
		}
		for status, code := range healthExit {
			if code == st.ExitStatus && code != 0 && healthRank[status] > rank {
				worst, rank = code, healthRank[status]
			}
		}
	}
	return worst
}

// exitFor is one installation's exit status.
func (st installStatus) exitFor() int {
	if st.LatestAttemptFailed || st.DatabaseBehind != nil || st.WarehouseReadOnly != nil {
		return exitFailure
	}
	worst := models.HealthHealthy
	consider := func(s models.HealthStatus) {
		if healthRank[s] > healthRank[worst] {
			worst = s
		}
	}
	for _, k := range st.KeyChanges {
		if k.AcknowledgedByRun == "" {
			consider(models.HealthKeyChanged)
		}
	}
	if len(st.Alarms) > 0 {
		consider(models.HealthKeyChanged)
	}
	if st.HealthStatus != nil {
		consider(models.HealthStatus(*st.HealthStatus))
	}
	if st.IsStale {
		consider(models.HealthStale)
	}
	return healthExit[worst]
}

// readStatus reads every installation's status from the warehouse. A
// warehouse built before a view existed shows what it has (no current
// run, no health) rather than failing.
func readStatus(ctx context.Context, db *sql.DB, last int) ([]installStatus, error) {
	names, err := textColumn(ctx, db, `SELECT DISTINCT installation_id FROM runs ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	has := func(view string) (bool, error) {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE view_name = ? AND NOT internal`, view).Scan(&n)
		return n > 0, err
	}
	hasViews, err := has("installations")
	if err != nil {
		return nil, err
	}
	hasCurrent, err := has("current_runs")
	if err != nil {
		return nil, err
	}
	hasColumn := func(table, column string) (bool, error) {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_columns() WHERE table_name = ? AND column_name = ?`, table, column).Scan(&n)
		return n > 0, err
	}
	hasOrder, err := hasColumn("runs", "run_order")
	if err != nil {
		return nil, err
	}
	seqColumn := "0::BIGINT"
	if ok, err := hasColumn("runs", "commit_seq"); err != nil {
		return nil, err
	} else if ok {
		seqColumn = "coalesce(commit_seq, 0)"
	}
	order := "finished_at DESC"
	if hasOrder {
		order = "run_order DESC NULLS LAST, finished_at DESC"
	}
	severity := "NULL"
	if ok, err := hasColumn("disclosures", "severity"); err != nil {
		return nil, err
	} else if ok {
		severity = "severity"
	}
	lastObserved := "NULL::TIMESTAMPTZ"
	if ok, err := hasColumn("writer_health", "last_observed_at"); err != nil {
		return nil, err
	} else if ok {
		lastObserved = "h.last_observed_at"
	}
	var out []installStatus
	for _, name := range names {
		st := installStatus{Installation: name, Disclosures: []statusDisclosure{}, Runs: []statusRun{}}
		if hasCurrent {
			var c statusCurrent
			la := statusRun{RecordedIn: inDatabase}
			var age sql.NullFloat64
			var seq sql.NullInt64
			var snap, newest sql.NullTime
			err := db.QueryRowContext(ctx, `SELECT run_id, finished_at, commit_seq, snapshot_at, newest_source_activity_at,
					latest_attempt_run_id, latest_attempt_status, latest_attempt_finished_at, latest_attempt_error,
					latest_attempt_failed, data_age_hours, is_stale
				FROM current_runs WHERE installation_id = ?`, name).Scan(&c.RunID, &c.FinishedAt, &seq, &snap, &newest,
				&la.RunID, &la.Status, &la.FinishedAt, &la.Error, &st.LatestAttemptFailed, &age, &st.IsStale)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return nil, err
			default:
				c.FinishedAt = c.FinishedAt.UTC()
				if seq.Valid {
					c.CommitSeq = &seq.Int64
				}
				if snap.Valid {
					t := snap.Time.UTC()
					c.SnapshotAt = &t
				}
				if newest.Valid {
					t := newest.Time.UTC()
					c.NewestSourceActivityAt = &t
				}
				if age.Valid {
					st.DataAgeHours = &age.Float64
				}
				la.FinishedAt = la.FinishedAt.UTC()
				st.CurrentRun, st.LatestAttempt = &c, &la
			}
		}
		st.known = map[string]bool{}
		ids, err := db.QueryContext(ctx, `SELECT run_id, `+seqColumn+` FROM runs WHERE installation_id = ?`, name)
		if err != nil {
			return nil, err
		}
		for ids.Next() {
			var id string
			var seq int64
			if err := ids.Scan(&id, &seq); err != nil {
				ids.Close()
				return nil, err
			}
			st.known[id], st.topSeq = true, max(st.topSeq, seq)
		}
		err = ids.Err()
		ids.Close()
		if err != nil {
			return nil, err
		}
		rows, err := db.QueryContext(ctx, `SELECT run_id, status, finished_at, duration_ms, subagent_rows, error, `+seqColumn+`
			FROM runs WHERE installation_id = ? ORDER BY `+order+` LIMIT ?`, name, max(last, 1))
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			r := statusRun{RecordedIn: inDatabase}
			r.order.rank = 1
			var sub sql.NullInt64
			var ms sql.NullInt64
			if err := rows.Scan(&r.RunID, &r.Status, &r.FinishedAt, &ms, &sub, &r.Error, &r.order.seq); err != nil {
				rows.Close()
				return nil, err
			}
			r.FinishedAt = r.FinishedAt.UTC()
			r.DurationMS = ms.Int64
			if sub.Valid {
				r.SubagentRows = &sub.Int64
			}
			st.Runs = append(st.Runs, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
		st.currentKnown = hasCurrent
		if st.CurrentRun == nil {
			// Nothing served (or a warehouse built before current_runs):
			// the latest attempt is the latest run there is.
			if len(st.Runs) > 0 {
				r := st.Runs[0]
				st.LatestAttempt = &r
				// With current_runs, no served run means the latest attempt
				// did not become current whatever its status; without it,
				// its status says.
				st.LatestAttemptFailed = hasCurrent || r.Status != string(models.RunCommitted)
				st.IsStale = st.LatestAttemptFailed
			}
		} else {
			for _, r := range st.Runs {
				if r.RunID == st.LatestAttempt.RunID {
					st.LatestAttempt.DurationMS, st.LatestAttempt.SubagentRows = r.DurationMS, r.SubagentRows
				}
			}
		}
		if len(st.Runs) > last {
			st.Runs = st.Runs[:last]
		}
		if hasViews {
			var act, shape, health sql.NullString
			var newest sql.NullTime
			err := db.QueryRowContext(ctx, `SELECT i.activation_state, i.subagent_table_shape, h.status, `+lastObserved+`
				FROM installations i LEFT JOIN writer_health h USING (installation_id, run_id) WHERE installation_id = ?`, name).Scan(&act, &shape, &health, &newest)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return nil, err
			default:
				st.Activation, st.TableShape, st.HealthStatus = nullable(act), nullable(shape), nullable(health)
				if newest.Valid {
					now := time.Now()
					age := math.Round(now.Sub(newest.Time).Hours()*10) / 10
					st.NewestRowAgeHours = &age
					st.WriterQuiet = models.QuietWriter(models.HealthStatus(health.String), &newest.Time, now, load.DefaultStaleAfter)
				}
			}
			rows, err := db.QueryContext(ctx, `SELECT rule, `+severity+`, text FROM disclosures WHERE installation_id = ? ORDER BY rule`, name)
			if err != nil {
				return nil, err
			}
			for rows.Next() {
				var d statusDisclosure
				var sev sql.NullString
				if err := rows.Scan(&d.Rule, &sev, &d.Text); err != nil {
					rows.Close()
					return nil, err
				}
				d.Severity = sev.String
				st.Disclosures = append(st.Disclosures, d)
				if d.Severity == "alarm" {
					st.Alarms = append(st.Alarms, d.Rule)
				}
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return nil, err
			}
		}
		st.ExitStatus = st.exitFor()
		out = append(out, st)
	}
	return out, nil
}

// rawText is a raw activation key for people.
func rawText(v *string) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprintf("%q", *v)
}

func nullable(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// writeStatus prints the status for people; every value quoting warehouse
// or store text goes through termSafe (printSafe).
func writeStatus(w io.Writer, sts []installStatus, lock *statusLock, settled load.Settled) {
	if lock != nil {
		printSafe(w, "run in progress: the warehouse lock is held (%s); what follows is the last rebuilt state\n\n", lock.Holder)
	}
	for _, n := range settled.Notes() {
		printSafe(w, "done now: %s\n", n)
	}
	p := settled.Pending
	if p.Database != "" {
		built := ""
		if p.DatabaseBuiltAt != nil {
			built = " (built " + p.DatabaseBuiltAt.Format("2006-01-02 15:04:05Z") + ")"
		}
		printSafe(w, "pending:    %s; the newer database%s waits at %s and is what follows. "+
			"It replaces warehouse.duckdb when that file is closed, at the next run, status, query or report; until then sessions on warehouse.duckdb see the previous runs.\n",
			p.Reason, built, p.Database)
	}
	for _, c := range p.Current {
		at, want := c.AtRun, c.WantRun
		if at == "" {
			at = "none"
		}
		if want == "" {
			want = "none (no longer served)"
		}
		printSafe(w, "pending:    current/ files of installation %s are open in another process: all stay at run %s (wanted %s)\n", c.Installation, at, want)
	}
	if len(p.Leftovers) > 0 {
		printSafe(w, "pending:    not removed yet, open in another process (a later run removes them): %s\n", strings.Join(p.Leftovers, ", "))
	}
	if len(settled.Notes()) > 0 || !p.Empty() {
		printlnSafe(w)
	}
	if len(sts) == 0 {
		printlnSafe(w, "no runs recorded yet")
		return
	}
	const stamp = "2006-01-02 15:04:05Z"
	for i, st := range sts {
		if i > 0 {
			printlnSafe(w)
		}
		printSafe(w, "installation %s\n", st.Installation)
		switch c := st.CurrentRun; {
		case !st.currentKnown:
		case c == nil:
			printlnSafe(w, "  data:       none served (no committed run whose files verify): no current data")
		default:
			snap := "unknown"
			if c.SnapshotAt != nil {
				snap = c.SnapshotAt.Format(stamp)
			}
			age := ""
			if st.DataAgeHours != nil {
				age = fmt.Sprintf(", %s old", hoursText(*st.DataAgeHours))
			}
			stale := ""
			if st.IsStale {
				stale = "  STALE"
			}
			printSafe(w, "  data:       run %s, snapshot %s%s%s\n", c.RunID, snap, age, stale)
		}
		if la := st.LatestAttempt; la != nil {
			if st.LatestAttemptFailed {
				e := ""
				if la.Error != nil {
					e = ": " + firstLineOf(*la.Error)
				}
				printSafe(w, "  latest:     run %s %s at %s, did not become current%s\n", la.RunID, strings.ToUpper(la.Status), la.FinishedAt.Format(stamp), e)
			} else {
				printSafe(w, "  latest:     run %s %s at %s\n", la.RunID, la.Status, la.FinishedAt.Format(stamp))
			}
		}
		if b := st.DatabaseBehind; b != nil {
			e := "its error was not recorded"
			if b.Error != nil {
				e = firstLineOf(*b.Error)
			}
			printSafe(w, "  NOT SERVED: %s (the rebuild failed: %s)\n", b.Text, e)
		}
		for _, k := range st.KeyChanges {
			if k.AcknowledgedByRun == "" {
				printSafe(w, "  ALARM:      %s changed from %s (run %s) to %s, first seen by run %s at %s; not acknowledged (%s)\n",
					k.Key, rawText(k.Before), k.PreviousRun, rawText(k.After), k.SeenByRun, k.SeenAt.Format(stamp), pipeline.AcknowledgeHint(st.Installation))
			}
		}
		if st.Activation != nil || st.HealthStatus != nil {
			printSafe(w, "  activation: %s; subagent table: %s; writer health: %s\n", deref(st.Activation), deref(st.TableShape), deref(st.HealthStatus))
			if st.WriterQuiet {
				printSafe(w, "  but the newest subagent row is %s old, older than %s: nothing shows the writer still works ('health' reports it stale)\n",
					hoursText(*st.NewestRowAgeHours), hoursText(load.DefaultStaleAfter.Hours()))
			}
		}
		printlnSafe(w, "  last runs:")
		for _, r := range st.Runs {
			printSafe(w, "    %s  %-9s  %s  %6s", r.RunID, r.Status, r.FinishedAt.Format(stamp), (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond).String())
			if r.SubagentRows != nil {
				printSafe(w, "  %d subagent rows", *r.SubagentRows)
			}
			if r.Error != nil && *r.Error != "" {
				printSafe(w, "  error: %s", firstLineOf(*r.Error))
			}
			switch r.RecordedIn {
			case inManifest:
				printSafe(w, "  (not in warehouse.duckdb yet)")
			case inJournal:
				printSafe(w, "  (recorded only in %s: its manifest could not be written)", load.JournalFile)
			}
			printlnSafe(w)
		}
		if len(st.Disclosures) > 0 {
			printlnSafe(w, "  disclosures:")
			for _, d := range st.Disclosures {
				printSafe(w, "   - [%s] %s\n", d.Rule, d.Text)
			}
		}
	}
	if code := statusExit(sts); code != exitOK {
		printSafe(w, "\nexit status %d: %s\n", code, exitMeaning(code))
	}
}

func exitMeaning(code int) string {
	if code == exitFailure {
		return "an installation's latest attempt failed, warehouse.duckdb does not serve its latest committed run, or the warehouse is read-only"
	}
	for s, c := range healthExit {
		if c == code {
			if s == models.HealthStale {
				return "data is stale"
			}
			return "writer health: " + string(s)
		}
	}
	return ""
}

// hoursText is an age in hours for people: 3.2 h, 2 d 4 h.
func hoursText(h float64) string {
	if h < 0 {
		h = 0
	}
	if h < 48 {
		return fmt.Sprintf("%.1f h", h)
	}
	return fmt.Sprintf("%d d %d h", int(h)/24, int(h)%24)
}

// textColumn returns a query's one text column.
func textColumn(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
