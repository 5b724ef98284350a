package report

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// Data is what the report shows, per installation.
type Data struct {
	GeneratedAt   time.Time
	Installations []*Installation
	// Missing names the views this warehouse lacks (built by an older
	// version): the parts of the report that need them say so.
	Missing []string
}

// Installation is one installation's current state and series.
type Installation struct {
	ID string
	// Served is false for an installation with recorded runs but no served
	// run: nothing of it is in the current views.
	Served          bool
	RunID           string
	SnapshotAt      time.Time
	ActivationState string
	CaptureSince    *time.Time
	// HasSubagentTable is false for a store with no subagent table: its
	// counts are unknown, not zero.
	HasSubagentTable  bool
	Subagents         int64
	SubagentsLive     int64
	SubagentsBackfill int64

	Fresh          *Freshness   // from current_runs; nil without a served run
	NotServed      []RunProblem // the latest runs that are not served, newest first
	NotServedTotal int          // all of them
	Range          *TimeRange   // nil when the warehouse has no data_time_range
	Writer         *WriterState // from writer_health; nil without it

	Disclosures []Disclosure
	Fanout      []FanoutBucket
	Periods     []FanoutPeriod
	Cards       []CardStep
	Usage       []UsageRow
	Health      []HealthPeriod
	// TopTurns: the turns with the largest known fan-out (exact, else the
	// lower bound), with the reason codes behind each figure.
	TopTurns []TurnReasons
}

// TopTurnsShown is how many turns TopTurns holds per installation.
const TopTurnsShown = 15

// TurnReasons is one turn's fan-out figure and the codes that decided
// its completeness (ids and codes only).
type TurnReasons struct {
	TurnID, SessionID string
	StartedAt         *time.Time
	Completeness      string
	Fanout            *int64 // exact; nil unless complete
	LowerBound        int64
	Observed          int64
	Reasons           []string
}

// Freshness is the installation's row of current_runs: how old the data
// is and whether the latest attempt became current.
type Freshness struct {
	RunID            string
	SnapshotAt       time.Time
	FinishedAt       *time.Time
	LatestRunID      string
	LatestStatus     string
	LatestFinishedAt *time.Time
	LatestError      string
	LatestFailed     bool
	AgeHours         *float64
	Stale            bool
}

// RunProblem is a run that is not served: failed, or committed but
// quarantined, refused or failing verification.
type RunProblem struct {
	RunID, Status string
	FinishedAt    *time.Time
	Why           string // runs.problem, else runs.error
}

// TimeRange is the installation's row of data_time_range.
type TimeRange struct {
	SnapshotAt                  time.Time
	FirstTurn, LastTurn         *time.Time
	Turns                       int64
	FirstSubagent, LastSubagent *time.Time
}

// WriterState is the installation's row of writer_health: the status of
// its latest run and the newest subagent row at or after capture_since
// (NULL: nothing since activation).
type WriterState struct {
	Status       string
	LastObserved *time.Time
}

// Disclosure is one rule from the disclosures view.
type Disclosure struct{ Rule, Severity, Text string }

// FanoutBucket counts turns by completeness and fan-out: for complete
// turns K is the exact fan-out, for lower-bound turns the lower bound
// ("K or more"); unknown turns have no K.
type FanoutBucket struct {
	Completeness                  string
	K                             *int64
	Turns                         int64
	LiveOnly, BackfillOnly, Mixed int64
}

// FanoutPeriod is one row of fanout_by_period.
type FanoutPeriod struct {
	Grain                            string
	Start, End                       time.Time
	Partial                          bool
	Turns, Complete, LowerBound, Unk int64
	AvgComplete                      *float64 // NULL without a complete turn
}

// CardStep is contexts per card for one workflow step (each card's
// current step), over the complete cards and over all cards.
type CardStep struct {
	Name                                 string
	Cards, Complete, LowerBound, Unknown int64
	SessionsAll, ContextsObservedAll     float64
	SessionsComplete, ContextsComplete   *float64 // NULL without a complete card
	SubagentsLive, SubagentsBackfill     int64
}

// UsageRow is one row of subagent_usage.
type UsageRow struct {
	Type, Source           string
	Subagents, Measured    int64
	Unmeasured, WithTokens int64
	AvgTokens              *float64 // NULL when no row reported tokens
}

