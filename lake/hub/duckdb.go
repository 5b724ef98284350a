package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	_ "github.com/duckdb/duckdb-go/v2" // "duckdb"

	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// DuckDBBuild says what BuildDuckDB served.
type DuckDBBuild struct {
	Path string
	// Tables are the Iceberg tables read, with the snapshot and the exact
	// files each DuckDB table was built from.
	Tables []BuiltTable
	// Runs is the number of ingested runs listed in the runs table.
	Runs int
}

// BuiltTable is one DuckDB table built from one Iceberg snapshot.
type BuiltTable struct {
	DuckDB     string // the DuckDB table
	Iceberg    string // namespace.table
	SnapshotID int64  // -1: the table has no snapshot yet
	Files      []string
	Rows       int64
	schema     *iceberg.Schema
}

// BuildDuckDB writes <dir>/warehouse.duckdb for the hub: what a local
// warehouse serves, over every ingested run. For each base table T the
// table T_history is materialized from the current snapshot of the
// Iceberg table T_history — from the snapshot's exact data-file list (the
// manifests' files, never a glob over a data folder, where uncommitted
// files of a commit in flight lie), each file checked against the size and
// row count the snapshot records — holding the rows of the runs in the
// hub's ledger (hub/ingested/: every table of the run committed). Then
// load.CreateServing creates what a local build creates over its _history
// tables, from the same view SQL files: runs (with ingested_at),
// current_runs, the base views T, disclosures and every analytic view with
// their comments and the current disclosures. lake_tables says which
// snapshot and files each table came from; each base view T is checked to
// hold exactly the rows of the Iceberg current table T's snapshot.
//
// The files are read from the bucket into <dir>/_lake_files/ (a cache:
// data files are immutable), so DuckDB needs no extension; a file:// bucket
// is read in place. The database holds its data itself, is built in
// <dir>/_build/ and renamed into place.
func (h *Hub) BuildDuckDB(ctx context.Context, dir string) (DuckDBBuild, error) {
	ctx = h.IO(ctx)
	out := DuckDBBuild{}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return out, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	cache := filepath.Join(dir, "_lake_files")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return out, err
	}
	build := filepath.Join(dir, "_build")
	os.RemoveAll(build)
	if err := os.MkdirAll(build, 0o755); err != nil {
		return out, err
	}
	tmp := filepath.Join(build, load.DatabaseFile)
	m, err := h.materialize(ctx, tmp, cache, nil)
	if err != nil {
		os.RemoveAll(build)
		return out, fmt.Errorf("build the hub's %s: %w", load.DatabaseFile, err)
	}
	out.Tables, out.Runs = m.tables, len(m.runs)
	final := filepath.Join(dir, load.DatabaseFile)
	if err := os.Remove(final + ".wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return out, err
	}
	os.RemoveAll(build)
	// The cache keeps only what the database was built from.
	if entries, err := os.ReadDir(cache); err == nil {
		for _, e := range entries {
			if p := filepath.Join(cache, e.Name()); !m.used[p] {
				os.Remove(p)
			}
		}
	}
	out.Path = final
	return out, nil
}

// materialized is what materialize built.
type materialized struct {
	tables []BuiltTable
	runs   []marker
	used   map[string]bool // the local files read
}

