package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
	"github.com/kandev/kandev-extract/transform"
)

// sourceProbe is what opening a source and reading its keys and schema in
// one read-only snapshot tells, before any run: what check prints, and what
// run checks first for an installation new to the warehouse.
type sourceProbe struct {
	Dialect       models.Dialect
	Location      string // redacted
	KandevVersion *string
	SnapshotAt    time.Time
	State         models.InstallationState
	// Identity is what the installation's binding is compared with: the
	// same fields as the pipeline's (dialect, redacted location, and
	// kandev_meta.schema_initialized_at as the store's fingerprint).
	Identity load.SourceIdentity
	// Tables are the tables a run reads, with their row counts when asked.
	Tables []tableProbe
	// CountTime is how long the counts took.
	CountTime time.Duration
}

// tableProbe is one source table a run reads.
type tableProbe struct {
	Source  string `json:"source_table"`
	Table   string `json:"warehouse_table"`
	Present bool   `json:"present"`
	// Rows is the row count (nil when not counted or unknown). SQLite
	// counts exactly (count(*), which reads an index, not the rows);
	// PostgreSQL gives its planner's estimate (pg_class.reltuples, as of
	// the last VACUUM or ANALYZE) and reads nothing.
	Rows     *int64 `json:"rows"`
	Estimate bool   `json:"estimate,omitempty"`
}

// probeSource opens in's source, takes one read-only snapshot and reads
// the activation keys and the schema, and with counts the row counts of
// the tables a run reads. It writes nothing.
func probeSource(ctx context.Context, in pipeline.Installation, counts bool) (sourceProbe, error) {
	var p sourceProbe
	src, err := extract.OpenWith(ctx, in.Source, extract.OpenOptions{ConnectTimeout: in.ConnectTimeout, StallTimeout: in.StallTimeout})
	if err != nil {
		return p, err
	}
	defer src.Close()
	snap, err := src.Begin(ctx)
	if err != nil {
		return p, err
	}
	defer snap.Close()
	meta, err := snap.Meta(ctx)
	if err != nil {
		return p, err
	}
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		return p, err
	}
	p.Dialect, p.Location, p.SnapshotAt = src.Dialect(), src.Location(), snap.At()
	p.State = transform.Installation(meta, transform.Shape(schema))
	p.KandevVersion = p.State.KandevVersion
	p.Identity = load.SourceIdentity{Dialect: string(src.Dialect()), Location: src.Location(), Fingerprint: storeFingerprint(meta)}
	t0 := time.Now()
	for _, t := range sourceTables {
		tp := tableProbe{Source: t.source, Table: t.table}
		if tp.Present, err = snap.TableExists(ctx, t.source); err != nil {
			return p, err
		}
		if tp.Present {
			if err := canRead(ctx, snap, t.source); err != nil {
				return p, err
			}
		}
		if tp.Present && counts {
			if tp.Rows, err = countRows(ctx, snap, src.Dialect(), t.source); err != nil {
				return p, err
			}
			tp.Estimate = src.Dialect() == models.DialectPostgres
		}
		p.Tables = append(p.Tables, tp)
	}
	// Writer health reads the messages too.
	if present, err := snap.TableExists(ctx, models.SourceMessages); err != nil {
		return p, err
	} else if present {
		if err := canRead(ctx, snap, models.SourceMessages); err != nil {
			return p, err
		}
	}
	p.CountTime = time.Since(t0)
	return p, nil
}

// canRead runs a query on table that reads no row but needs what reading
// it needs (PostgreSQL checks the SELECT privilege when the query starts),
// so that check finds a missing grant before a run does (the counts read
// nothing: PostgreSQL's are the planner's estimates).
func canRead(ctx context.Context, snap models.Snapshot, table string) error {
	return snap.Query(ctx, `SELECT 1 FROM "`+table+`" LIMIT 0`, nil, func([]any) error { return nil })
}

// storeFingerprint is kandev_meta.schema_initialized_at, raw, as the
// pipeline's binding check takes it (pipeline's fingerprint; a test runs
// check against a real run's binding to keep the two in step).
func storeFingerprint(meta []models.MetaEntry) *string {
	for _, e := range meta {
		if e.Key == models.KeySchemaInitializedAt {
			v := e.Value
			return &v
		}
	}
	return nil
}

// countRows is a table's row count, cheaply: SQLite's count(*), which
// reads the smallest index, not the rows (the six tables of the medium
// benchmark store, 160,005 rows, 391 MiB: 68 ms with the file out of the
// page cache, 4 ms in it, against 5-30 s for the run; the large store
// has ten times the rows); PostgreSQL's estimate, never a scan (nil when
// the table was never vacuumed or analyzed).
func countRows(ctx context.Context, snap models.Snapshot, dialect models.Dialect, table string) (*int64, error) {
	q := `SELECT count(*) FROM "` + table + `"`
	var args []any
	if dialect == models.DialectPostgres {
		q = `SELECT CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END FROM pg_class c WHERE c.oid = to_regclass(quote_ident($1))`
		args = []any{table}
	}
	var n *int64
	err := snap.Query(ctx, q, args, func(row []any) error {
		if len(row) == 1 {
			if v, ok := row[0].(int64); ok && v >= 0 {
				n = &v
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count the rows of %s: %w", table, err)
	}
	return n, nil
}

// totals are the row counts by warehouse table, for the progress line: a
// table that is absent counts 0 (a run reads nothing from it).
func (p sourceProbe) totals() map[string]int64 {
	out := map[string]int64{}
	for _, t := range p.Tables {
		switch {
		case !t.Present:
			out[t.Table] = 0
		case t.Rows != nil:
			out[t.Table] = *t.Rows
		}
	}
	return out
}