// HealthPeriod is one row of writer_health_by_period.
type HealthPeriod struct {
	Grain                               string
	Start, End                          time.Time
	Runs, Evaluations                   int64
	LastStatus                          string // "" when the period had no run
	MaxShortfall, LastShortfall, Excess *int64 // NULL when not evaluated
}

// ErrNoRuns is returned for a warehouse without a committed run.
var ErrNoRuns = errors.New("the warehouse has no committed run yet: run 'kandev-extract run' first")

// WarehouseCatalog is the name the warehouse database is attached under by
// OpenWarehouse: the same name DuckDB gives warehouse.duckdb when it is
// opened directly, so warehouse.main.runs still works.
const WarehouseCatalog = "warehouse"

// OpenWarehouse opens a warehouse database for reading by every command
// that reads one (status, query, report). It is the one place the CLI
// opens warehouse.duckdb; all of it holds whatever SQL runs later:
//
//   - the file is attached READ_ONLY into a private in-memory DuckDB, so
//     nothing can write it (the path is a SQL literal, so no character of
//     it can turn into a connection option, as '#' or '?' in a DSN would);
//   - extensions are never installed or loaded automatically;
//   - unless allowFiles, enable_external_access is then set false: no
//     COPY … TO, no read_text/read_csv/read_parquet/glob of any path, no
//     ATTACH of another file, no INSTALL/LOAD of an extension;
//   - lock_configuration is set last, so no later SET or RESET (of
//     enable_external_access or anything else) is accepted.
//
// Every setting is applied, and then verified, before the caller's first
// statement. The pool may open more connections: each one is USEd on the
// warehouse; the settings are the database's, so they hold on all of them.
// Errors are DuckDB's (which name the file); callers add their context.
func OpenWarehouse(ctx context.Context, dbPath string, allowFiles bool) (*sql.DB, error) {
	var (
		mu    sync.Mutex
		ready bool
	)
	lit := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	setup := []string{
		`ATTACH ` + lit(dbPath) + ` AS ` + WarehouseCatalog + ` (READ_ONLY)`,
		`USE ` + WarehouseCatalog,
		// DuckDB's own spill files go where they went when the file was
		// opened directly (beside it), not into the working directory.
		`SET temp_directory = ` + lit(dbPath+".tmp"),
	}
	if !allowFiles {
		setup = append(setup, `SET enable_external_access = false`)
	}
	setup = append(setup, `SET lock_configuration = true`)
	init := func(ex driver.ExecerContext) error {
		mu.Lock()
		defer mu.Unlock()
		stmts := setup
		if ready {
			stmts = []string{`USE ` + WarehouseCatalog}
		}
		for _, s := range stmts {
			if _, err := ex.ExecContext(ctx, s, nil); err != nil {
				return err
			}
		}
		ready = true
		return nil
	}
	conn, err := duckdb.NewConnector("?autoinstall_known_extensions=false&autoload_known_extensions=false", init)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	var ext, locked bool
	if err := db.QueryRowContext(ctx, `SELECT current_setting('enable_external_access'), current_setting('lock_configuration')`).Scan(&ext, &locked); err != nil {
		db.Close()
		return nil, err
	}
	if ext != allowFiles || !locked {
		db.Close()
		return nil, fmt.Errorf("enable_external_access=%v lock_configuration=%v: the read-only settings did not hold", ext, locked)
	}
	return db, nil
}

// maxNotServed is how many runs that are not served the report lists per
// installation (the newest; the total is given).
const maxNotServed = 5

