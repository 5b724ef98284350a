package load

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// The publish design does not depend on replacing an open file. On Windows
// a file another process holds open cannot be renamed over or deleted, so
// each step that would do so treats "held open" as work to finish later:
//
//   - warehouse.duckdb held open: the rebuilt database waits, whole and
//     checked, at _pending/<build id>.duckdb; the run has committed its data
//     and exits 0 with a warning. The next command that touches the
//     warehouse (run, status, query, report) swaps it in once nothing holds
//     warehouse.duckdb, carrying analysts' objects from the file it
//     replaces. A pending database is swapped in only when it was built from
//     exactly the manifests now committed and is newer than the database in
//     place; otherwise it is discarded (the next run rebuilds).
//   - a current/ file held open: that installation's current/ files all stay
//     at the previous run (never some tables of one run and some of
//     another); the layout wanted is kept in _pending/current.json and
//     retried the same way.
//   - a leftover held open (a run's files retention removes, _staging/,
//     _build/, a superseded pending database): left, reported, and removed
//     by a later run; new work always gets fresh names.
//
// _pending/ holds only names the tool derives: <build id>.duckdb (uniqueID)
// and current.json.
const (
	pendingDir         = "_pending"
	pendingCurrentFile = "current.json"
)

// Pending is what waits because a file was held open by another process.
type Pending struct {
	// Database is the rebuilt database waiting to replace warehouse.duckdb
	// (relative to the warehouse, with forward slashes); empty when none.
	Database string `json:"database,omitempty"`
	// DatabaseBuiltAt is when it was built.
	DatabaseBuiltAt *time.Time `json:"database_built_at,omitempty"`
	// Reason says what holds the swap back.
	Reason string `json:"reason,omitempty"`
	// Current lists the installations whose current/ files are still at an
	// earlier run than the served one.
	Current []PendingCurrent `json:"current,omitempty"`
	// Leftovers are files or directories not removed yet.
	Leftovers []string `json:"leftovers,omitempty"`
}

// PendingCurrent is one installation whose current/ files wait.
type PendingCurrent struct {
	Installation string `json:"installation"`
	// AtRun is the run its current/ files are at ("" when it has none).
	AtRun string `json:"at_run"`
	// WantRun is the run they are to be at ("" when the installation is to
	// leave current/).
	WantRun string `json:"want_run"`
}

// Empty reports whether nothing waits.
func (p Pending) Empty() bool {
	return p.Database == "" && len(p.Current) == 0 && len(p.Leftovers) == 0
}

// Messages are the warnings to log, one per waiting step.
func (p Pending) Messages() []string {
	var out []string
	if p.Database != "" {
		out = append(out, p.Reason+": the run's data is committed, and the rebuilt database waits at "+
			p.Database+"; it replaces warehouse.duckdb as soon as nothing holds that file open, at the next 'kandev-extract run', 'status', 'query' or 'report'. "+
			"Until then warehouse.duckdb shows the previous runs ('kandev-extract status', 'query' and 'report' already read the new database)")
	}
	for _, c := range p.Current {
		at := c.AtRun
		if at == "" {
			at = "none"
		}
		want := c.WantRun
		if want == "" {
			want = "none (no longer served)"
		}
		out = append(out, "current/ files of installation "+c.Installation+" are open in another process: all of them stay at run "+at+
			" (wanted: "+want+"); swapped by the next command that touches the warehouse")
	}
	if len(p.Leftovers) > 0 {
		out = append(out, "not removed yet, open in another process (a later run removes them; nothing served uses them): "+strings.Join(p.Leftovers, ", "))
	}
	return out
}

// buildInfo is the warehouse_build table's one row.
type buildInfo struct {
	ID        string
	At        time.Time
	Manifests string
}

const warehouseBuildComment = "When and from which manifests this database file was built: one row. build_id orders builds (a later build sorts higher); manifests names each installation's latest manifest (installation=commit_seq:run_id), which a waiting database must match before it replaces warehouse.duckdb."

// warehouseBuildColumnComments give each column of warehouse_build its
// meaning (docs/warehouse.md); they run with the table's comment, as one
// statement list inside createRunTables' transaction.
const warehouseBuildColumnComments = `COMMENT ON COLUMN warehouse_build.build_id IS 'The build''s id (UTC instant to the nanosecond + random suffix): a later build sorts higher. A waiting database is named _pending/<build_id>.duckdb.';
COMMENT ON COLUMN warehouse_build.built_at IS 'When the database was built.';
COMMENT ON COLUMN warehouse_build.manifests IS 'Each installation''s latest run manifest when it was built, as installation=commit_seq:run_id, comma-separated and sorted. A waiting database replaces warehouse.duckdb only while this still matches the warehouse''s manifests.';
`

