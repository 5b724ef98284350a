package load

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2" // also registers the "duckdb" driver

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/models"
)

// baseComments describe the base views (the catalog's table comments).
var baseComments = func() map[string]string {
	m := map[string]string{}
	for _, t := range models.Tables() {
		m[t.Name] = t.Comment
	}
	return m
}()

// Rebuilt says what the rebuilt warehouse.duckdb serves and what it does
// not.
type Rebuilt struct {
	// Problems are the manifests not served: quarantined (now or before),
	// refused, and committed runs whose files failed verification now.
	Problems []ManifestProblem
	// Expired are the runs retention removes once the new database is in
	// place (Prune); the database already leaves them out.
	Expired []models.Manifest
	// Analyst says which objects analysts had created in the old file were
	// carried into the new one, and where a copy of the old file keeps
	// what could not be.
	Analyst Carried
	// Pending is what waits because a file was held open by another
	// process (Windows): the new database when warehouse.duckdb could not
	// be replaced, current/ files, leftovers. The run's data is committed
	// either way; a later command finishes it (see pending.go).
	Pending Pending
	// MemoryRetry says why the database was built a second time with a
	// larger memory limit ("" when it was not).
	MemoryRetry string
	// Updated says the previous build was updated (incremental.go):
	// Added runs' rows inserted, Removed runs' rows deleted. When it was
	// not, FullReason says why the database was built in full.
	Updated        bool
	Added, Removed int
	FullReason     string
	// FromTemplate says a first build (FullReason "no warehouse.duckdb
	// yet") started from the built-in empty warehouse (template.go)
	// instead of from nothing: every retained run's rows inserted into it,
	// its views and comments kept when ViewsKept.
	FromTemplate bool
	// ViewsKept says the update kept the previous build's views and
	// comments, the same statements having created them (schemaKey); it
	// set only the comments that state the current disclosures.
	ViewsKept bool
	// StampError is why _database.json could not be written (the next
	// rebuild is then a full one); empty when it was.
	StampError string
	layout     string
	schema     string
}

// RebuildOptions are a rebuild's settings.
type RebuildOptions struct {
	// Keep is how many served runs retention keeps per installation (0:
	// all).
	Keep int
	// StaleAfter is the age at which data is disclosed as stale.
	StaleAfter time.Duration
	// Full builds from every retained run's files even when the previous
	// build could be updated.
	Full bool
}

// rebuildMemoryLimit is the memory limit of a rebuild's first attempt:
// DuckDBMemoryLimit, unless the test that makes it fail set another
// (internal/seams).
func rebuildMemoryLimit() string {
	if limit := seams.RebuildMemoryLimit(); limit != "" {
		return limit
	}
	return DuckDBMemoryLimit
}

// RetryMemoryLimit is the memory limit of DuckDB work done again after the
// first attempt ran out of memory (the rebuild; withMemoryRetry).
const RetryMemoryLimit = "512MB"

// isOutOfMemory says whether err is DuckDB's "Out of Memory" error.
func isOutOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
}

