package extract

import (
	"context"
	"fmt"

	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// Spec is the scan of a catalog table's source (t.Source): the columns the
// catalog says it reads, with their caps, and the SQL of the columns the
// source computes inside the snapshot (extract/scans), every one of them
// counted in SQL. featurePresent says whether the store has
// task_session_subagents: without it the per-turn and per-session counts
// are 0. Snapshot.Scan renders it per dialect. A run scans through a
// ScanPlan instead (PlanScans), which leaves out what the store's schema
// proves and takes the fan-out from the message pass where it can, with
// the same results: Spec is what it falls back to.
func Spec(t *models.Table, featurePresent bool) models.TableSpec {
	return scans.Spec(t, featurePresent)
}

// fanoutKeyColumn is the column a turns or sessions scan adds when its
// fan-out comes from the pass (evidence.FanoutKeyExpr; dropped before the
// row is handed on).
const fanoutKeyColumn = "kx_fanout_key"

// ScanSpec is the scan of a catalog table under the plan, with the fan-out
// from fo when the plan allows it for the table (fo nil: the SQL join);
// fill, when not nil, wraps the row function: it sets the five fan-out
// cells from fo and drops the key column.
func (p *ScanPlan) ScanSpec(t *models.Table, fo *evidence.Fanout) (models.TableSpec, func(fn func(row []any) error) func(row []any) error) {
	if fo == nil || !p.PassFanout(t.Source) {
		return p.Spec(t, false), nil
	}
	spec := p.Spec(t, true)
	idCol := spec.Column("id")
	spec.Columns = append(spec.Columns, models.ColumnSpec{Name: fanoutKeyColumn, Kind: models.KindText,
		Expr: evidence.FanoutKeyExpr(p.dialect, spec.Columns[idCol].MaxBytes)})
	var cells [5]int
	for i, name := range scans.FanoutColumns {
		cells[i] = spec.Column(name)
	}
	keyCol := len(spec.Columns) - 1
	return spec, func(fn func(row []any) error) func(row []any) error {
		return func(row []any) error {
			c, err := fo.Row(t.Source, row[keyCol], row[idCol])
			if err != nil {
				return fmt.Errorf("%s: %w", t.Source, err)
			}
			row[cells[0]], row[cells[1]], row[cells[2]], row[cells[3]], row[cells[4]] = c.Observed, c.Live, c.Backfill, c.Distinct, c.Overlap
			if keyCol == len(row)-1 {
				return fn(row[:keyCol])
			}
			// A caller added columns after the key (tests): drop it in place.
			copy(row[keyCol:], row[keyCol+1:])
			return fn(row[:len(row)-1])
		}
	}
}

// Scan streams the scan of a catalog table under the plan to fn, a row in
// the catalog's Read order, as models.Snapshot.Scan does; the turns' and
// sessions' fan-out comes from fo when the plan allows it (fo nil: the SQL
// join).
func (p *ScanPlan) Scan(ctx context.Context, snap models.Snapshot, t *models.Table, fo *evidence.Fanout, fn func(row []any) error) error {
	spec, fill := p.ScanSpec(t, fo)
	if fill != nil {
		fn = fill(fn)
	}
	return snap.Scan(ctx, spec, fn)
}
