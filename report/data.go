// Package report renders the warehouse as one self-contained HTML page:
// inline CSS and inline SVG charts generated here, no script and no
// external resource, so it opens offline and can be mailed as a file.
// Every chart carries a caption with the disclosures that apply to its
// data (unknown vs zero, backfill vs live), read from the warehouse's own
// disclosures view. The warehouse is opened read-only.
package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
)

// Data is what the report shows, per installation.
type Data struct {
	GeneratedAt   time.Time
	Installations []*Installation
}

// Installation is one installation's current state and series.
type Installation struct {
	ID              string
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
	Disclosures       []Disclosure
	Fanout            []FanoutBucket
	Steps             []StepRow
	Usage             []UsageRow
	Health            []HealthPoint
}

// Disclosure is one rule from the disclosures view.
type Disclosure struct{ Rule, Severity, Text string }

// FanoutBucket is one row of fanout_distribution_by_source.
type FanoutBucket struct {
	Completeness                  string
	Subagents                     int64
	Turns                         int64
	LiveOnly, BackfillOnly, Mixed int64
}

// StepRow is one row of contexts_by_step.
type StepRow struct {
	Name                    string
	Cards, CardsComplete    int64
	SessionsPerCard         float64
	ContextsComplete        *float64 // NULL when no card of the step is complete
	ContextsObserved        float64
	SubagentsLive, Backfill int64
}

// UsageRow is one row of subagent_usage.
type UsageRow struct {
	Type, Source           string
	Subagents, Measured    int64
	Unmeasured, WithTokens int64
	AvgTokens              *float64 // NULL when no row reported tokens
}

// HealthPoint is one row of writer_health_history.
type HealthPoint struct {
	At                time.Time
	Status            string
	Evaluated         bool
	Shortfall, Excess *int64 // NULL when the comparison was not run
}

// ErrNoRuns is returned for a warehouse without a committed run.
var ErrNoRuns = errors.New("the warehouse has no committed run yet: run 'kandev-extract run' first")

// Load reads the report's data from warehouse.duckdb, opened read-only.
func Load(ctx context.Context, dbPath string) (*Data, error) {
	db, err := sql.Open("duckdb", dbPath+"?access_mode=read_only")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	defer db.Close()
	var views int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_views() WHERE view_name = 'installations'`).Scan(&views); err != nil {
		return nil, fmt.Errorf("open %s: %w", dbPath, err)
	}
	if views == 0 {
		return nil, ErrNoRuns
	}
	d := &Data{}
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
		// A row for an installation without current state cannot happen
		// (every view reads the same current runs); keep it visible anyway.
		i := &Installation{ID: id}
		byID[id] = i
		d.Installations = append(d.Installations, i)
		return i
	}
	err = q("installations", `SELECT installation_id, run_id, snapshot_at, activation_state, capture_since,
			subagent_rows, subagent_rows_live, subagent_rows_backfill
		FROM installations ORDER BY installation_id`, func(r *sql.Rows) error {
		var id string
		var cs sql.NullTime
		var n, live, backfill sql.NullInt64
		i := &Installation{}
		if err := r.Scan(&id, &i.RunID, &i.SnapshotAt, &i.ActivationState, &cs, &n, &live, &backfill); err != nil {
			return err
		}
		i.HasSubagentTable, i.Subagents, i.SubagentsLive, i.SubagentsBackfill = n.Valid, n.Int64, live.Int64, backfill.Int64
		i.ID = id
		if cs.Valid {
			t := cs.Time
			i.CaptureSince = &t
		}
		byID[id] = i
		d.Installations = append(d.Installations, i)
		return nil
	})
	if err != nil {
		return nil, err
	}
	steps := []func() error{
		func() error {
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
		},
		func() error {
			return q("fan-out", `SELECT installation_id, fanout_completeness, subagents_observed, turns, turns_live_only, turns_backfill_only, turns_mixed
				FROM fanout_distribution_by_source ORDER BY installation_id, subagents_observed, fanout_completeness`,
				func(r *sql.Rows) error {
					var id string
					var b FanoutBucket
					if err := r.Scan(&id, &b.Completeness, &b.Subagents, &b.Turns, &b.LiveOnly, &b.BackfillOnly, &b.Mixed); err != nil {
						return err
					}
					inst(id).Fanout = append(inst(id).Fanout, b)
					return nil
				})
		},
		func() error {
			return q("contexts by step", `SELECT installation_id, coalesce(workflow_step_name, workflow_step_id, '(no step)'), cards, cards_complete,
					sessions_per_card, contexts_per_card_complete, contexts_per_card_observed, subagent_contexts_live, subagent_contexts_backfill
				FROM contexts_by_step ORDER BY installation_id, workflow_step_position NULLS LAST, 2`,
				func(r *sql.Rows) error {
					var id string
					var s StepRow
					var complete sql.NullFloat64
					if err := r.Scan(&id, &s.Name, &s.Cards, &s.CardsComplete, &s.SessionsPerCard, &complete, &s.ContextsObserved, &s.SubagentsLive, &s.Backfill); err != nil {
						return err
					}
					if complete.Valid {
						v := complete.Float64
						s.ContextsComplete = &v
					}
					inst(id).Steps = append(inst(id).Steps, s)
					return nil
				})
		},
		func() error {
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
						v := avg.Float64
						u.AvgTokens = &v
					}
					inst(id).Usage = append(inst(id).Usage, u)
					return nil
				})
		},
		func() error {
			return q("writer health", `SELECT installation_id, evaluated_at, status, evaluated, shortfall, excess
				FROM writer_health_history ORDER BY installation_id, evaluated_at`,
				func(r *sql.Rows) error {
					var id string
					var h HealthPoint
					var s, e sql.NullInt64
					if err := r.Scan(&id, &h.At, &h.Status, &h.Evaluated, &s, &e); err != nil {
						return err
					}
					if s.Valid {
						h.Shortfall = &s.Int64
					}
					if e.Valid {
						h.Excess = &e.Int64
					}
					inst(id).Health = append(inst(id).Health, h)
					return nil
				})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return d, nil
}