// Rebuild builds warehouse.duckdb anew from the valid manifests, every
// committed run's files verified against their recorded size and SHA-256
// first, and the runs retention will expire (keep served runs per
// installation; 0 keeps all) left out. The tables are materialized in the
// database, so it is self-contained: a moved or copied warehouse works,
// pruning never breaks a served database, and an analyst's open session
// keeps the old file's data until it reopens. The new file is built in
// _build/<build id>/, checked, and renamed over the old one after any
// write-ahead log of the old one is removed (DuckDB would otherwise replay
// it onto the new file); then it is opened once more to prove it is
// readable. When another process holds the old file open (Windows), the new
// one waits in _pending/ instead and Rebuilt.Pending says so: not an error.
func (w *Warehouse) Rebuild(ctx context.Context, opts RebuildOptions) (Rebuilt, error) {
	keep, staleAfter := opts.Keep, opts.StaleAfter
	var out Rebuilt
	set, err := ScanManifests(w.Dir)
	if err != nil {
		return out, err
	}
	out.Problems = append(w.quarantined(), set.Problems...)
	unserved := map[[2]string]bool{}
	rows := make([]runRow, 0, len(set.Valid))
	for _, m := range set.Valid {
		r := runRow{m: m}
		if m.Status == models.RunCommitted {
			if err := verifyRun(w.Dir, m); err != nil {
				r.problem = err.Error()
				unserved[[2]string{m.InstallationID, m.RunID}] = true
				out.Problems = append(out.Problems, ManifestProblem{
					Path:         filepath.ToSlash(filepath.Join(runsDir, m.InstallationID, m.RunID+".json")),
					Installation: m.InstallationID, Run: m.RunID, Action: ProblemUnverified, Reason: err.Error()})
			} else {
				r.served = true
			}
		}
		rows = append(rows, r)
	}
	out.Expired = expire(set.Valid, keep, unserved)
	gone := map[[2]string]bool{}
	for _, m := range out.Expired {
		gone[[2]string{m.InstallationID, m.RunID}] = true
	}
	files := map[string][]string{}
	order := map[string]int64{}
	kept := rows[:0]
	for _, r := range rows {
		if gone[[2]string{r.m.InstallationID, r.m.RunID}] {
			continue
		}
		order[r.m.InstallationID]++
		r.order = order[r.m.InstallationID]
		if r.served {
			for t := range r.m.Files {
				files[t] = append(files[t], filepath.Join(w.Dir, fileRel(t, r.m.InstallationID, r.m.RunID)))
			}
		}
		kept = append(kept, r)
	}
	rows = kept
	// Each rebuild works in a fresh directory of its own, so a leftover of
	// an earlier one that another process holds open never blocks it.
	now := time.Now()
	id := uniqueID(now)
	work := filepath.Join(buildDir, id)
	dir, err := w.mkdirs(work)
	if err != nil {
		return out, err
	}
	defer func() {
		if err := w.removeAll(work); err != nil {
			w.leftover(work, err)
		}
		w.remove(buildDir) // once empty
		out.Pending.Leftovers = w.Leftovers()
	}()
	tmp := filepath.Join(dir, DatabaseFile)
	final := filepath.Join(w.Dir, DatabaseFile)
	info := buildInfo{ID: id, At: now, Manifests: manifestsKey(set.Valid)}
	limit := rebuildMemoryLimit()
	if out.FullReason, err = w.update(ctx, &out, opts.Full, work, tmp, rows, files, staleAfter, info); err != nil {
		return out, fmt.Errorf("build %s: %w", final, err)
	}
	if !out.Updated && !out.FromTemplate {
		out.Analyst, out.layout, out.schema, err = buildInto(ctx, tmp, final, rows, out.Problems, files, staleAfter, info, limit)
	}
	if isOutOfMemory(err) {
		// Rows wider than any measured can need more than the limit for
		// one row group under construction (warehouseStorage): built again
		// from scratch with a larger one, and said so, rather than leaving
		// the database behind the committed runs.
		out.MemoryRetry = "the rebuild " + memoryRetryReason(limit, err)
		for _, f := range []string{DatabaseFile, DatabaseFile + ".wal"} {
			if err := w.remove(filepath.Join(work, f)); err != nil {
				return out, fmt.Errorf("build %s: %w", final, err)
			}
		}
		out.Analyst, out.layout, out.schema, err = buildInto(ctx, tmp, final, rows, out.Problems, files, staleAfter, info, RetryMemoryLimit)
	}
	if err != nil {
		return out, fmt.Errorf("build %s: %w", final, err)
	}
	hold := ""
	if len(out.Analyst.Lost) > 0 {
		if out.Analyst.Preserved, err = w.preserve(now); err != nil {
			if !isHeldOpen(err) {
				return out, fmt.Errorf("build %s: analyst objects could not be carried over, and the old file could not be kept: %w", final, err)
			}
			// Not replaced while its objects cannot be kept: it waits, and
			// the swap carries them again.
			hold = heldHint(DatabaseFile)
		}
	}
	if _, err := os.Lstat(tmp + ".wal"); err == nil {
		return out, fmt.Errorf("build %s: a write-ahead log remained after the checkpoint", final)
	}
	if err := syncFilePath(tmp); err != nil {
		return out, fmt.Errorf("build %s: %w", final, err)
	}
	sum, err := summarize(tmp)
	if err != nil {
		return out, fmt.Errorf("build %s: %w", final, err)
	}
	stamp := databaseStamp{Format: stampFormat, Layout: out.layout, Schema: out.schema, BuildID: id, Bytes: sum.Bytes, SHA256: sum.SHA256}
	if err := w.dropStamp(); err != nil {
		return out, fmt.Errorf("build %s: remove %s: %w", final, stampRel, err)
	}
	CrashPoint("database built")
	if out.Pending, err = w.install(ctx, tmp, id, hold); err != nil {
		return out, err
	}
	if out.Pending.Database == "" && stamp.Layout != "" {
		// Without it the next build is a full one: a warning, not a failure.
		if err := w.writeStamp(stamp); err != nil {
			out.StampError = err.Error()
		}
	}
	if err := w.publishCurrent(currentTarget(rows), work); err != nil {
		return out, fmt.Errorf("publish the current layout: %w", err)
	}
	if want, ok, err := readPendingCurrent(w.Dir); err == nil && ok {
		have, _ := ReadCurrentManifest(w.Dir)
		out.Pending.Current = behindCurrent(want, have)
	}
	return out, nil
}

