package main

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// What the warehouse directory records that warehouse.duckdb does not show
// (yet): runs whose manifests were written but whose rebuild failed, and
// failures that could only go to _attempts.journal (a full disk). status
// shows them, so that a failed night never leaves the last good run as the
// "latest". Every file read here is bounded and validated (load).

// Where status found a run (statusRun.RecordedIn).
const (
	inDatabase = "warehouse.duckdb"
	inManifest = "manifest"
	inJournal  = "journal"
)

// statusOrder orders an installation's runs by commit sequence, never by
// clock: a journaled failure (rank 0) took no sequence of its own, so it
// comes before the run (rank 1) that later took the one it would have had;
// journaled failures of one sequence follow the journal's order.
type statusOrder struct {
	seq     int64
	rank    int
	journal int64
}

func newestFirst(a, b statusRun) int {
	return cmp.Or(cmp.Compare(b.order.seq, a.order.seq), cmp.Compare(b.order.rank, a.order.rank), cmp.Compare(b.order.journal, a.order.journal))
}

// statusBehind says that warehouse.duckdb does not serve an installation's
// latest committed run: its rebuild failed (or has not run yet).
type statusBehind struct {
	CommittedRun string `json:"committed_run"`
	// ServesRun is the run warehouse.duckdb serves ("" when none).
	ServesRun string `json:"serves_run"`
	// Error is the failed rebuild's, from the journal (null when it could
	// not be recorded).
	Error *string `json:"error"`
	Text  string  `json:"text"`
}

// addDiskRecords merges into sts what the manifests and the journal of dir
// hold beyond the database, installations the database does not know
// included. busy: a run holds the lock, so a committed run not in the
// database yet is being rebuilt, not behind.
func addDiskRecords(dir string, sts []installStatus, last int, busy bool) ([]installStatus, error) {
	set, err := load.ScanManifests(dir)
	if err != nil {
		return sts, err
	}
	journal, err := load.ReadAttempts(dir)
	if err != nil {
		return sts, err
	}
	var rebuild *load.Attempt
	for i := range journal {
		if journal[i].Kind == load.AttemptRebuildFailed {
			rebuild = &journal[i]
		}
	}
	byName := map[string]int{}
	for i := range sts {
		byName[sts[i].Installation] = i
	}
	extra := map[string][]statusRun{}
	onDisk := map[[2]string]bool{}
	for _, m := range set.Valid {
		onDisk[[2]string{m.InstallationID, m.RunID}] = true
		if i, ok := byName[m.InstallationID]; ok && sts[i].known[m.RunID] {
			continue
		}
		r := statusRun{RunID: m.RunID, Status: string(m.Status), FinishedAt: m.FinishedAt.UTC(), DurationMS: m.DurationMS,
			RecordedIn: inManifest, order: statusOrder{seq: m.CommitSeq, rank: 1}}
		if m.Error != "" {
			e := m.Error
			r.Error = &e
		}
		if p := m.Provenance; p != nil {
			if t, ok := p.Tables[models.TableFact]; ok && p.TableShape != models.ShapeAbsent {
				n := t.RowsWritten
				r.SubagentRows = &n
			}
		}
		extra[m.InstallationID] = append(extra[m.InstallationID], r)
	}
	for _, a := range journal {
		if a.Kind != load.AttemptFailed || onDisk[[2]string{a.Installation, a.RunID}] {
			continue
		}
		if i, ok := byName[a.Installation]; ok && sts[i].known[a.RunID] {
			continue
		}
		e := a.Error
		extra[a.Installation] = append(extra[a.Installation], statusRun{RunID: a.RunID, Status: string(models.RunFailed),
			FinishedAt: a.FinishedAt.UTC(), DurationMS: a.DurationMS, Error: &e, RecordedIn: inJournal,
			order: statusOrder{seq: a.CommitSeq, journal: a.Seq}})
	}
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		i, ok := byName[name]
		if !ok {
			sts = append(sts, installStatus{Installation: name, Disclosures: []statusDisclosure{}, Runs: []statusRun{}, currentKnown: true})
			i = len(sts) - 1
		}
		st := &sts[i]
		runs := append(extra[name], st.Runs...)
		slices.SortStableFunc(runs, newestFirst)
		// The database's latest attempt stays the latest unless the
		// directory records a newer one.
		if st.LatestAttempt == nil || newestFirst(runs[0], *st.LatestAttempt) < 0 {
			latest := runs[0]
			st.LatestAttempt = &latest
			st.LatestAttemptFailed = latest.Status != string(models.RunCommitted)
		}
		// The newest committed run the database does not serve.
		for _, r := range runs {
			if r.RecordedIn != inManifest || r.Status != string(models.RunCommitted) || busy {
				continue
			}
			b := &statusBehind{CommittedRun: r.RunID}
			if st.CurrentRun != nil {
				b.ServesRun = st.CurrentRun.RunID
			}
			if rebuild != nil && rebuild.RunID >= r.RunID {
				e := rebuild.Error
				b.Error = &e
			}
			serves := "no run of it"
			if b.ServesRun != "" {
				serves = "run " + b.ServesRun
			}
			b.Text = fmt.Sprintf("run %s committed; warehouse.duckdb still serves %s; will rebuild next run", b.CommittedRun, serves)
			st.DatabaseBehind = b
			break
		}
		st.Runs = runs[:min(len(runs), last)]
	}
	return sts, nil
}
