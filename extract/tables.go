package extract

import (
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