// checkDatabase opens a database read-only and reads its runs table.
func checkDatabase(ctx context.Context, path string) error {
	duck, err := OpenDuckDB(ctx)
	if err != nil {
		return err
	}
	defer duck.Close()
	if _, err := duck.Conn.ExecContext(ctx, `ATTACH `+quote(path)+` AS warehouse (READ_ONLY)`); err != nil {
		return err
	}
	var n int64
	return duck.Conn.QueryRowContext(ctx, `SELECT count(*) FROM warehouse.runs`).Scan(&n)
}

func syncFilePath(p string) error {
	// Opened for writing: Windows flushes (FlushFileBuffers) only a handle
	// with write access.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// runRow is one valid manifest as the runs table lists it.
type runRow struct {
	m       models.Manifest
	order   int64 // position among the installation's valid manifests
	served  bool
	problem string
}

// buildInto builds the database at path from the served runs' files, and
// returns its layoutKey and schemaKey ("" when no run is served).
func buildInto(ctx context.Context, path, oldPath string, runs []runRow, problems []ManifestProblem, files map[string][]string, staleAfter time.Duration, info buildInfo, memoryLimit string) (carried Carried, layout, schema string, err error) {
	b, err := openBuild(ctx, path, memoryLimit)
	if err != nil {
		return carried, "", "", err
	}
	defer b.close()
	if layout, err = layoutKey(ctx, b.conn); err != nil {
		return carried, "", "", err
	}
	if err := b.createRunTables(runs, problems, info, staleAfter); err != nil {
		return carried, layout, "", err
	}
	views, err := analyticViews()
	if err != nil {
		return carried, layout, "", err
	}
	if len(files) > 0 {
		for _, t := range baseTables {
			list := files[t]
			if len(list) == 0 {
				return carried, layout, "", fmt.Errorf("no served file for table %s", t)
			}
			sort.Strings(list)
			if err := b.exec(`CREATE TABLE ` + t + `_history AS ` + historySelect(list)); err != nil {
				return carried, layout, "", err
			}
		}
		if schema, err = b.createViews(views); err != nil {
			return carried, layout, "", err
		}
	}
	if carried, err = carryAnalystObjects(ctx, b.conn, oldPath, views); err != nil {
		return carried, layout, schema, fmt.Errorf("analyst objects: %w", err)
	}
	return carried, layout, schema, b.finish()
}

// historySelect reads the run files of one table as its _history table
// holds them: every column of every file, by name. A change here changes
// what the tables hold, so it is part of layoutKey.
func historySelect(files []string) string {
	return `SELECT * FROM read_parquet(` + sqlList(files) + `, union_by_name = true, hive_partitioning = false)`
}

// build is a DuckDB connection with a database file under construction
// attached as warehouse (and in use).
type build struct {
	ctx  context.Context
	duck *DuckDB
	conn *sql.Conn
}

// openBuild attaches the database file at path (new, or a copy of the
// previous build) with the build's settings.
func openBuild(ctx context.Context, path, memoryLimit string) (*build, error) {
	// The rebuild reads every retained run: DuckDB's memory is bounded so
	// the run's peak stays flat however many runs are kept (it spills to
	// _build/ beside the new file instead).
	duck, err := OpenDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	b := &build{ctx: ctx, duck: duck, conn: duck.Conn}
	// FSST (string compression with trained symbol tables) is left out:
	// on the 1 M-row fact it was a fifth of the rebuild's CPU (6.1 → 4.8 s)
	// for a file a quarter smaller (207 → 155 MB); dictionary, RLE and
	// bit-packing still apply (docs/benchmarks.md).
	qs := []string{`SET preserve_insertion_order = false`, buildCompression,
		`SET temp_directory = ` + quote(filepath.Join(filepath.Dir(path), "spill")),
		`ATTACH ` + quote(path) + ` AS warehouse ` + warehouseStorage, `USE warehouse`}
	if memoryLimit != DuckDBMemoryLimit {
		qs = append([]string{`SET memory_limit = ` + quote(memoryLimit)}, qs...)
	}
	for _, q := range qs {
		if err := b.exec(q); err != nil {
			b.close()
			return nil, err
		}
	}
	return b, nil
}

// buildCompression is the compression setting of every build (part of
// layoutKey: it decides how the _history tables are stored).
const buildCompression = `SET disabled_compression_methods = 'fsst,dict_fsst'`

func (b *build) exec(q string, args ...any) error {
	if _, err := b.conn.ExecContext(b.ctx, q, args...); err != nil {
		return fmt.Errorf("%w\n  in: %s", err, firstLine(q))
	}
	return nil
}

func (b *build) close() { b.duck.Close() }

// createRunTables creates the runs and warehouse_build tables and the
// current_runs view.
func (b *build) createRunTables(runs []runRow, problems []ManifestProblem, info buildInfo, staleAfter time.Duration) error {
	// One transaction: DuckDB commits each autocommitted statement to its
	// write-ahead log, and a row per retained run paid that each time
	// (~60 ms of a nightly update with 30 runs retained).
	if err := b.exec(`BEGIN TRANSACTION`); err != nil {
		return err
	}
	if err := createRuns(b.ctx, b.conn, runs, problems); err != nil {
		return err
	}
	if err := createBuildInfo(b.ctx, b.conn, info); err != nil {
		return err
	}
	if err := b.createCurrentRuns(staleAfter); err != nil {
		return err
	}
	return b.exec(`COMMIT`)
}

// createCurrentRuns creates the current_runs view over runs, with its
// comments.
func (b *build) createCurrentRuns(staleAfter time.Duration) error {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	if err := b.exec(fmt.Sprintf(currentRunsSQL, staleAfter.Microseconds())); err != nil {
		return err
	}
	return b.exec(`COMMENT ON VIEW current_runs IS ` + quote(fmt.Sprintf(currentRunsComment, staleAfter)) + ";\n" + currentRunsColumnComments)
}

// createViews creates every view over the _history tables (which exist)
// and every comment, and returns their schemaKey.
func (b *build) createViews(views []viewFile) (string, error) {
	// The views and comments in one transaction: DuckDB commits each
	// autocommitted statement to its write-ahead log, and the ~50
	// views and comments of a build paid that each time. The tables
	// are not in it: a transaction holding them kept 45–65 MiB more
	// resident until its commit (medium store). The file is discarded
	// if the build fails.
	if err := b.exec(`BEGIN TRANSACTION`); err != nil {
		return "", err
	}
	created := viewStatements(views)
	for i, q := range created {
		if err := b.exec(q); err != nil {
			if i >= len(created)-len(views) {
				return "", fmt.Errorf("view %s: %w", views[i-(len(created)-len(views))].name, err)
			}
			return "", err
		}
	}
	comments, err := staticComments(b.ctx, b.conn)
	if err != nil {
		return "", err
	}
	if err := b.exec(comments); err != nil {
		return "", fmt.Errorf("comments: %w", err)
	}
	if err := discloseComments(b.ctx, b.conn, views); err != nil {
		return "", err
	}
	return schemaKey(created, comments), b.exec(`COMMIT`)
}

// viewStatements create the views over the _history tables, in order:
// the base views, the current disclosures, the analytic views (the last
// len(views)).
func viewStatements(views []viewFile) []string {
	out := make([]string, 0, len(baseTables)+1+len(views))
	for _, t := range baseTables {
		out = append(out, `CREATE VIEW `+t+` AS SELECT h.* FROM `+t+`_history h
			SEMI JOIN current_runs c ON h.installation_id = c.installation_id AND h.run_id = c.run_id`)
	}
	out = append(out, staleDisclosuresSQL)
	for _, v := range views {
		out = append(out, v.sql)
	}
	return out
}

// What a base view and its _history table hold, after the catalog's
// description of the table (which says neither).
const (
	currentScope = "The latest served run of each installation."
	historyScope = "Every retained served run."
)

// staticComments is the statement list of every comment on the base views
// and _history tables, none of which depends on the data.
func staticComments(ctx context.Context, conn *sql.Conn) (string, error) {
	var b strings.Builder
	for _, t := range slices.Sorted(maps.Keys(baseComments)) {
		c := baseComments[t]
		b.WriteString(`COMMENT ON VIEW ` + t + ` IS ` + quote(c+" "+currentScope) + ";\n")
		b.WriteString(`COMMENT ON TABLE ` + t + `_history IS ` + quote(c+" "+historyScope) + ";\n")
	}
	cols, err := columnComments(ctx, conn)
	if err != nil {
		return "", err
	}
	return b.String() + cols, nil
}

// schemaKey names the views and comments a build created: the SHA-256 of
// every statement that created them. An update whose previous build
// recorded the same key (_database.json) keeps them instead of creating
// them again: they are what these statements would create, over tables
// whose columns the update has checked.
func schemaKey(views []string, comments string) string {
	h := sha256.New()
	for _, q := range views {
		h.Write([]byte(q))
		h.Write([]byte{0})
	}
	h.Write([]byte(comments))
	return hex.EncodeToString(h.Sum(nil))
}

// finish checkpoints the database and detaches it.
func (b *build) finish() error {
	if err := b.exec(`CHECKPOINT warehouse`); err != nil {
		return err
	}
	if err := b.exec(`USE memory`); err != nil {
		return err
	}
	return b.exec(`DETACH warehouse`)
}

// staleDisclosuresSQL makes the current disclosures include stale_data,
// evaluated when queried (the data ages between runs).
const staleDisclosuresSQL = `CREATE OR REPLACE VIEW disclosures AS
	SELECT h.* FROM disclosures_history h SEMI JOIN current_runs c ON h.installation_id = c.installation_id AND h.run_id = c.run_id
	UNION ALL BY NAME
	SELECT installation_id, run_id, 'stale_data' AS rule, 'warning' AS severity,
		CASE WHEN latest_attempt_failed
			THEN 'The latest attempt (run ' || latest_attempt_run_id || ', ' || latest_attempt_status || ') did not become current: this data is from run ' || run_id || ', snapshot ' || strftime(snapshot_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') || ' (' || data_age_hours || ' h old). ' || coalesce('Its error: ' || latest_attempt_error, '')
			ELSE 'This data is ' || data_age_hours || ' h old (snapshot ' || strftime(snapshot_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') || '): older than the staleness threshold. Has the nightly run stopped?' END AS text,
		snapshot_at AS instant, NULL::BIGINT AS count
	FROM current_runs WHERE is_stale`

// DuckDBMemoryLimit bounds the memory DuckDB may use in a run (the rebuild,
// the deletion comparison); it spills to disk beyond it. DuckDB's RSS is
// about the limit plus 40 MiB whatever the limit (a CREATE TABLE … AS
// SELECT of the 1M-row fact: 132 MiB at 96 MB, 98 MiB at 64 MB, at the
// same speed), so the limit is the rebuild's peak RSS.
const DuckDBMemoryLimit = "64MB"

// DuckDBMemoryBytes is DuckDBMemoryLimit in bytes (DuckDB's MB is 10^6).
const DuckDBMemoryBytes = 64_000_000

// warehouseStorage are the options warehouse.duckdb is written with. A
// table under construction keeps its current row group uncompressed in
// memory, and that memory cannot be spilled: with DuckDB's default of
// 122,880 rows a row group, the fact of the grown store (wider rows than
// the large one's) needs more than 61 MB and the rebuild fails with "Out of
// Memory" at a 64 MB limit. A quarter of that (32,768 rows) fits with a
// margin of four: the file is ~8 % larger, the build ~0.2 s slower on the
// 1M-row fact (docs/benchmarks.md, change 41).
const warehouseStorage = `(ROW_GROUP_SIZE 32768)`

// DefaultStaleAfter is how old a snapshot may be before its data is
// disclosed as stale.
const DefaultStaleAfter = 36 * time.Hour

// currentRunsSQL picks each installation's latest served committed run (by
// commit sequence) and says how fresh it is: its snapshot, the newest
// source activity it read, its age now, and whether the installation's
// latest attempt failed. %d is the staleness threshold in microseconds.
const currentRunsSQL = `CREATE VIEW current_runs AS
	WITH served AS (
		SELECT installation_id, arg_max(run_id, run_order) AS run_id, arg_max(finished_at, run_order) AS finished_at,
			arg_max(commit_seq, run_order) AS commit_seq, arg_max(snapshot_at, run_order) AS snapshot_at,
			arg_max(newest_source_activity_at, run_order) AS newest_source_activity_at
		FROM runs WHERE status = 'committed' AND served GROUP BY installation_id),
	latest AS (
		SELECT installation_id, arg_max(run_id, run_order) AS latest_attempt_run_id,
			arg_max(status, run_order) AS latest_attempt_status, arg_max(error, run_order) AS latest_attempt_error,
			arg_max(finished_at, run_order) AS latest_attempt_finished_at
		FROM runs WHERE run_order IS NOT NULL GROUP BY installation_id)
	SELECT s.installation_id, s.run_id, s.finished_at, s.commit_seq, s.snapshot_at, s.newest_source_activity_at,
		l.latest_attempt_run_id, l.latest_attempt_status, l.latest_attempt_finished_at, l.latest_attempt_error,
		l.latest_attempt_run_id <> s.run_id AS latest_attempt_failed,
		round(date_diff('second', s.snapshot_at, now()) / 3600.0, 2) AS data_age_hours,
		l.latest_attempt_run_id <> s.run_id OR now() - s.snapshot_at > to_microseconds(%d) AS is_stale
	FROM served s JOIN latest l USING (installation_id)`

const currentRunsComment = "The latest served committed run of each installation, by commit sequence (never by clock): what every current view reads; join it on installation_id to know how old a current view's data is. " +
	"is_stale is true when the installation's latest attempt did not become current (it failed, or its files failed verification) or the snapshot is older than %s; the stale_data disclosure then applies."

// currentRunsColumnComments give each column of current_runs its meaning
// (docs/warehouse.md); they run with the view's comment, as one statement
// list inside createRunTables' transaction.
const currentRunsColumnComments = `COMMENT ON COLUMN current_runs.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN current_runs.run_id IS 'The latest served committed run of the installation (highest run_order): what every current view reads.';
COMMENT ON COLUMN current_runs.finished_at IS 'When the served run (run_id) finished.';
COMMENT ON COLUMN current_runs.commit_seq IS 'The served run''s commit sequence number; NULL for a version 1 manifest.';
COMMENT ON COLUMN current_runs.snapshot_at IS 'The served run''s snapshot instant: the data is the source as it was then.';
COMMENT ON COLUMN current_runs.newest_source_activity_at IS 'The newest updated_at the served run read in the source.';
COMMENT ON COLUMN current_runs.latest_attempt_run_id IS 'The installation''s latest recorded attempt (committed or failed, highest run_order).';
COMMENT ON COLUMN current_runs.latest_attempt_status IS 'The latest attempt''s status (committed or failed).';
COMMENT ON COLUMN current_runs.latest_attempt_finished_at IS 'When the latest attempt finished.';
COMMENT ON COLUMN current_runs.latest_attempt_error IS 'The latest attempt''s error when it failed; NULL otherwise.';
COMMENT ON COLUMN current_runs.latest_attempt_failed IS 'True when the latest attempt is not the served run (it failed, or its files failed verification): the data is older than the last attempt.';
COMMENT ON COLUMN current_runs.data_age_hours IS 'Hours from snapshot_at to now (when queried), to two decimals.';
COMMENT ON COLUMN current_runs.is_stale IS 'True when latest_attempt_failed, or the snapshot is older than the staleness threshold (--stale-after, default 36 h): the stale_data disclosure then applies.';
`

// runsColumnComments give each column of runs its meaning
// (docs/warehouse.md); they run with the table's comment, as one statement
// list inside createRunTables' transaction.
const runsColumnComments = `COMMENT ON COLUMN runs.run_id IS 'The run''s id (sortable: UTC start + random suffix).';
COMMENT ON COLUMN runs.installation_id IS 'Stable installation name (--installation); every row carries it.';
COMMENT ON COLUMN runs.status IS 'committed, failed, or for a manifest that is not used at all quarantined (it failed validation and was moved to _quarantine/) or refused (a manifest version this build does not know).';
COMMENT ON COLUMN runs.error IS 'Why the run failed; NULL for a committed run (a quarantined or refused manifest says why in problem).';
COMMENT ON COLUMN runs.started_at IS 'When the run started; NULL for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.finished_at IS 'When the run finished; NULL for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.duration_ms IS 'Run duration in milliseconds; NULL for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.source_dialect IS 'sqlite or postgres; NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.source_location IS 'Source path or DSN with any password redacted; NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.kandev_version IS 'kandev_meta.kandev_version of the source; NULL when absent or not read (a failed run, a quarantined or refused manifest).';
COMMENT ON COLUMN runs.snapshot_at IS 'When the run''s snapshot was taken; NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.activation_state IS 'Installation activation state at the run; NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.subagent_rows IS 'fact_subagent_context rows written; NULL for a failed run and for a quarantined or refused manifest, and for a store with no subagent table (unknown, not zero).';
COMMENT ON COLUMN runs.rejected_values IS 'Values refused (see rejects); NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.extractor_version IS 'kandev-extract version that wrote the run; NULL for a failed run and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.commit_seq IS 'The installation''s commit sequence number recorded in the manifest (one more than the highest before it, failed runs included); NULL for manifests written before sequences existed (version 1) and for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.run_order IS 'Position of the run among the installation''s valid manifests: by commit_seq, version 1 manifests first by finish time. "Latest" means the highest run_order, never the latest clock. NULL for a quarantined or refused manifest.';
COMMENT ON COLUMN runs.served IS 'True for a committed run whose files match their recorded size and SHA-256 and whose data is in this database.';
COMMENT ON COLUMN runs.checksums_verified IS 'True when the run''s files were checked against recorded SHA-256 sums (version 1 manifests recorded none: checked for presence only); NULL for runs that are not committed.';
COMMENT ON COLUMN runs.problem IS 'Why a run is not served (a file''s size or SHA-256 differs, a file is missing, the manifest failed validation or has an unknown version); NULL otherwise.';
COMMENT ON COLUMN runs.newest_source_activity_at IS 'The newest updated_at the run read in any source table (its high waters): the newest activity in the store at its snapshot; NULL for a failed run and for a quarantined or refused manifest, and when the run read no updated_at.';
`

func createRuns(ctx context.Context, conn *sql.Conn, runs []runRow, problems []ManifestProblem) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE runs (
		run_id VARCHAR NOT NULL, installation_id VARCHAR NOT NULL, status VARCHAR NOT NULL, error VARCHAR,
		started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, duration_ms BIGINT,
		source_dialect VARCHAR, source_location VARCHAR, kandev_version VARCHAR, snapshot_at TIMESTAMPTZ,
		activation_state VARCHAR, subagent_rows BIGINT, rejected_values BIGINT, extractor_version VARCHAR,
		commit_seq BIGINT, run_order BIGINT, served BOOLEAN NOT NULL, checksums_verified BOOLEAN, problem VARCHAR,
		newest_source_activity_at TIMESTAMPTZ)`); err != nil {
		return err
	}
	for _, r := range runs {
		m := r.m
		var (
			dialect, location, version, activation, extractor any
			snapshot, subagents, rejected, seq, verified      any
			newest                                            any
		)
		if p := m.Provenance; p != nil {
			dialect, location, activation, extractor = string(p.SourceDialect), p.SourceLocation, string(p.ActivationState), p.ExtractorVersion
			if p.KandevVersion != nil {
				version = *p.KandevVersion
			}
			snapshot, rejected = p.SnapshotAt, p.RejectedValues
			var top time.Time
			for _, t := range p.Tables {
				if t.HighWater != nil && t.HighWater.After(top) {
					top = *t.HighWater
				}
			}
			if !top.IsZero() {
				newest = top
			}
			if t, ok := p.Tables[models.TableFact]; ok && p.TableShape != models.ShapeAbsent {
				subagents = t.RowsWritten
			}
		}
		if m.CommitSeq > 0 {
			seq = m.CommitSeq
		}
		if m.Status == models.RunCommitted {
			verified = r.served && m.Checksums != nil
		}
		var errText, problem any
		if m.Error != "" {
			errText = m.Error
		}
		if r.problem != "" {
			problem = r.problem
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.RunID, m.InstallationID, m.Status, errText, m.StartedAt, m.FinishedAt, m.DurationMS,
			dialect, location, version, snapshot, activation, subagents, rejected, extractor,
			seq, r.order, r.served, verified, problem, newest); err != nil {
			return fmt.Errorf("runs: %w", err)
		}
	}
	// Manifests that are not served at all, under the names their paths
	// give (nothing they say is used).
	for _, p := range problems {
		if p.Action == ProblemUnverified || p.Installation == "" || p.Run == "" {
			continue
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO runs (run_id, installation_id, status, served, problem) VALUES (?, ?, ?, false, ?)`,
			p.Run, p.Installation, p.Action, p.Reason); err != nil {
			return fmt.Errorf("runs: %w", err)
		}
	}
	_, err := conn.ExecContext(ctx, `COMMENT ON TABLE runs IS 'Every recorded run per installation: committed, failed, or a manifest not served (quarantined, refused). run_order follows the commit sequence, never the clock. served is false for a committed run whose files no longer match their recorded size and SHA-256 (problem says why): the installation''s previous served run stays current.';
`+runsColumnComments)
	return err
}