func createBuildInfo(ctx context.Context, conn *sql.Conn, b buildInfo) error {
	for _, q := range []string{
		`CREATE TABLE warehouse_build (build_id VARCHAR NOT NULL, built_at TIMESTAMPTZ NOT NULL, manifests VARCHAR NOT NULL)`,
		`COMMENT ON TABLE warehouse_build IS ` + quote(warehouseBuildComment) + ";\n" + warehouseBuildColumnComments,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("warehouse_build: %w", err)
		}
	}
	_, err := conn.ExecContext(ctx, `INSERT INTO warehouse_build VALUES (?, ?, ?)`, b.ID, b.At.UTC(), b.Manifests)
	return err
}

// readBuildInfo reads a database's warehouse_build row, read-only.
func readBuildInfo(ctx context.Context, path string) (buildInfo, error) {
	var b buildInfo
	duck, err := OpenDuckDB(ctx)
	if err != nil {
		return b, err
	}
	defer duck.Close()
	conn := duck.Conn
	if _, err := conn.ExecContext(ctx, `ATTACH `+quote(path)+` AS warehouse (READ_ONLY)`); err != nil {
		return b, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH warehouse`)
	err = conn.QueryRowContext(ctx, `SELECT build_id, built_at, manifests FROM warehouse.warehouse_build`).Scan(&b.ID, &b.At, &b.Manifests)
	return b, err
}

// manifestsKey names each installation's latest valid manifest (by commit
// sequence, then run id): installation=commit_seq:run_id, sorted. Retention
// never removes an installation's latest manifest, so the key changes only
// when a run records a new one.
func manifestsKey(ms []models.Manifest) string {
	latest := map[string]models.Manifest{}
	for _, m := range ms {
		l, ok := latest[m.InstallationID]
		if !ok || m.CommitSeq > l.CommitSeq || m.CommitSeq == l.CommitSeq && m.RunID > l.RunID {
			latest[m.InstallationID] = m
		}
	}
	parts := make([]string, 0, len(latest))
	for inst, m := range latest {
		parts = append(parts, inst+"="+strconv.FormatInt(m.CommitSeq, 10)+":"+m.RunID)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// pendingRel is where a built database waits.
func pendingRel(id string) string { return filepath.Join(pendingDir, id+".duckdb") }

// pendingIDs lists the build ids of the databases waiting in _pending/,
// oldest first. Entries that are not ours are ignored.
func pendingIDs(dir string) ([]string, error) {
	names, err := readDirEntries(dir, pendingDir, func(e fs.DirEntry) bool { return e.Type().IsRegular() })
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, ".duckdb"); ok && validID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// install puts a built (checked, synced) database in place of
// warehouse.duckdb, or, when that file or its write-ahead log is held open
// by another process (or hold is set), keeps it in _pending/ and says so.
// Older waiting databases are superseded by it and removed.
func (w *Warehouse) install(ctx context.Context, built, id string, hold string) (Pending, error) {
	var p Pending
	final := filepath.Join(w.Dir, DatabaseFile)
	ids, _ := pendingIDs(w.Dir)
	for _, old := range ids {
		w.discardPending(pendingRel(old))
	}
	reason := hold
	if reason == "" {
		// The old file's log would be replayed onto the new file: it goes
		// first. A crash between the two leaves the old file without its
		// uncheckpointed changes (an analyst's, never the extractor's).
		err := w.remove(DatabaseFile + ".wal")
		switch {
		case isHeldOpen(err):
			reason = heldHint(DatabaseFile + ".wal")
		case err != nil:
			return p, fmt.Errorf("build %s: remove the old database's write-ahead log: %w", final, err)
		}
	}
	if reason == "" {
		if _, err := w.inside(DatabaseFile, true); err != nil {
			return p, err
		}
		err := renameFile(built, final)
		switch {
		case err == nil:
			syncDir(w.Dir)
			CrashPoint("database in place")
			if err := checkDatabase(ctx, final); err != nil {
				return p, fmt.Errorf("the rebuilt %s cannot be read: %w", final, err)
			}
			return p, nil
		case isHeldOpen(err):
			reason = heldHint(DatabaseFile)
		default:
			return p, fmt.Errorf("build %s: %w", final, err)
		}
	}
	dir, err := w.mkdirs(pendingDir)
	if err != nil {
		return p, fmt.Errorf("keep the rebuilt database for later (%s): %w", reason, err)
	}
	if err := renameFile(built, filepath.Join(dir, id+".duckdb")); err != nil {
		return p, fmt.Errorf("keep the rebuilt database for later (%s): %w", reason, err)
	}
	syncDir(dir)
	return w.pendingState(ctx, reason), nil
}

// discardPending removes a waiting database (and a write-ahead log a
// killed swap may have left beside it); one held open elsewhere is left for
// a later command, and never chosen again (a newer build supersedes it, or
// it fails the same checks).
func (w *Warehouse) discardPending(rel string) {
	for _, r := range []string{rel + ".wal", rel} {
		if err := w.remove(r); err != nil {
			w.leftover(r, err)
		}
	}
}

// Settled is what Settle did.
type Settled struct {
	// Swapped is the waiting database now in place ("" when none was).
	Swapped string
	// Discarded are waiting databases that were not swapped in, with why.
	Discarded []string
	// Analyst is what happened to analysts' objects of the replaced file.
	Analyst Carried
	// Pending is what still waits.
	Pending Pending
	// Problem is why finishing failed other than by a held file (the next
	// run's rebuild supersedes what waits); empty when it did not.
	Problem string
}

// Notes are what settling did, for the log: swaps and discards.
func (s Settled) Notes() []string {
	var out []string
	if s.Swapped != "" {
		out = append(out, "the database that waited at "+s.Swapped+" is now warehouse.duckdb")
	}
	if len(s.Analyst.Lost) > 0 && s.Analyst.Preserved != "" {
		out = append(out, "analyst objects not carried into the swapped-in warehouse.duckdb; the old file is kept at "+s.Analyst.Preserved+": "+strings.Join(s.Analyst.Lost, "; "))
	}
	for _, d := range s.Discarded {
		out = append(out, "a waiting database was not swapped in: "+d)
	}
	if s.Problem != "" {
		out = append(out, "finishing what waited failed: "+s.Problem)
	}
	return out
}

// settle finishes what waits: swaps in the newest waiting database (when
// it matches the committed manifests and is newer than the database in
// place, carrying analysts' objects from the file it replaces), brings
// current/ to the served runs, and removes superseded waiting databases.
// The caller holds the lock.
func (w *Warehouse) settle(ctx context.Context) (Settled, error) {
	var s Settled
	final := filepath.Join(w.Dir, DatabaseFile)
	ids, err := pendingIDs(w.Dir)
	if err != nil {
		return s, err
	}
	reason := ""
	if len(ids) > 0 {
		newest := ids[len(ids)-1]
		for _, old := range ids[:len(ids)-1] {
			s.Discarded = append(s.Discarded, pendingRel(old)+" (superseded by a newer build)")
			w.discardPending(pendingRel(old))
		}
		rel := pendingRel(newest)
		path, err := w.inside(rel, false)
		if err != nil {
			return s, err
		}
		why := ""
		info, err := readBuildInfo(ctx, path)
		if err != nil {
			why = "it cannot be read: " + firstLine(err.Error())
		} else if in, ierr := readBuildInfo(ctx, final); ierr == nil && in.ID >= info.ID {
			why = "the database in place (build " + in.ID + ") is newer"
		} else if set, err := ScanManifests(w.Dir); err != nil {
			return s, err
		} else if key := manifestsKey(set.Valid); key != info.Manifests {
			why = "runs were recorded after it was built (it has " + info.Manifests + "; the warehouse has " + key + "): the next run rebuilds"
		}
		if why != "" {
			s.Discarded = append(s.Discarded, filepath.ToSlash(rel)+" ("+why+")")
			w.discardPending(rel)
		} else {
			reason, err = w.swapIn(ctx, path, newest, &s.Analyst)
			if err != nil {
				return s, err
			}
			if reason == "" {
				s.Swapped = filepath.ToSlash(rel)
			}
		}
	}
	if err := w.retryCurrent(); err != nil {
		return s, err
	}
	w.remove(pendingDir) // once empty
	s.Pending = w.pendingState(ctx, reason)
	return s, nil
}

// swapIn replaces warehouse.duckdb with the waiting database at path after
// carrying into it the analysts' objects of the file it replaces (which may
// have changed since it was built). It returns why it could not ("" when
// done).
func (w *Warehouse) swapIn(ctx context.Context, path, id string, carried *Carried) (string, error) {
	final := filepath.Join(w.Dir, DatabaseFile)
	if _, err := os.Lstat(final); err == nil {
		c, err := recarry(ctx, path, final)
		if err != nil {
			// A reader holds the waiting file (DuckDB's own lock): later.
			return "the waiting database could not be opened to carry analysts' objects: " + firstLine(err.Error()), nil
		}
		*carried = c
		if c.unreadable {
			// Open for writing elsewhere: replacing it now would lose what
			// is being written. Later.
			return "warehouse.duckdb is open for writing in another process", nil
		}
		if len(c.Lost) > 0 {
			if c.Preserved, err = w.preserveAs("warehouse-before-" + id + ".duckdb"); err != nil {
				if isHeldOpen(err) {
					return heldHint(DatabaseFile), nil
				}
				return "", fmt.Errorf("analyst objects could not be carried over, and the old file could not be kept: %w", err)
			}
			*carried = c
		}
	}
	if err := w.remove(DatabaseFile + ".wal"); err != nil {
		if isHeldOpen(err) {
			return heldHint(DatabaseFile + ".wal"), nil
		}
		return "", fmt.Errorf("remove the old database's write-ahead log: %w", err)
	}
	if _, err := w.inside(DatabaseFile, true); err != nil {
		return "", err
	}
	if err := renameFile(path, final); err != nil {
		if isHeldOpen(err) {
			return heldHint(DatabaseFile), nil
		}
		return "", fmt.Errorf("swap in %s: %w", path, err)
	}
	syncDir(w.Dir)
	if err := checkDatabase(ctx, final); err != nil {
		return "", fmt.Errorf("the swapped-in %s cannot be read: %w", final, err)
	}
	return "", nil
}

// recarry makes the analysts' objects of the waiting database at path those
// of the database at oldPath now: it drops the ones carried when it was
// built and carries them again.
func recarry(ctx context.Context, path, oldPath string) (Carried, error) {
	var c Carried
	duck, err := OpenDuckDB(ctx)
	if err != nil {
		return c, err
	}
	defer duck.Close()
	conn := duck.Conn
	exec := func(q string) error { _, err := conn.ExecContext(ctx, q); return err }
	if err := exec(`ATTACH ` + quote(path) + ` AS warehouse ` + warehouseStorage); err != nil {
		return c, err
	}
	if err := exec(`USE warehouse`); err != nil {
		return c, err
	}
	views, err := analyticViews()
	if err != nil {
		return c, err
	}
	var drops []string
	rows, err := conn.QueryContext(ctx, `SELECT 'SCHEMA', schema_name, schema_name FROM duckdb_schemas() WHERE database_name = 'warehouse' AND NOT internal
			AND schema_name NOT IN ('main', 'pg_catalog', 'information_schema')
		UNION ALL SELECT 'VIEW', schema_name, view_name FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal AND NOT temporary AND schema_name = 'main'
		UNION ALL SELECT 'TABLE', schema_name, table_name FROM duckdb_tables() WHERE database_name = 'warehouse' AND NOT internal AND NOT temporary AND schema_name = 'main'`)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var kind, schema, name string
		if err := rows.Scan(&kind, &schema, &name); err != nil {
			rows.Close()
			return c, err
		}
		switch {
		case kind == "SCHEMA":
			drops = append(drops, `DROP SCHEMA warehouse.`+ident(name)+` CASCADE`)
		case !ours(name, views):
			drops = append(drops, `DROP `+kind+` IF EXISTS warehouse.main.`+ident(name))
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return c, err
	}
	// Views first (they may use the tables).
	sort.SliceStable(drops, func(i, j int) bool {
		return strings.HasPrefix(drops[i], "DROP VIEW") && !strings.HasPrefix(drops[j], "DROP VIEW")
	})
	for _, q := range drops {
		if err := exec(q); err != nil {
			return c, fmt.Errorf("%w\n  in: %s", err, q)
		}
	}
	if c, err = carryAnalystObjects(ctx, conn, oldPath, views); err != nil {
		return c, err
	}
	if err := exec(`CHECKPOINT warehouse`); err != nil {
		return c, err
	}
	if err := exec(`USE memory`); err != nil {
		return c, err
	}
	return c, exec(`DETACH warehouse`)
}

// pendingState reports what waits now: the newest waiting database (with
// reason, when known), the installations whose current/ files are behind
// the layout wanted, and this process's leftovers.
func (w *Warehouse) pendingState(ctx context.Context, reason string) Pending {
	p := PendingState(ctx, w.Dir)
	if p.Database != "" && reason != "" {
		p.Reason = reason
	}
	p.Leftovers = w.Leftovers()
	return p
}

// PendingState reads what waits in a warehouse without changing anything
// (for status while a run holds the lock): the newest waiting database and
// the installations whose current/ files are behind. Leftovers are known
// only to the process that met them.
func PendingState(ctx context.Context, dir string) Pending {
	var p Pending
	if ids, err := pendingIDs(dir); err == nil && len(ids) > 0 {
		id := ids[len(ids)-1]
		p.Database = filepath.ToSlash(pendingRel(id))
		p.Reason = "warehouse.duckdb was held open by another process when it was to be replaced"
		if _, err := os.Lstat(filepath.Join(dir, DatabaseFile)); err != nil {
			p.Reason = "warehouse.duckdb is missing"
		}
		if info, err := readBuildInfo(ctx, filepath.Join(dir, pendingRel(id))); err == nil {
			t := info.At.UTC()
			p.DatabaseBuiltAt = &t
		}
	}
	if want, ok, err := readPendingCurrent(dir); err == nil && ok {
		have, _ := ReadCurrentManifest(dir)
		p.Current = behindCurrent(want, have)
	}
	return p
}

// behindCurrent lists the installations whose current/ entry differs from
// the one wanted.
func behindCurrent(want, have CurrentManifest) []PendingCurrent {
	var out []PendingCurrent
	seen := map[string]bool{}
	for inst, e := range want.Installations {
		seen[inst] = true
		if h := have.Installations[inst]; h.RunID != e.RunID {
			out = append(out, PendingCurrent{Installation: inst, AtRun: h.RunID, WantRun: e.RunID})
		}
	}
	for inst, h := range have.Installations {
		if !seen[inst] {
			out = append(out, PendingCurrent{Installation: inst, AtRun: h.RunID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Installation < out[j].Installation })
	return out
}

// readPendingCurrent reads _pending/current.json: the current/ layout the
// latest rebuild wanted and could not complete.
func readPendingCurrent(dir string) (CurrentManifest, bool, error) {
	var doc CurrentManifest
	f, err := openNoFollow(filepath.Join(dir, pendingDir, pendingCurrentFile))
	if errors.Is(err, fs.ErrNotExist) {
		return doc, false, nil
	}
	if err != nil {
		return doc, false, err
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, maxManifestBytes)).Decode(&doc); err != nil {
		return doc, false, err
	}
	if doc.Format != CurrentManifestFormat || doc.Version != 1 {
		return doc, false, fmt.Errorf("%s: not a current layout document", pendingCurrentFile)
	}
	return doc, true, nil
}

// SettlePending is what status, query and report do first: when something
// waits (a rebuilt database, current/ files) and no run holds the
// warehouse, it takes the lock for the moment it needs and finishes what
// it can (Settle). When nothing waits it changes nothing and takes no lock;
// when a run holds the lock, or the lock cannot be taken (a warehouse this
// user may only read), it only reports. Database is the newest database to
// read: the waiting one when there still is one newer than
// warehouse.duckdb, else warehouse.duckdb.
func SettlePending(ctx context.Context, dir string) (s Settled, database string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return s, "", err
	}
	ids, _ := pendingIDs(abs)
	if _, err := os.Lstat(filepath.Join(abs, pendingDir, pendingCurrentFile)); len(ids) == 0 && err != nil {
		return s, filepath.Join(abs, DatabaseFile), nil
	}
	if f, lerr := openLock(filepath.Join(abs, lockFile)); lerr == nil {
		w := &Warehouse{Dir: abs, lock: f}
		s, err = w.settle(ctx)
		w.Close()
		if err != nil {
			return s, filepath.Join(abs, DatabaseFile), err
		}
	} else {
		s.Pending = PendingState(ctx, abs)
	}
	return s, NewestDatabase(ctx, abs), nil
}

// NewestDatabase is the database a reader should open: the waiting one
// when it is newer than warehouse.duckdb, else warehouse.duckdb. It
// changes nothing.
func NewestDatabase(ctx context.Context, dir string) string {
	database := filepath.Join(dir, DatabaseFile)
	ids, _ := pendingIDs(dir)
	if len(ids) == 0 {
		return database
	}
	p := filepath.Join(dir, pendingRel(ids[len(ids)-1]))
	served, serr := readBuildInfo(ctx, database)
	if info, err := readBuildInfo(ctx, p); err == nil && (serr != nil || info.ID > served.ID) {
		return p
	}
	return database
}
