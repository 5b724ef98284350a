package load

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// CreateServing creates, in conn's current database, what a local
// warehouse serves over its _history tables, with the very statements a
// local rebuild runs: the runs table (the given committed runs, every one
// served, ordered by commit sequence per installation), current_runs
// (stale after staleAfter; 0: DefaultStaleAfter), the base views, the
// disclosures view, every analytic view of views/ with its COMMENT ONs, the
// base tables' and columns' comments, and the current disclosures appended
// to the disclosing views' comments. The _history table of every base
// table (BaseTables) must exist, holding exactly the given runs' rows.
//
// It is for a database built elsewhere from the same run files: the lake
// hub's warehouse.duckdb (kandev-lake), which so answers as a local
// warehouse does. A local warehouse's warehouse_build table is not created
// (it concerns the local file's replacement).
func CreateServing(ctx context.Context, conn *sql.Conn, runs []models.Manifest, staleAfter time.Duration) error {
	b := &build{ctx: ctx, conn: conn}
	rows := make([]runRow, 0, len(runs))
	for _, m := range runs {
		if m.Status != models.RunCommitted {
			return fmt.Errorf("run %s/%s: not committed", m.InstallationID, m.RunID)
		}
		rows = append(rows, runRow{m: m, served: true})
	}
	slices.SortStableFunc(rows, func(a, b runRow) int {
		return cmp.Or(cmp.Compare(a.m.InstallationID, b.m.InstallationID), cmp.Compare(a.m.CommitSeq, b.m.CommitSeq), cmp.Compare(a.m.RunID, b.m.RunID))
	})
	order := map[string]int64{}
	for i := range rows {
		order[rows[i].m.InstallationID]++
		rows[i].order = order[rows[i].m.InstallationID]
	}
	views, err := analyticViews()
	if err != nil {
		return err
	}
	if err := b.exec(`BEGIN TRANSACTION`); err != nil {
		return err
	}
	if err := createRuns(ctx, conn, rows, nil); err != nil {
		return err
	}
	if err := b.createCurrentRuns(staleAfter); err != nil {
		return err
	}
	if err := b.exec(`COMMIT`); err != nil {
		return err
	}
	_, err = b.createViews(views)
	return err
}

// AnalyticView is one analytic view of views/.
type AnalyticView struct {
	Name string
	// Discloses says the current disclosures are appended to its comment.
	Discloses bool
}

// AnalyticViews lists the analytic views in creation order (views/).
func AnalyticViews() ([]AnalyticView, error) {
	vs, err := analyticViews()
	if err != nil {
		return nil, err
	}
	out := make([]AnalyticView, len(vs))
	for i, v := range vs {
		out[i] = AnalyticView{Name: v.name, Discloses: v.disclose}
	}
	return out, nil
}

// DisclosuresLead joins a disclosing view's own comment and the current
// disclosures appended to it: the text before it is the view's own.
const DisclosuresLead = disclosuresLead

// WarehouseStorage are the ATTACH options a warehouse.duckdb is written
// with (row groups that fit DuckDB's memory bound, see warehouseStorage).
const WarehouseStorage = warehouseStorage