// materialize writes the hub's database at path (see BuildDuckDB). With
// only, it holds only those installations' runs, and reads only the
// history files whose installation_id bounds may hold one of them (the
// ingest's results tables, results.go), and the current tables are not
// checked.
func (h *Hub) materialize(ctx context.Context, path, cache string, only []string) (materialized, error) {
	out := materialized{used: map[string]bool{}}
	type plan struct {
		bt    BuiltTable
		local []string
		empty string // an empty file of the table (its schema) when local is empty
		view  bool   // a base view of the current runs, checked against bt
	}
	var plans []plan
	bases, err := h.BaseTables(ctx)
	if err != nil {
		return out, err
	}
	for _, base := range bases {
		if !slices.Contains(load.BaseTables(), base) {
			continue
		}
		ids := []table.Identifier{h.HistoryTable(base), h.CurrentTable(base)}
		var hp plan
		for i, id := range ids {
			tbl, err := h.loadTable(ctx, id)
			if err != nil {
				return out, err
			}
			if tbl == nil {
				return out, fmt.Errorf("%s: no such table", strings.Join(id, "."))
			}
			bt := BuiltTable{DuckDB: id[len(id)-1], Iceberg: strings.Join(id, "."), SnapshotID: -1, schema: tbl.Schema()}
			if snap := tbl.CurrentSnapshot(); snap != nil {
				bt.SnapshotID = snap.SnapshotID
			}
			files, err := liveDataFiles(ctx, tbl)
			if err != nil {
				return out, fmt.Errorf("%s: %w", bt.Iceberg, err)
			}
			instField, hasInst := tbl.Schema().FindFieldByName("installation_id")
			if i == 1 { // the current table: its files are only recorded
				for _, df := range files {
					bt.Files = append(bt.Files, df.FilePath())
					bt.Rows += df.Count()
					if len(hp.local) == 0 && hp.empty == "" && df.Count() == 0 {
						if hp.empty, err = h.localCopy(ctx, cache, df.FilePath(), df.FileSizeBytes()); err != nil {
							return out, fmt.Errorf("%s: %w", bt.Iceberg, err)
						}
						out.used[hp.empty] = true
					}
				}
				slices.Sort(bt.Files)
				if only == nil {
					plans = append(plans, hp, plan{bt: bt, view: true})
				} else {
					plans = append(plans, hp)
				}
				continue
			}
			for _, df := range files {
				if only != nil && hasInst && !mayHold(df, instField.ID, only) {
					continue
				}
				p, err := h.localCopy(ctx, cache, df.FilePath(), df.FileSizeBytes())
				if err != nil {
					return out, fmt.Errorf("%s: %w", bt.Iceberg, err)
				}
				out.used[p] = true
				bt.Files = append(bt.Files, df.FilePath())
				bt.Rows += df.Count()
				hp.local = append(hp.local, p)
			}
			slices.Sort(hp.local)
			slices.Sort(bt.Files)
			hp.bt = bt
		}
	}
	markers, err := h.markers(ctx, only)
	if err != nil {
		return out, err
	}
	out.runs = markers
	duck, err := load.OpenDuckDB(ctx)
	if err != nil {
		return out, err
	}
	defer duck.Close()
	conn := duck.Conn
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("%w\n  in: %.200s", err, q)
		}
		return nil
	}
	// The hub reads every installation's files at once (a local rebuild
	// one installation's): 64 MB ran out of memory on the first table of
	// 200 installations (lakebench); the hub's bound is the local
	// rebuild's retry limit.
	for _, q := range []string{`SET memory_limit = ` + quote(load.RetryMemoryLimit), `SET preserve_insertion_order = false`,
		`SET temp_directory = ` + quote(filepath.Join(filepath.Dir(path), "spill")),
		`ATTACH ` + quote(path) + ` AS warehouse ` + load.WarehouseStorage, `USE warehouse`,
		`CREATE TEMP TABLE ingested (installation_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL)`} {
		if err := exec(q); err != nil {
			return out, err
		}
	}
	var manifests []models.Manifest
	for _, mk := range markers {
		if err := exec(`INSERT INTO ingested VALUES (?, ?)`, mk.InstallationID, mk.RunID); err != nil {
			return out, err
		}
		manifests = append(manifests, mk.Manifest)
	}
	if err := exec(`CREATE TABLE lake_tables (duckdb_table VARCHAR, iceberg_table VARCHAR, snapshot_id BIGINT, files BIGINT, rows BIGINT, file_list VARCHAR[])`); err != nil {
		return out, err
	}
	var views []plan
	for _, p := range plans {
		if p.view {
			views = append(views, p)
			continue
		}
		var create string
		switch {
		case len(p.local) > 0:
			var n int64
			if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM read_parquet(`+sqlList(p.local)+`, union_by_name = true, hive_partitioning = false)`).Scan(&n); err != nil {
				return out, err
			}
			if n != p.bt.Rows {
				return out, fmt.Errorf("%s: %d rows read, the snapshot records %d", p.bt.DuckDB, n, p.bt.Rows)
			}
			// Only the ledger's runs: a run whose ingest is in flight has
			// rows in some tables and not yet in others.
			create = `CREATE TABLE ` + p.bt.DuckDB + ` AS SELECT h.* FROM read_parquet(` + sqlList(p.local) +
				`, union_by_name = true, hive_partitioning = false) h SEMI JOIN ingested i ON h.installation_id = i.installation_id AND h.run_id = i.run_id`
		case p.empty != "": // no rows yet: the schema of an empty file
			create = `CREATE TABLE ` + p.bt.DuckDB + ` AS SELECT * FROM read_parquet(` + quote(p.empty) + `) WHERE false`
		default: // no file yet: the table's schema, empty
			cols, err := duckColumns(p.bt.schema)
			if err != nil {
				return out, fmt.Errorf("%s: %w", p.bt.Iceberg, err)
			}
			create = `CREATE TABLE ` + p.bt.DuckDB + ` (` + cols + `)`
		}
		if err := exec(create); err != nil {
			return out, err
		}
		if err := exec(`INSERT INTO lake_tables VALUES (?, ?, ?, ?, ?, `+sqlList(p.bt.Files)+`)`,
			p.bt.DuckDB, p.bt.Iceberg, p.bt.SnapshotID, len(p.bt.Files), p.bt.Rows); err != nil {
			return out, err
		}
		out.tables = append(out.tables, p.bt)
	}
	if err := load.CreateServing(ctx, conn, manifests, 0); err != nil {
		return out, err
	}
	// Analysts' comments on the _history tables say where they came from.
	for _, bt := range out.tables {
		var c string
		if err := conn.QueryRowContext(ctx, `SELECT coalesce(comment, '') FROM duckdb_tables() WHERE database_name = 'warehouse' AND table_name = ?`, bt.DuckDB).Scan(&c); err != nil {
			return out, err
		}
		c += fmt.Sprintf(" Here: the ingested runs' rows of Iceberg table %s at snapshot %d (%d files).", bt.Iceberg, bt.SnapshotID, len(bt.Files))
		if err := exec(`COMMENT ON TABLE ` + bt.DuckDB + ` IS ` + quote(strings.TrimSpace(c))); err != nil {
			return out, err
		}
	}
	for _, p := range views {
		var n int64
		if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+p.bt.DuckDB).Scan(&n); err != nil {
			return out, err
		}
		if n != p.bt.Rows {
			return out, fmt.Errorf("%s: %d rows of the ingested runs, the Iceberg current table's snapshot %d records %d (is an ingest in flight? build again after it)", p.bt.DuckDB, n, p.bt.SnapshotID, p.bt.Rows)
		}
		if err := exec(`INSERT INTO lake_tables VALUES (?, ?, ?, ?, ?, `+sqlList(p.bt.Files)+`)`,
			p.bt.DuckDB, p.bt.Iceberg, p.bt.SnapshotID, len(p.bt.Files), p.bt.Rows); err != nil {
			return out, err
		}
		out.tables = append(out.tables, p.bt)
	}
	for _, q := range []string{
		`ALTER TABLE runs ADD COLUMN ingested_at TIMESTAMPTZ`,
		`COMMENT ON COLUMN runs.ingested_at IS 'When the hub ingested the run into the Iceberg tables (its marker, hub/ingested/<installation>/<run>.json).'`,
		`COMMENT ON TABLE lake_tables IS 'Which Iceberg snapshot and data files each table (T_history) and base view (T, checked against the Iceberg current table) of this database came from.'`,
	} {
		if err := exec(q); err != nil {
			return out, err
		}
	}
	for _, mk := range markers {
		if err := exec(`UPDATE runs SET ingested_at = ? WHERE installation_id = ? AND run_id = ?`, mk.IngestedAt, mk.InstallationID, mk.RunID); err != nil {
			return out, err
		}
	}
	if err := exec(`CHECKPOINT warehouse`); err != nil {
		return out, err
	}
	if err := exec(`USE memory`); err != nil {
		return out, err
	}
	return out, exec(`DETACH warehouse`)
}

// mayHold says whether a data file's installation_id bounds admit one of
// the installations (sorted); a file without bounds may hold any.
func mayHold(df iceberg.DataFile, field int, insts []string) bool {
	lo, hi := df.LowerBoundValues()[field], df.UpperBoundValues()[field]
	if lo == nil || hi == nil {
		return df.Count() > 0
	}
	i, _ := slices.BinarySearch(insts, string(lo))
	return i < len(insts) && insts[i] <= string(hi)
}

// localCopy returns a local path holding the data file at uri: the file
// itself on a file:// bucket, else a cached copy (named by the URI's hash;
// Iceberg data files are immutable) checked against the recorded size.
func (h *Hub) localCopy(ctx context.Context, cache, uri string, size int64) (string, error) {
	key, ok := h.bucket.KeyOf(uri)
	if !ok {
		return "", fmt.Errorf("data file %s lies outside the bucket %s", uri, h.bucket)
	}
	if h.bucket.Dir != "" {
		p := filepath.Join(h.bucket.Dir, filepath.FromSlash(h.bucket.Prefix+key))
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if !fi.Mode().IsRegular() || fi.Size() != size {
			return "", fmt.Errorf("data file %s: not a regular file of %d bytes", uri, size)
		}
		return p, nil
	}
	sum := sha256.Sum256([]byte(uri))
	p := filepath.Join(cache, hex.EncodeToString(sum[:16])+".parquet")
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		return p, nil
	}
	r, err := h.bucket.Blob().NewReader(ctx, key, nil)
	if err != nil {
		return "", err
	}
	defer r.Close()
	tmp := p + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("data file %s: %d bytes read, the snapshot records %d", uri, n, size)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// markers reads every ingested run's marker (only: of those
// installations), in installation and commit order.
func (h *Hub) markers(ctx context.Context, only []string) ([]marker, error) {
	insts := only
	if only == nil {
		var err error
		if _, insts, err = h.bucket.ListNames(ctx, ingestedPrefix); err != nil {
			return nil, err
		}
	}
	var out []marker
	for _, inst := range insts {
		if load.ValidName(inst) != nil {
			continue
		}
		names, _, err := h.bucket.ListNames(ctx, ingestedPrefix+inst+"/")
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			run, ok := strings.CutSuffix(n, ".json")
			if !ok || load.ValidName(run) != nil {
				continue
			}
			data, err := h.bucket.ReadSmall(ctx, ingestedPrefix+inst+"/"+n, 2*lake.MaxManifestBytes)
			if err != nil {
				return nil, err
			}
			var mk marker
			if err := json.Unmarshal(data, &mk); err != nil || mk.Format != markerFormat || mk.InstallationID != inst || mk.RunID != run ||
				lake.ValidateManifest(mk.Manifest, inst, run) != nil {
				return nil, fmt.Errorf("marker %s/%s is not valid", inst, run)
			}
			out = append(out, mk)
		}
	}
	slices.SortFunc(out, func(a, b marker) int {
		if c := strings.Compare(a.InstallationID, b.InstallationID); c != 0 {
			return c
		}
		return int(a.CommitSeq - b.CommitSeq)
	})
	return out, nil
}

func sqlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// duckColumns renders an Iceberg schema of primitive columns as DuckDB
// column definitions (for a table that has no data file yet).
func duckColumns(sc *iceberg.Schema) (string, error) {
	var cols []string
	for _, f := range sc.Fields() {
		var ty string
		switch f.Type.(type) {
		case iceberg.StringType:
			ty = "VARCHAR"
		case iceberg.Int64Type:
			ty = "BIGINT"
		case iceberg.Int32Type:
			ty = "INTEGER"
		case iceberg.BooleanType:
			ty = "BOOLEAN"
		case iceberg.TimestampTzType:
			ty = "TIMESTAMPTZ"
		case iceberg.TimestampType:
			ty = "TIMESTAMP"
		case iceberg.Float64Type:
			ty = "DOUBLE"
		case iceberg.Float32Type:
			ty = "FLOAT"
		case iceberg.DateType:
			ty = "DATE"
		default:
			return "", fmt.Errorf("column %s: type %s has no DuckDB mapping here", f.Name, f.Type)
		}
		cols = append(cols, `"`+strings.ReplaceAll(f.Name, `"`, `""`)+`" `+ty)
	}
	return strings.Join(cols, ", "), nil
}