// Load reads the report's data from warehouse.duckdb, opened read-only by
// OpenWarehouse, without access to any other file. It names the columns it
// reads, so columns added to a view later do not change it; views that a
// warehouse built by an older version lacks are listed in Data.Missing.
func Load(ctx context.Context, dbPath string) (*Data, error) {
	db, err := OpenWarehouse(ctx, dbPath, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	defer db.Close()
	cols := map[string]map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = current_schema()`)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			rows.Close()
			return nil, fmt.Errorf("open %s: %w", dbPath, err)
		}
		if cols[t] == nil {
			cols[t] = map[string]bool{}
		}
		cols[t][c] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	if cols["installations"] == nil {
		return nil, ErrNoRuns
	}
	d := &Data{}
	has := func(view string) bool {
		if cols[view] == nil {
			d.Missing = append(d.Missing, view)
			return false
		}
		return true
	}
	// col is the column if the view has it, else a typed NULL.
	col := func(view, name, null string) string {
		if cols[view][name] {
			return name
		}
		return "NULL::" + null
	}
	byID := map[string]*Installation{}
	q := func(what, query string, scan func(*sql.Rows) error) error {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return fmt.Errorf("report %s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return fmt.Errorf("report %s: %w", what, err)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("report %s: %w", what, err)
		}
		return nil
	}
	inst := func(id string) *Installation {
		if i := byID[id]; i != nil {
			return i
		}
		// Rows of an installation without current state: its runs, none
		// served. Keep it visible.
		i := &Installation{ID: id}
		byID[id] = i
		d.Installations = append(d.Installations, i)
		return i
	}
	err = q("installations", `SELECT installation_id, run_id, snapshot_at, activation_state, capture_since,
			subagent_rows, subagent_rows_live, subagent_rows_backfill
		FROM installations ORDER BY installation_id`, func(r *sql.Rows) error {
		var cs sql.NullTime
		var n, live, backfill sql.NullInt64
		i := &Installation{Served: true}
		if err := r.Scan(&i.ID, &i.RunID, &i.SnapshotAt, &i.ActivationState, &cs, &n, &live, &backfill); err != nil {
			return err
		}
		i.HasSubagentTable, i.Subagents, i.SubagentsLive, i.SubagentsBackfill = n.Valid, n.Int64, live.Int64, backfill.Int64
		i.CaptureSince = timePtr(cs)
		byID[i.ID] = i
		d.Installations = append(d.Installations, i)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var steps []func() error
	if has("current_runs") {
		steps = append(steps, func() error {
			v := "current_runs"
			return q("freshness", `SELECT installation_id, run_id, snapshot_at, `+col(v, "finished_at", "TIMESTAMPTZ")+`,
					coalesce(`+col(v, "latest_attempt_run_id", "VARCHAR")+`, ''), coalesce(`+col(v, "latest_attempt_status", "VARCHAR")+`, ''),
					`+col(v, "latest_attempt_finished_at", "TIMESTAMPTZ")+`, coalesce(`+col(v, "latest_attempt_error", "VARCHAR")+`, ''),
					coalesce(`+col(v, "latest_attempt_failed", "BOOLEAN")+`, false), `+col(v, "data_age_hours", "DOUBLE")+`,
					coalesce(`+col(v, "is_stale", "BOOLEAN")+`, false)
				FROM current_runs ORDER BY installation_id`,
				func(r *sql.Rows) error {
					var id string
					var f Freshness
					var fin, lfin sql.NullTime
					var age sql.NullFloat64
					if err := r.Scan(&id, &f.RunID, &f.SnapshotAt, &fin, &f.LatestRunID, &f.LatestStatus, &lfin, &f.LatestError, &f.LatestFailed, &age, &f.Stale); err != nil {
						return err
					}
					f.FinishedAt, f.LatestFinishedAt = timePtr(fin), timePtr(lfin)
					if age.Valid {
						f.AgeHours = &age.Float64
					}
					inst(id).Fresh = &f
					return nil
				})
		})
	}
	if has("runs") {
		steps = append(steps, func() error {
			served, why := "status = 'committed'", "error"
			if cols["runs"]["served"] {
				served = "served"
			}
			if cols["runs"]["problem"] {
				why = "coalesce(problem, error)"
			}
			order := "finished_at DESC NULLS LAST, run_id DESC"
			if cols["runs"]["run_order"] {
				order = "run_order DESC NULLS LAST, " + order
			}
			return q("runs not served", `SELECT installation_id, run_id, status, finished_at, coalesce(`+why+`, '')
				FROM runs WHERE NOT coalesce(`+served+`, false) ORDER BY installation_id, `+order,
				func(r *sql.Rows) error {
					var id string
					var p RunProblem
					var fin sql.NullTime
					if err := r.Scan(&id, &p.RunID, &p.Status, &fin, &p.Why); err != nil {
						return err
					}
					p.FinishedAt = timePtr(fin)
					i := inst(id)
					i.NotServedTotal++
					if len(i.NotServed) < maxNotServed {
						i.NotServed = append(i.NotServed, p)
					}
					return nil
				})
		})
	}
	steps = append(steps, func() error {
		return q("disclosures", `SELECT installation_id, rule, severity, text FROM disclosures ORDER BY installation_id, severity DESC, rule`,
			func(r *sql.Rows) error {
				var id string
				var x Disclosure
				if err := r.Scan(&id, &x.Rule, &x.Severity, &x.Text); err != nil {
					return err
				}
				inst(id).Disclosures = append(inst(id).Disclosures, x)
				return nil
			})
	})
	if has("fanout_by_turn") {
		steps = append(steps, func() error {
			// The exact fan-out of a complete turn; for a lower-bound turn
			// the bound (a fanout_lower_bound column, where the warehouse
			// has one, else the rows observed); unknown turns have none.
			lower := "subagents_observed"
			if cols["fanout_by_turn"]["fanout_lower_bound"] {
				lower = "coalesce(fanout_lower_bound, subagents_observed)"
			}
			return q("fan-out", `SELECT installation_id, fanout_completeness,
					CASE fanout_completeness WHEN 'complete' THEN fanout WHEN 'lower_bound' THEN `+lower+` END AS k,
					count(*) AS turns,
					count(*) FILTER (WHERE subagents_observed_live > 0 AND subagents_observed_backfill = 0),
					count(*) FILTER (WHERE subagents_observed_live = 0 AND subagents_observed_backfill > 0),
					count(*) FILTER (WHERE subagents_observed_live > 0 AND subagents_observed_backfill > 0)
				FROM fanout_by_turn GROUP BY ALL ORDER BY installation_id, fanout_completeness, k NULLS FIRST`,
				func(r *sql.Rows) error {
					var id string
					var b FanoutBucket
					var k sql.NullInt64
					if err := r.Scan(&id, &b.Completeness, &k, &b.Turns, &b.LiveOnly, &b.BackfillOnly, &b.Mixed); err != nil {
						return err
					}
					if k.Valid {
						b.K = &k.Int64
					}
					inst(id).Fanout = append(inst(id).Fanout, b)
					return nil
				})
		})
	}
	if has("fanout_by_turn") && cols["fanout_by_turn"]["completeness_reasons"] {
		steps = append(steps, func() error {
			return q("top turns", `SELECT installation_id, turn_id, session_id, started_at, fanout_completeness, fanout, fanout_lower_bound,
					subagents_observed, completeness_reasons
				FROM (SELECT *, row_number() OVER (PARTITION BY installation_id
						ORDER BY coalesce(fanout, fanout_lower_bound) DESC, subagents_observed DESC, turn_id) AS rank
					FROM fanout_by_turn)
				WHERE rank <= `+fmt.Sprint(TopTurnsShown)+` ORDER BY installation_id, rank`,
				func(r *sql.Rows) error {
					var id string
					var t TurnReasons
					var started sql.NullTime
					var fanout sql.NullInt64
					var reasons any
					if err := r.Scan(&id, &t.TurnID, &t.SessionID, &started, &t.Completeness, &fanout, &t.LowerBound, &t.Observed, &reasons); err != nil {
						return err
					}
					t.StartedAt = timePtr(started)
					if fanout.Valid {
						t.Fanout = &fanout.Int64
					}
					if list, ok := reasons.([]any); ok {
						t.Reasons = []string{}
						for _, c := range list {
							if s, ok := c.(string); ok {
								t.Reasons = append(t.Reasons, s)
							}
						}
					}
					inst(id).TopTurns = append(inst(id).TopTurns, t)
					return nil
				})
		})
	}
	if has("fanout_by_period") {
		steps = append(steps, func() error {
			return q("fan-out by period", `SELECT installation_id, grain, period_start, period_end, period_is_partial,
					turns, turns_complete, turns_lower_bound, turns_unknown, avg_fanout_complete
				FROM fanout_by_period ORDER BY installation_id, grain, period_start`,
				func(r *sql.Rows) error {
					var id string
					var p FanoutPeriod
					var avg sql.NullFloat64
					if err := r.Scan(&id, &p.Grain, &p.Start, &p.End, &p.Partial, &p.Turns, &p.Complete, &p.LowerBound, &p.Unk, &avg); err != nil {
						return err
					}
					if avg.Valid {
						p.AvgComplete = &avg.Float64
					}
					inst(id).Periods = append(inst(id).Periods, p)
					return nil
				})
		})
	}
	if has("data_time_range") {
		steps = append(steps, func() error {
			return q("data time range", `SELECT installation_id, snapshot_at, first_turn_started_at, last_turn_started_at, turns,
					first_subagent_observed_at, last_subagent_observed_at
				FROM data_time_range ORDER BY installation_id`,
				func(r *sql.Rows) error {
					var id string
					var t TimeRange
					var ft, lt, fs, ls sql.NullTime
					if err := r.Scan(&id, &t.SnapshotAt, &ft, &lt, &t.Turns, &fs, &ls); err != nil {
						return err
					}
					t.FirstTurn, t.LastTurn, t.FirstSubagent, t.LastSubagent = timePtr(ft), timePtr(lt), timePtr(fs), timePtr(ls)
					inst(id).Range = &t
					return nil
				})
		})
	}
	if has("writer_health") {
		steps = append(steps, func() error {
			return q("writer health", `SELECT installation_id, status, last_observed_at FROM writer_health ORDER BY installation_id`,
				func(r *sql.Rows) error {
					var id string
					var w WriterState
					var last sql.NullTime
					if err := r.Scan(&id, &w.Status, &last); err != nil {
						return err
					}
					w.LastObserved = timePtr(last)
					inst(id).Writer = &w
					return nil
				})
		})
	}
	if has("contexts_per_card") {
		steps = append(steps, func() error {
			// Averages over the same cards side by side: sessions and
			// contexts over the complete cards, and over all cards (where
			// contexts are a lower bound).
			return q("contexts per card", `SELECT installation_id, coalesce(workflow_step_name, workflow_step_id, '(no step)') AS step,
					count(*) AS cards,
					count(*) FILTER (WHERE contexts_completeness = 'complete'),
					count(*) FILTER (WHERE contexts_completeness = 'lower_bound'),
					count(*) FILTER (WHERE contexts_completeness = 'unknown'),
					avg(sessions), avg(contexts_observed),
					avg(sessions) FILTER (WHERE contexts_completeness = 'complete'),
					avg(contexts) FILTER (WHERE contexts_completeness = 'complete'),
					coalesce(sum(subagent_contexts_live), 0)::BIGINT, coalesce(sum(subagent_contexts_backfill), 0)::BIGINT
				FROM contexts_per_card
				GROUP BY installation_id, workflow_step_id, workflow_step_name, workflow_step_position
				ORDER BY installation_id, workflow_step_position NULLS LAST, step, workflow_step_id NULLS LAST`,
				func(r *sql.Rows) error {
					var id string
					var s CardStep
					var sc, cc sql.NullFloat64
					if err := r.Scan(&id, &s.Name, &s.Cards, &s.Complete, &s.LowerBound, &s.Unknown, &s.SessionsAll, &s.ContextsObservedAll,
						&sc, &cc, &s.SubagentsLive, &s.SubagentsBackfill); err != nil {
						return err
					}
					if sc.Valid && cc.Valid {
						s.SessionsComplete, s.ContextsComplete = &sc.Float64, &cc.Float64
					}
					inst(id).Cards = append(inst(id).Cards, s)
					return nil
				})
		})
	}
	steps = append(steps, func() error {
		return q("usage", `SELECT installation_id, coalesce(subagent_type, '(type not reported)'), source, subagents, measured_rows, unmeasured_rows,
				rows_with_tokens, avg_total_tokens
			FROM subagent_usage ORDER BY installation_id, subagent_type NULLS LAST, source`,
			func(r *sql.Rows) error {
				var id string
				var u UsageRow
				var avg sql.NullFloat64
				if err := r.Scan(&id, &u.Type, &u.Source, &u.Subagents, &u.Measured, &u.Unmeasured, &u.WithTokens, &avg); err != nil {
					return err
				}
				if avg.Valid {
					u.AvgTokens = &avg.Float64
				}
				inst(id).Usage = append(inst(id).Usage, u)
				return nil
			})
	})
	if has("writer_health_by_period") {
		steps = append(steps, func() error {
			return q("writer health by period", `SELECT installation_id, grain, period_start, period_end, runs, evaluations,
					coalesce(last_status, ''), max_shortfall, last_shortfall, last_excess
				FROM writer_health_by_period ORDER BY installation_id, grain, period_start`,
				func(r *sql.Rows) error {
					var id string
					var h HealthPeriod
					var ms, ls, le sql.NullInt64
					if err := r.Scan(&id, &h.Grain, &h.Start, &h.End, &h.Runs, &h.Evaluations, &h.LastStatus, &ms, &ls, &le); err != nil {
						return err
					}
					h.MaxShortfall, h.LastShortfall, h.Excess = intPtr(ms), intPtr(ls), intPtr(le)
					inst(id).Health = append(inst(id).Health, h)
					return nil
				})
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(d.Installations, func(a, b int) bool { return d.Installations[a].ID < d.Installations[b].ID })
	return d, nil
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

func intPtr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}
