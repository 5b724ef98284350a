package hub

import (
	"context"
	"crypto/sha256"
	"database/sql"
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

// BuildDuckDB writes <dir>/warehouse.duckdb for the hub: for each base
// table T, the tables T_history and T materialized from the current
// snapshots of the Iceberg tables T_history and T — from each snapshot's
// exact data-file list (the manifests' files, never a glob over a data
// folder, where uncommitted files of a commit in flight lie), each file
// checked against the size and row count the snapshot records — plus
// runs (every ingested run, from the hub's markers), current_runs and
// lake_tables (which snapshot each table is). The files are read from the
// bucket into <dir>/_lake_files/ (a cache: data files are immutable), so
// DuckDB needs no extension; a file:// bucket is read in place. The
// database holds its data itself, is built in <dir>/_build/ and renamed
// into place.
//
// The analytic views of a local warehouse (fanout_by_turn, ...) are not
// built here yet: their SQL is unexported in package load (see the TODO in
// the report: load.BuildDatabase).
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
	used := map[string]bool{}
	type plan struct {
		bt    BuiltTable
		local []string
	}
	var plans []plan
	bases, err := h.BaseTables(ctx)
	if err != nil {
		return out, err
	}
	for _, base := range bases {
		for _, pair := range [][2]any{{base + "_history", h.HistoryTable(base)}, {base, h.CurrentTable(base)}} {
			name, id := pair[0].(string), pair[1].(table.Identifier)
			tbl, err := h.loadTable(ctx, id)
			if err != nil {
				return out, err
			}
			if tbl == nil {
				continue
			}
			bt := BuiltTable{DuckDB: name, Iceberg: strings.Join(id, "."), SnapshotID: -1, schema: tbl.Schema()}
			if snap := tbl.CurrentSnapshot(); snap != nil {
				bt.SnapshotID = snap.SnapshotID
			}
			files, err := liveDataFiles(ctx, tbl)
			if err != nil {
				return out, fmt.Errorf("%s: %w", bt.Iceberg, err)
			}
			var local []string
			for _, df := range files {
				p, err := h.localCopy(ctx, cache, df.FilePath(), df.FileSizeBytes())
				if err != nil {
					return out, fmt.Errorf("%s: %w", bt.Iceberg, err)
				}
				used[p] = true
				bt.Files = append(bt.Files, df.FilePath())
				bt.Rows += df.Count()
				local = append(local, p)
			}
			slices.Sort(local)
			slices.Sort(bt.Files)
			plans = append(plans, plan{bt, local})
		}
	}
	markers, err := h.markers(ctx)
	if err != nil {
		return out, err
	}
	build := filepath.Join(dir, "_build")
	os.RemoveAll(build)
	if err := os.MkdirAll(build, 0o755); err != nil {
		return out, err
	}
	tmp := filepath.Join(build, load.DatabaseFile)
	err = func() error {
		db, err := sql.Open("duckdb", "")
		if err != nil {
			return err
		}
		defer db.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		exec := func(q string, args ...any) error {
			_, err := conn.ExecContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("%w\n  in: %.200s", err, q)
			}
			return nil
		}
		if err := exec(`ATTACH ` + quote(tmp) + ` AS warehouse`); err != nil {
			return err
		}
		if err := exec(`USE warehouse`); err != nil {
			return err
		}
		if err := exec(`CREATE TABLE lake_tables (duckdb_table VARCHAR, iceberg_table VARCHAR, snapshot_id BIGINT, files BIGINT, rows BIGINT, file_list VARCHAR[])`); err != nil {
			return err
		}
		for _, p := range plans {
			create := `CREATE TABLE ` + p.bt.DuckDB + ` AS SELECT * FROM read_parquet(` + sqlList(p.local) +
				`, union_by_name = true, hive_partitioning = false)`
			if len(p.local) == 0 { // no file yet: the table's schema, empty
				cols, err := duckColumns(p.bt.schema)
				if err != nil {
					return fmt.Errorf("%s: %w", p.bt.Iceberg, err)
				}
				create = `CREATE TABLE ` + p.bt.DuckDB + ` (` + cols + `)`
			}
			if err := exec(create); err != nil {
				return err
			}
			var n int64
			if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+p.bt.DuckDB).Scan(&n); err != nil {
				return err
			}
			if n != p.bt.Rows {
				return fmt.Errorf("%s: %d rows read, the snapshot records %d", p.bt.DuckDB, n, p.bt.Rows)
			}
			if err := exec(`COMMENT ON TABLE ` + p.bt.DuckDB + ` IS ` + quote(fmt.Sprintf("Iceberg table %s at snapshot %d (%d files), materialized.", p.bt.Iceberg, p.bt.SnapshotID, len(p.bt.Files)))); err != nil {
				return err
			}
			if err := exec(`INSERT INTO lake_tables VALUES (?, ?, ?, ?, ?, `+sqlList(p.bt.Files)+`)`,
				p.bt.DuckDB, p.bt.Iceberg, p.bt.SnapshotID, len(p.bt.Files), p.bt.Rows); err != nil {
				return err
			}
			out.Tables = append(out.Tables, p.bt)
		}
		if err := exec(`CREATE TABLE runs (installation_id VARCHAR NOT NULL, run_id VARCHAR NOT NULL, commit_seq BIGINT,
			started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, snapshot_at TIMESTAMPTZ, source_dialect VARCHAR,
			kandev_version VARCHAR, extractor_version VARCHAR, ingested_at TIMESTAMPTZ)`); err != nil {
			return err
		}
		for _, mk := range markers {
			m := mk.Manifest
			var dialect, version, extractor, snapshot any
			if p := m.Provenance; p != nil {
				dialect, extractor, snapshot = string(p.SourceDialect), p.ExtractorVersion, p.SnapshotAt
				if p.KandevVersion != nil {
					version = *p.KandevVersion
				}
			}
			if err := exec(`INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.InstallationID, m.RunID, m.CommitSeq,
				m.StartedAt, m.FinishedAt, snapshot, dialect, version, extractor, mk.IngestedAt); err != nil {
				return err
			}
		}
		out.Runs = len(markers)
		if err := exec(`COMMENT ON TABLE runs IS 'Every run the hub ingested into the Iceberg tables, from its marker (hub/ingested/<installation>/<run>.json).'`); err != nil {
			return err
		}
		if slices.ContainsFunc(out.Tables, func(b BuiltTable) bool { return b.DuckDB == "fact_installation_state" }) {
			if err := exec(`CREATE VIEW current_runs AS SELECT DISTINCT installation_id, run_id FROM fact_installation_state`); err != nil {
				return err
			}
			if err := exec(`COMMENT ON VIEW current_runs IS 'The run each installation''s current tables hold (the Iceberg current-state tables).'`); err != nil {
				return err
			}
		}
		if err := exec(`CHECKPOINT warehouse`); err != nil {
			return err
		}
		if err := exec(`USE memory`); err != nil {
			return err
		}
		return exec(`DETACH warehouse`)
	}()
	if err != nil {
		os.RemoveAll(build)
		return out, fmt.Errorf("build the hub's %s: %w", load.DatabaseFile, err)
	}
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
			if p := filepath.Join(cache, e.Name()); !used[p] {
				os.Remove(p)
			}
		}
	}
	out.Path = final
	return out, nil
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

// markers reads every ingested run's marker, in installation and commit
// order.
func (h *Hub) markers(ctx context.Context) ([]marker, error) {
	_, insts, err := h.bucket.ListNames(ctx, ingestedPrefix)
	if err != nil {
		return nil, err
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
