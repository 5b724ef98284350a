package hub

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// Results tables: each analytic view of a local warehouse (load's
// views/*.sql: fanout_by_turn, subagent_usage, the period views, ...)
// committed as an Iceberg table of the same name next to the base tables,
// so that every engine reading the catalog gets the disclosure rules'
// answers, not raw facts. They are computed by the hub at ingest — DuckDB
// over the committed snapshots' exact file lists, with the same view SQL
// as a local warehouse (materialize, load.CreateServing) — for the
// installations whose latest run changed, and each such installation's
// partition is replaced, as in the current tables. The view's comment is
// the table's "comment" property, its columns' comments the fields' docs.
//
// The disclosures are the base table disclosures (the current one per
// installation); its stale_data rule is evaluated when queried (now
// against the snapshot), which a table computed at ingest cannot hold: an
// engine other than the hub's DuckDB judges staleness from
// installations.snapshot_at.

// PropResultsOf names, on a results table, the analytic view it holds.
const PropResultsOf = "kandev.results-of"

// ResultsReport says what the results commit did.
type ResultsReport struct {
	// Installations are those whose results were computed.
	Installations []string
	// Tables are the results tables committed.
	Tables  int
	Commits int
	Retries int
}

// resultsViews are the analytic views committed as results tables.
func resultsViews() ([]string, error) {
	vs, err := load.AnalyticViews()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out, nil
}