// disclosuresLead joins a disclosing view's own comment and the current
// disclosures (analyticViews refuses a view whose text holds it, so the
// comment before it is the view's own).
const disclosuresLead = " Disclosures for the current data: "

// discloseComments appends the current disclosures to the comment of every
// view that discloses, in place of those a kept view's comment had.
func discloseComments(ctx context.Context, conn *sql.Conn, views []viewFile) error {
	disclosure, err := disclosureText(ctx, conn)
	if err != nil {
		return err
	}
	for _, v := range views {
		if !v.disclose {
			continue
		}
		var c sql.NullString
		if err := conn.QueryRowContext(ctx, `SELECT comment FROM duckdb_views() WHERE database_name = current_database() AND view_name = ?`, v.name).Scan(&c); err != nil {
			return fmt.Errorf("comment %s: %w", v.name, err)
		}
		own, _, _ := strings.Cut(c.String, disclosuresLead)
		want := own
		if disclosure != "" {
			want = own + disclosuresLead + disclosure
		}
		if want == c.String {
			continue
		}
		if _, err := conn.ExecContext(ctx, `COMMENT ON VIEW `+v.name+` IS `+quote(want)); err != nil {
			return err
		}
	}
	return nil
}

// disclosureText renders the current disclosures as one paragraph.
func disclosureText(ctx context.Context, conn *sql.Conn) (string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT installation_id, rule, text FROM disclosures ORDER BY installation_id, rule`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var inst, rule, text string
		if err := rows.Scan(&inst, &rule, &text); err != nil {
			return "", err
		}
		parts = append(parts, "["+inst+"] "+rule+": "+text)
	}
	return strings.Join(parts, " "), rows.Err()
}

func sqlList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quote(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