// ResultsTables lists the results tables in the catalog, in name order.
func (h *Hub) ResultsTables(ctx context.Context) ([]string, error) {
	views, err := resultsViews()
	if err != nil {
		return nil, err
	}
	var out []string
	for id, err := range h.cat.ListTables(ctx, h.ns) {
		if err != nil {
			return nil, fmt.Errorf("catalog: list tables: %w", err)
		}
		if n := id[len(id)-1]; slices.Contains(views, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// CommitResults computes and commits the results tables of the
// installations given (the runs just ingested) and of every installation
// whose results lag its current run (an ingest stopped before its results
// were committed, or a results table that is new).
func (h *Hub) CommitResults(ctx context.Context, ingested []string, workers int) (ResultsReport, error) {
	ctx = h.IO(ctx)
	workers = max(workers, 1)
	var rep ResultsReport
	views, err := resultsViews()
	if err != nil {
		return rep, err
	}
	// The run each installation's current tables hold (metadata only).
	state, err := h.loadTable(ctx, h.CurrentTable(models.TableInstallation))
	if err != nil || state == nil {
		return rep, err
	}
	holds, err := h.currentFiles(ctx, state)
	if err != nil {
		return rep, err
	}
	affected := map[string]bool{}
	for _, i := range ingested {
		affected[i] = true
	}
	for _, v := range views {
		tbl, err := h.loadTable(ctx, table.Identifier{h.cfg.Namespace, v})
		if err != nil {
			return rep, err
		}
		var have map[string]current
		if tbl != nil {
			if have, err = h.currentFiles(ctx, tbl); err != nil {
				return rep, err
			}
		}
		for inst, c := range holds {
			if have[inst].run != c.run {
				affected[inst] = true
			}
		}
	}
	if len(affected) == 0 {
		return rep, nil
	}
	insts := slices.Sorted(func(yield func(string) bool) {
		for i := range affected {
			if load.ValidName(i) == nil && !yield(i) {
				return
			}
		}
	})
	rep.Installations = insts
	work, err := os.MkdirTemp("", "kandev-lake-results-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(work)
	dbPath := filepath.Join(work, load.DatabaseFile)
	cache := filepath.Join(work, "files")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return rep, err
	}
	m, err := h.materialize(ctx, dbPath, cache, insts)
	if err != nil {
		return rep, fmt.Errorf("results: %w", err)
	}
	runOf := map[string]marker{}
	for _, mk := range m.runs { // in commit order: the last is the latest
		runOf[mk.InstallationID] = mk
	}
	insts = slices.DeleteFunc(insts, func(i string) bool { _, ok := runOf[i]; return !ok })
	if len(insts) == 0 {
		return rep, nil
	}
	exported, err := exportResults(ctx, dbPath, work, views, insts)
	if err != nil {
		return rep, fmt.Errorf("results: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	var mu sync.Mutex
	for _, ex := range exported {
		g.Go(func() error {
			commits, retries, err := h.commitResultsTable(gctx, ex, runOf)
			mu.Lock()
			defer mu.Unlock()
			rep.Commits += commits
			rep.Retries += retries
			if commits > 0 {
				rep.Tables++
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return rep, err
	}
	h.log.Info("results committed", "installations", len(insts), "tables", rep.Tables)
	return rep, nil
}

// exportedView is one view's rows, one local Parquet file per
// installation, with its comments.
type exportedView struct {
	view    string
	comment string
	docs    map[string]string
	files   map[string][]string // installation -> its local files (DuckDB may write several)
}

// exportResults writes each view's rows of the installations as Parquet
// files per installation (one, or several where DuckDB's parallel writers
// split a large one; an empty one for an installation without rows: its
// partition then records the run it was computed from).
func exportResults(ctx context.Context, dbPath, work string, views, insts []string) ([]exportedView, error) {
	duck, err := load.OpenDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	defer duck.Close()
	conn := duck.Conn
	for _, q := range []string{`SET memory_limit = ` + quote(load.RetryMemoryLimit), `SET preserve_insertion_order = false`, `SET temp_directory = ` + quote(filepath.Join(work, "spill")),
		`ATTACH ` + quote(dbPath) + ` AS warehouse (READ_ONLY)`, `USE warehouse`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(work, "results"), 0o755); err != nil {
		return nil, err
	}
	var out []exportedView
	for _, v := range views {
		ex := exportedView{view: v, docs: map[string]string{}, files: map[string][]string{}}
		var c sql.NullString
		if err := conn.QueryRowContext(ctx, `SELECT comment FROM duckdb_views() WHERE database_name = 'warehouse' AND view_name = ?`, v).Scan(&c); err != nil {
			return nil, fmt.Errorf("view %s: %w", v, err)
		}
		own, _, _ := strings.Cut(c.String, load.DisclosuresLead)
		ex.comment = own
		rows, err := conn.QueryContext(ctx, `SELECT column_name, coalesce(comment, '') FROM duckdb_columns() WHERE database_name = 'warehouse' AND table_name = ?`, v)
		if err != nil {
			return nil, err
		}
		hasInst := false
		for rows.Next() {
			var n, d string
			if err := rows.Scan(&n, &d); err != nil {
				rows.Close()
				return nil, err
			}
			hasInst = hasInst || n == "installation_id"
			if d != "" {
				ex.docs[n] = d
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if !hasInst {
			return nil, fmt.Errorf("view %s has no installation_id column", v)
		}
		dir := filepath.Join(work, "results", v)
		q := `COPY (SELECT * FROM ` + v + ` WHERE installation_id IN (SELECT unnest(?::VARCHAR[]))) TO ` + quote(dir) +
			` (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (installation_id), WRITE_PARTITION_COLUMNS true, FILENAME_PATTERN 'part-{i}')`
		if _, err := conn.ExecContext(ctx, q, insts); err != nil {
			return nil, fmt.Errorf("view %s: %w", v, err)
		}
		for _, inst := range insts {
			d := filepath.Join(dir, "installation_id="+inst)
			f := filepath.Join(d, "part-0.parquet")
			if _, err := os.Stat(f); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return nil, err
				}
				if _, err := conn.ExecContext(ctx, `COPY (SELECT * FROM `+v+` WHERE false) TO `+quote(f)+` (FORMAT parquet, COMPRESSION zstd)`); err != nil {
					return nil, fmt.Errorf("view %s: %w", v, err)
				}
			} else if err != nil {
				return nil, err
			}
			all, err := filepath.Glob(filepath.Join(d, "part-*.parquet"))
			if err != nil {
				return nil, err
			}
			slices.Sort(all)
			ex.files[inst] = all
		}
		out = append(out, ex)
	}
	return out, nil
}

// commitResultsTable uploads a view's files into its results table and
// replaces each installation's partition with its file, in one snapshot
// (retrying only the commit), unless the partition holds a newer run.
func (h *Hub) commitResultsTable(ctx context.Context, ex exportedView, runOf map[string]marker) (commits, retries int, err error) {
	id := table.Identifier{h.cfg.Namespace, ex.view}
	insts := slices.Sorted(func(yield func(string) bool) {
		for i := range ex.files {
			if !yield(i) {
				return
			}
		}
	})
	tbl, err := h.ensureResultsTable(ctx, id, ex, insts[0])
	if err != nil {
		return 0, 0, err
	}
	adds := map[string][]iceberg.DataFile{}
	var keys []string
	defer func() {
		if err != nil { // the uploads are referenced by no snapshot
			for _, k := range keys {
				h.bucket.Blob().Delete(context.WithoutCancel(ctx), k)
			}
		}
	}()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, inst := range insts {
		mk := runOf[inst]
		for _, local := range ex.files[inst] {
			var rnd [8]byte
			rand.Read(rnd[:])
			uri := strings.TrimSuffix(tbl.Location(), "/") + "/data/installation_id=" + inst + "/run_id=" + mk.RunID + "/part-" + hex.EncodeToString(rnd[:]) + ".parquet"
			key, ok := h.bucket.KeyOf(uri)
			if !ok {
				return 0, 0, fmt.Errorf("table %s lies outside the bucket %s", strings.Join(id, "."), h.bucket)
			}
			if err := h.upload(ctx, local, key); err != nil {
				return 0, 0, err
			}
			keys = append(keys, key)
			df, err := table.FileToDataFile(ctx, fsys, uri, tbl.Schema(), tbl.Spec(), 0, tbl.Properties())
			if err != nil {
				return 0, 0, fmt.Errorf("%s: %s: %w", strings.Join(id, "."), inst, err)
			}
			if df, err = withPartition(tbl, df, inst); err != nil {
				return 0, 0, err
			}
			adds[inst] = append(adds[inst], df)
		}
	}
	seqs := map[string]int64{}
	for inst, mk := range runOf {
		seqs[inst+"/"+mk.RunID] = mk.CommitSeq
	}
	var used []iceberg.DataFile
	ok, r, err := h.commit(ctx, id, func(tbl *table.Table) (*table.Transaction, error) {
		present, err := h.currentFiles(ctx, tbl)
		if err != nil {
			return nil, err
		}
		var deletes, add []iceberg.DataFile
		var refs []string
		for _, inst := range insts {
			mk := runOf[inst]
			if old := present[inst]; old.run != "" && old.run != mk.RunID {
				seq, err := h.commitSeqOf(ctx, inst, old.run, seqs)
				if err != nil {
					return nil, err
				}
				if seq > mk.CommitSeq {
					continue // another hub committed a newer run's results
				}
			}
			deletes = append(deletes, present[inst].files...)
			add = append(add, adds[inst]...)
			refs = append(refs, inst+"/"+mk.RunID)
		}
		if len(add) == 0 {
			return nil, nil
		}
		used = add
		tx := tbl.NewTransaction()
		if tbl.Properties()["comment"] != ex.comment {
			if err := tx.SetProperties(iceberg.Properties{"comment": ex.comment}); err != nil {
				return nil, err
			}
		}
		if err := tx.ReplaceDataFilesWithDataFiles(ctx, deletes, add, snapshotProps("results", refs)); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(id, "."), err)
		}
		return tx, nil
	})
	if err != nil {
		return 0, r, err
	}
	// Uploads no snapshot took (a newer run's results were there) go.
	for _, dfs := range adds {
		for _, df := range dfs {
			if !slices.ContainsFunc(used, func(u iceberg.DataFile) bool { return u.FilePath() == df.FilePath() }) {
				if k, ok := h.bucket.KeyOf(df.FilePath()); ok {
					h.bucket.Blob().Delete(ctx, k)
				}
			}
		}
	}
	if ok {
		commits++
	}
	return commits, r, nil
}

// ensureResultsTable loads a results table, creating it (partitioned by
// installation_id) from the schema of the view's file for inst, with the
// view's comment and its columns' docs.
func (h *Hub) ensureResultsTable(ctx context.Context, id table.Identifier, ex exportedView, inst string) (*table.Table, error) {
	tbl, err := h.loadTable(ctx, id)
	if err != nil || tbl != nil {
		return tbl, err
	}
	sc, err := localParquetSchema(ex.files[inst][0])
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", ex.view, err)
	}
	fields := sc.Fields()
	for i := range fields {
		fields[i].Doc = ex.docs[fields[i].Name]
	}
	sc = iceberg.NewSchema(0, fields...)
	f, ok := sc.FindFieldByName("installation_id")
	if !ok {
		return nil, fmt.Errorf("view %s has no installation_id column", ex.view)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: "installation_id", Transform: iceberg.IdentityTransform{}})
	props := iceberg.Properties{
		"format-version":                  "2",
		"write.parquet.compression-codec": "zstd",
		PropResultsOf:                     ex.view,
		"comment":                         ex.comment,
		"write.metadata.metrics.column.installation_id": "full",
		"write.metadata.metrics.column.run_id":          "full",
	}
	return h.createTable(ctx, id, sc, "results table created", catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
}

// upload copies a local file to a bucket key (created, never replaced:
// the key is new).
func (h *Hub) upload(ctx context.Context, local, key string) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := h.bucket.Blob().NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"})
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		cancel()
		w.Close()
		return fmt.Errorf("bucket %s: %s: %w", h.bucket, key, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("bucket %s: %s: %w", h.bucket, key, err)
	}
	return nil
}
