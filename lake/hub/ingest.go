package hub

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// Snapshot summary properties the hub writes.
const (
	// PropRuns lists the runs a snapshot added, as a JSON array of
	// "<installation>/<run>".
	PropRuns = "kandev.runs"
	// PropOperation is "ingest-history", "ingest-current", "compact".
	PropOperation = "kandev.operation"
)

// Problem is a landing manifest the hub does not ingest, and why. It stays
// in the landing area, untouched.
type Problem struct {
	Key, Installation, Run, Reason string
}

// RunRef names an ingested run.
type RunRef struct {
	Installation, Run string
	CommitSeq         int64
}

// IngestOptions tune an ingest.
type IngestOptions struct {
	// MaxRunsPerBatch bounds the runs one snapshot of a table adds
	// (default 256): one commit per table and batch, not per run.
	MaxRunsPerBatch int
	// Workers bounds concurrent file copies and table commits (default 4).
	Workers int
}

// IngestReport says what an ingest did.
type IngestReport struct {
	// Ingested are the runs whose every table is now committed (their
	// marker written by this ingest), in order.
	Ingested []RunRef
	// AlreadyIngested counts landing manifests with a marker.
	AlreadyIngested int
	// Problems are the manifests not ingested.
	Problems []Problem
	// Commits and Retries count catalog commits and conflict retries.
	Commits, Retries int
	// Rows are the rows the history tables gained.
	Rows int64
	// Results is what the results tables (results.go) were given.
	Results ResultsReport
}

// marker is hub/ingested/<i>/<r>.json: the run is in every table.
type marker struct {
	Format         string          `json:"format"`
	Version        int             `json:"version"`
	InstallationID string          `json:"installation_id"`
	RunID          string          `json:"run_id"`
	CommitSeq      int64           `json:"commit_seq"`
	IngestedAt     time.Time       `json:"ingested_at"`
	Manifest       models.Manifest `json:"manifest"`
}

const markerFormat = "kandev-lake/ingested"

func markerKey(inst, run string) string { return ingestedPrefix + inst + "/" + run + ".json" }

// pendingRun is a valid committed landing manifest not yet ingested.
type pendingRun struct {
	m      models.Manifest
	newest bool // the newest run of its installation in the batch
	files  map[string]*runFile
	bad    string // why it is refused (a file failed verification)
}

func (p *pendingRun) ref() string { return p.m.InstallationID + "/" + p.m.RunID }

// runFile is one table's file of a run, copied into the tables.
type runFile struct {
	hist, cur iceberg.DataFile // cur nil unless the run goes to the current table
	keys      []string         // the copies, removed if the run is refused
}

// tablePair is a base table's two Iceberg tables.
type tablePair struct {
	base      string
	hist, cur *table.Table
}

// Ingest registers every committed run in the landing area that is not
// yet ingested, then commits the results tables of the installations whose
// latest run changed (CommitResults). See the package documentation for
// the guarantees.
func (h *Hub) Ingest(ctx context.Context, opts IngestOptions) (IngestReport, error) {
	ctx = h.IO(ctx)
	opts.MaxRunsPerBatch = cmp.Or(opts.MaxRunsPerBatch, 256)
	opts.Workers = cmp.Or(opts.Workers, 4)
	var rep IngestReport
	pending, err := h.scanLanding(ctx, &rep)
	if err != nil {
		return rep, err
	}
	for len(pending) > 0 {
		n := min(len(pending), opts.MaxRunsPerBatch)
		if err := h.ingestBatch(ctx, pending[:n], opts, &rep); err != nil {
			return rep, err
		}
		pending = pending[n:]
	}
	var insts []string
	for _, r := range rep.Ingested {
		if !slices.Contains(insts, r.Installation) {
			insts = append(insts, r.Installation)
		}
	}
	rep.Results, err = h.CommitResults(ctx, insts, opts.Workers)
	return rep, err
}

// scanLanding lists the landing manifests: valid committed ones without a
// marker are pending, oldest first per installation; the rest are counted
// or reported.
func (h *Hub) scanLanding(ctx context.Context, rep *IngestReport) ([]*pendingRun, error) {
	b := h.bucket
	_, insts, err := b.ListNames(ctx, lake.LandingPrefix+"_runs/")
	if err != nil {
		return nil, fmt.Errorf("bucket %s: list landing: %w", b, err)
	}
	var out []*pendingRun
	for _, inst := range insts {
		dir := lake.LandingPrefix + "_runs/" + inst + "/"
		if load.ValidName(inst) != nil {
			rep.Problems = append(rep.Problems, Problem{Key: dir, Reason: "not a valid installation name"})
			continue
		}
		names, _, err := b.ListNames(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: list %s: %w", b, dir, err)
		}
		done, _, err := b.ListNames(ctx, ingestedPrefix+inst+"/")
		if err != nil {
			return nil, fmt.Errorf("bucket %s: list markers: %w", b, err)
		}
		for _, name := range names {
			if strings.HasPrefix(name, ".") {
				continue // a file bucket's manifest being linked into place
			}
			key := dir + name
			run, ok := strings.CutSuffix(name, ".json")
			if !ok || load.ValidName(run) != nil {
				rep.Problems = append(rep.Problems, Problem{Key: key, Installation: inst, Reason: "not a run manifest name (<run id>.json)"})
				continue
			}
			if slices.Contains(done, name) {
				rep.AlreadyIngested++
				continue
			}
			data, err := b.ReadSmall(ctx, key, lake.MaxManifestBytes)
			if err != nil {
				rep.Problems = append(rep.Problems, Problem{Key: key, Installation: inst, Run: run, Reason: err.Error()})
				continue
			}
			m, _, err := lake.ParseManifest(data, inst, run)
			switch {
			case err != nil:
				rep.Problems = append(rep.Problems, Problem{Key: key, Installation: inst, Run: run, Reason: err.Error()})
				continue
			case m.Status != models.RunCommitted:
				rep.Problems = append(rep.Problems, Problem{Key: key, Installation: inst, Run: run, Reason: "not a committed run"})
				continue
			case m.Version < 2:
				rep.Problems = append(rep.Problems, Problem{Key: key, Installation: inst, Run: run, Reason: "a version 1 manifest has no checksums to verify the files against"})
				continue
			}
			out = append(out, &pendingRun{m: m, files: map[string]*runFile{}})
		}
	}
	slices.SortStableFunc(out, func(a, b *pendingRun) int {
		return cmp.Or(cmp.Compare(a.m.InstallationID, b.m.InstallationID), cmp.Compare(a.m.CommitSeq, b.m.CommitSeq), cmp.Compare(a.m.RunID, b.m.RunID))
	})
	return out, nil
}

func (h *Hub) ingestBatch(ctx context.Context, batch []*pendingRun, opts IngestOptions, rep *IngestReport) error {
	for i, p := range batch {
		p.newest = i == len(batch)-1 || batch[i+1].m.InstallationID != p.m.InstallationID
	}
	// The tables, created from the first file's schema when new.
	// (A sample file whose footer does not read is tried no further: the
	// next run's file of the table is; that run is refused when its file
	// is verified below.)
	pairs := map[string]*tablePair{}
	var sampleErr error
	for _, p := range batch {
		for t := range p.m.Files {
			if pairs[t] != nil {
				continue
			}
			pair, err := h.ensureTables(ctx, t, lake.DataKey(t, p.m.InstallationID, p.m.RunID))
			var se *schemaError
			if errors.As(err, &se) {
				sampleErr = err
				continue
			}
			if err != nil {
				return err
			}
			pairs[t] = pair
		}
	}
	for _, p := range batch {
		for t := range p.m.Files {
			if pairs[t] == nil {
				return sampleErr
			}
		}
	}
	// What each table already holds (a resumed ingest copies nothing twice).
	histHas := map[string]map[string]bool{}
	for t, pair := range pairs {
		histHas[t] = runsInSnapshots(pair.hist)
	}
	// Copy and verify every file once, into both tables' locations.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	var mu sync.Mutex
	for _, p := range batch {
		for t := range p.m.Files {
			// An empty file adds nothing to a history table (so it is not
			// registered there); the current table keeps one per
			// installation, which records the run it holds. Every file is
			// read and verified all the same.
			needHist := !histHas[t][p.ref()] && rowsWritten(p.m, t) > 0
			g.Go(func() error {
				rf, err := h.copyFile(gctx, pairs[t], p, t, needHist, p.newest)
				mu.Lock()
				defer mu.Unlock()
				if rf != nil {
					p.files[t] = rf
				}
				if err != nil {
					var bad *badFileError
					if !errors.As(err, &bad) {
						return err
					}
					if p.bad == "" {
						p.bad = err.Error()
					}
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var good []*pendingRun
	for _, p := range batch {
		if p.bad == "" {
			good = append(good, p)
			continue
		}
		rep.Problems = append(rep.Problems, Problem{Key: lake.ManifestKey(p.m.InstallationID, p.m.RunID),
			Installation: p.m.InstallationID, Run: p.m.RunID, Reason: p.bad})
		for _, rf := range p.files {
			for _, k := range rf.keys {
				h.bucket.Blob().Delete(ctx, k)
			}
		}
	}
	// One history commit and one current commit per table.
	tables := make([]string, 0, len(pairs))
	for t := range pairs {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(opts.Workers)
	for _, t := range tables {
		g.Go(func() error {
			rows, commits, retries, err := h.commitTable(gctx, pairs[t], good)
			mu.Lock()
			rep.Rows += rows
			rep.Commits += commits
			rep.Retries += retries
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, p := range good {
		mk := marker{Format: markerFormat, Version: 1, InstallationID: p.m.InstallationID, RunID: p.m.RunID,
			CommitSeq: p.m.CommitSeq, IngestedAt: h.now(), Manifest: p.m}
		body, err := json.MarshalIndent(mk, "", "  ")
		if err != nil {
			return err
		}
		if err := h.bucket.Blob().WriteAll(ctx, markerKey(p.m.InstallationID, p.m.RunID), body, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
			return fmt.Errorf("bucket %s: marker: %w", h.bucket, err)
		}
		rep.Ingested = append(rep.Ingested, RunRef{Installation: p.m.InstallationID, Run: p.m.RunID, CommitSeq: p.m.CommitSeq})
		h.log.Info("run ingested", "installation", p.m.InstallationID, "run_id", p.m.RunID)
	}
	return nil
}

// rowsWritten is the rows a run's provenance says a table's file holds
// (-1 when it does not say).
func rowsWritten(m models.Manifest, t string) int64 {
	if tp, ok := m.Provenance.Tables[t]; ok {
		return tp.RowsWritten
	}
	return -1
}

// badFileError is a landing file that fails verification: the run is
// refused, the ingest goes on.
type badFileError struct{ msg string }

func (e *badFileError) Error() string { return e.msg }

// schemaError is a sample file whose schema could not be read.
type schemaError struct{ error }

func (e *schemaError) Unwrap() error { return e.error }

// dataURI is where a run's file goes in a table: a Hive-style path under
// the table's data directory, derived from validated names only.
func dataURI(tbl *table.Table, inst, run string) string {
	return strings.TrimSuffix(tbl.Location(), "/") + "/data/installation_id=" + inst + "/run_id=" + run + "/" + lake.PartFile
}

// copyFile reads one landing file once, writing it to the history table's
// location (hist) and the current table's (cur) while hashing it, checks
// the size and SHA-256 the manifest recorded, and builds the Iceberg data
// files from the copies' footers.
func (h *Hub) copyFile(ctx context.Context, pair *tablePair, p *pendingRun, t string, hist, cur bool) (*runFile, error) {
	inst, run := p.m.InstallationID, p.m.RunID
	src := lake.DataKey(t, inst, run)
	want := p.m.Checksums[t]
	rf := &runFile{}
	type dest struct {
		tbl *table.Table
		uri string
		df  *iceberg.DataFile
	}
	var dests []dest
	if hist {
		dests = append(dests, dest{pair.hist, dataURI(pair.hist, inst, run), &rf.hist})
	}
	if cur {
		dests = append(dests, dest{pair.cur, dataURI(pair.cur, inst, run), &rf.cur})
	}
	r, err := h.bucket.Blob().NewReader(ctx, src, nil)
	if err != nil {
		if lake.IsNotFound(err) {
			return nil, &badFileError{fmt.Sprintf("%s: missing from the landing area", src)}
		}
		return nil, fmt.Errorf("bucket %s: %s: %w", h.bucket, src, err)
	}
	defer r.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sum := sha256.New()
	sinks := []io.Writer{sum}
	var writers []*blob.Writer
	for _, d := range dests {
		key, ok := h.bucket.KeyOf(d.uri)
		if !ok {
			return nil, fmt.Errorf("table %s lies outside the bucket %s (%s)", strings.Join(d.tbl.Identifier(), "."), h.bucket, d.tbl.Location())
		}
		w, err := h.bucket.Blob().NewWriter(wctx, key, &blob.WriterOptions{ContentType: "application/vnd.apache.parquet"})
		if err != nil {
			return nil, err
		}
		writers = append(writers, w)
		sinks = append(sinks, w)
		rf.keys = append(rf.keys, key)
	}
	n, err := io.Copy(io.MultiWriter(sinks...), io.LimitReader(r, want.Bytes+1))
	if err == nil && (n != want.Bytes || hex.EncodeToString(sum.Sum(nil)) != want.SHA256) {
		err = &badFileError{fmt.Sprintf("%s: %d bytes whose SHA-256 differs from the manifest's (%d bytes)", src, n, want.Bytes)}
	}
	if err != nil {
		cancel()
		for _, w := range writers {
			w.Close()
		}
		rf.keys = nil
		return nil, err
	}
	for _, w := range writers {
		if err := w.Close(); err != nil {
			return rf, err
		}
	}
	for i, d := range dests {
		attrs, err := h.bucket.Blob().Attributes(ctx, rf.keys[i])
		if err != nil {
			return rf, err
		}
		if attrs.Size != want.Bytes {
			return rf, fmt.Errorf("copy of %s: %d bytes stored, %d written", src, attrs.Size, want.Bytes)
		}
		fsys, err := d.tbl.FS(ctx)
		if err != nil {
			return rf, err
		}
		df, err := table.FileToDataFile(ctx, fsys, d.uri, d.tbl.Schema(), d.tbl.Spec(), 0, d.tbl.Properties())
		if err != nil {
			return rf, &badFileError{fmt.Sprintf("%s: %v", src, err)}
		}
		if tp, ok := p.m.Provenance.Tables[t]; ok && tp.RowsWritten != df.Count() {
			return rf, &badFileError{fmt.Sprintf("%s: %d rows, the provenance says %d were written", src, df.Count(), tp.RowsWritten)}
		}
		if err := checkNames(d.tbl, df, inst, run); err != nil {
			return rf, &badFileError{fmt.Sprintf("%s: %v", src, err)}
		}
		if df, err = withPartition(d.tbl, df, inst); err != nil {
			return rf, err
		}
		*d.df = df
	}
	return rf, nil
}

// runsInSnapshots is every run the table's retained snapshots say they
// added.
func runsInSnapshots(tbl *table.Table) map[string]bool {
	out := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		var runs []string
		if json.Unmarshal([]byte(s.Summary.Properties[PropRuns]), &runs) == nil {
			for _, r := range runs {
				out[r] = true
			}
		}
	}
	return out
}

// commitTable commits a batch into a base table's history and current
// tables, each in one snapshot, retrying only the commit.
func (h *Hub) commitTable(ctx context.Context, pair *tablePair, batch []*pendingRun) (rows int64, commits, retries int, err error) {
	histID, curID := pair.hist.Identifier(), pair.cur.Identifier()
	ok, r, err := h.commit(ctx, histID, func(tbl *table.Table) (*table.Transaction, error) {
		have := runsInSnapshots(tbl)
		var dfs []iceberg.DataFile
		var refs []string
		rows = 0
		for _, p := range batch {
			rf := p.files[pair.base]
			if rf == nil || rf.hist == nil || have[p.ref()] {
				continue
			}
			dfs = append(dfs, rf.hist)
			refs = append(refs, p.ref())
			rows += rf.hist.Count()
		}
		if len(dfs) == 0 {
			return nil, nil
		}
		tx := tbl.NewTransaction()
		if err := tx.AddDataFiles(ctx, dfs, snapshotProps("ingest-history", refs)); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(histID, "."), err)
		}
		return tx, nil
	})
	retries += r
	if err != nil {
		return 0, commits, retries, err
	}
	if ok {
		commits++
	} else {
		rows = 0
	}
	seqs := map[string]int64{}
	for _, p := range batch {
		seqs[p.ref()] = p.m.CommitSeq
	}
	ok, r, err = h.commit(ctx, curID, func(tbl *table.Table) (*table.Transaction, error) {
		present, err := h.currentFiles(ctx, tbl)
		if err != nil {
			return nil, err
		}
		var deletes, adds []iceberg.DataFile
		var refs []string
		for _, p := range batch {
			rf := p.files[pair.base]
			if rf == nil || rf.cur == nil || !p.newest {
				continue
			}
			inst := p.m.InstallationID
			old := present[inst]
			if old.run == p.m.RunID {
				continue // already current
			}
			if old.run != "" {
				seq, err := h.commitSeqOf(ctx, inst, old.run, seqs)
				if err != nil {
					return nil, err
				}
				if seq >= p.m.CommitSeq {
					continue // a newer run is current: history only
				}
			}
			deletes = append(deletes, old.files...)
			adds = append(adds, rf.cur)
			refs = append(refs, p.ref())
		}
		if len(adds) == 0 {
			return nil, nil
		}
		tx := tbl.NewTransaction()
		if err := tx.ReplaceDataFilesWithDataFiles(ctx, deletes, adds, snapshotProps("ingest-current", refs)); err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(curID, "."), err)
		}
		return tx, nil
	})
	retries += r
	if ok {
		commits++
	}
	return rows, commits, retries, err
}

func snapshotProps(op string, refs []string) iceberg.Properties {
	b, _ := json.Marshal(refs)
	return iceberg.Properties{PropOperation: op, PropRuns: string(b)}
}

// current is an installation's partition of a current table.
type current struct {
	run   string // "" when unknown (files of several runs)
	files []iceberg.DataFile
}

// currentFiles groups a current table's live data files by installation
// (its partition value) with the run they hold (the file's run_id bounds).
func (h *Hub) currentFiles(ctx context.Context, tbl *table.Table) (map[string]current, error) {
	out := map[string]current{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	files, err := liveDataFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	spec := tbl.Spec()
	if spec.NumFields() != 1 {
		return nil, fmt.Errorf("%s: expected a partition spec of installation_id only", strings.Join(tbl.Identifier(), "."))
	}
	partID := spec.Field(0).FieldID
	runField, hasRun := tbl.Schema().FindFieldByName("run_id")
	for _, df := range files {
		inst, _ := df.Partition()[partID].(string)
		c := out[inst]
		run := ""
		if hasRun {
			lo, hi := df.LowerBoundValues()[runField.ID], df.UpperBoundValues()[runField.ID]
			if lo != nil && string(lo) == string(hi) {
				run = string(lo)
			}
		}
		if run == "" { // a file this hub wrote names its run in its path
			dir := path.Dir(df.FilePath())
			if r, ok := strings.CutPrefix(path.Base(dir), "run_id="); ok && path.Base(path.Dir(dir)) == "installation_id="+inst && load.ValidName(r) == nil {
				run = r
			}
		}
		if len(c.files) == 0 {
			c.run = run
		} else if c.run != run {
			c.run = ""
		}
		c.files = append(c.files, df)
		out[inst] = c
	}
	return out, nil
}

// commitSeqOf is a run's commit sequence: from the batch, its marker, or
// its landing manifest; 0 when none is readable (any new run then wins).
func (h *Hub) commitSeqOf(ctx context.Context, inst, run string, batch map[string]int64) (int64, error) {
	if s, ok := batch[inst+"/"+run]; ok {
		return s, nil
	}
	if load.ValidName(inst) != nil || load.ValidName(run) != nil {
		return 0, nil
	}
	if data, err := h.bucket.ReadSmall(ctx, markerKey(inst, run), lake.MaxManifestBytes*2); err == nil {
		var mk marker
		if json.Unmarshal(data, &mk) == nil && mk.Format == markerFormat && mk.InstallationID == inst && mk.RunID == run {
			return mk.CommitSeq, nil
		}
	}
	if data, err := h.bucket.ReadSmall(ctx, lake.ManifestKey(inst, run), lake.MaxManifestBytes); err == nil {
		if m, _, err := lake.ParseManifest(data, inst, run); err == nil {
			return m.CommitSeq, nil
		}
	}
	return 0, nil
}

// ensureTables loads a base table's two Iceberg tables, creating them from
// the schema of the Parquet file at sampleKey when they do not exist.
func (h *Hub) ensureTables(ctx context.Context, base, sampleKey string) (*tablePair, error) {
	if !lake.IsTable(base) {
		return nil, fmt.Errorf("unknown table %q", base)
	}
	pair := &tablePair{base: base}
	var err error
	if pair.hist, err = h.loadTable(ctx, h.HistoryTable(base)); err != nil {
		return nil, err
	}
	if pair.cur, err = h.loadTable(ctx, h.CurrentTable(base)); err != nil {
		return nil, err
	}
	if pair.hist != nil && pair.cur != nil {
		return pair, nil
	}
	sc, err := h.parquetSchema(ctx, sampleKey)
	if err != nil {
		return nil, &schemaError{fmt.Errorf("schema of %s from %s: %w", base, sampleKey, err)}
	}
	props := iceberg.Properties{
		"format-version":                  "2",
		"write.parquet.compression-codec": "zstd",
		"kandev.base-table":               base,
		// Exact bounds (not truncated to 16 characters) for the two
		// columns that name a file's installation and run.
		"write.metadata.metrics.column.installation_id": "full",
		"write.metadata.metrics.column.run_id":          "full",
	}
	create := func(id table.Identifier, opts ...catalog.CreateTableOpt) (*table.Table, error) {
		return h.createTable(ctx, id, sc, "table created", opts...)
	}
	if pair.hist == nil {
		hp := maps(props, "comment", "Every ingested run of "+base+" from every installation (kandev-extract).")
		if pair.hist, err = create(h.HistoryTable(base), catalog.WithProperties(hp)); err != nil {
			return nil, err
		}
	}
	if pair.cur == nil {
		f, ok := sc.FindFieldByName("installation_id")
		if !ok {
			return nil, fmt.Errorf("%s has no installation_id column", sampleKey)
		}
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000, Name: "installation_id", Transform: iceberg.IdentityTransform{}})
		cp := maps(props, "comment", "The latest ingested run of "+base+" per installation (kandev-extract).")
		if pair.cur, err = create(h.CurrentTable(base), catalog.WithPartitionSpec(&spec), catalog.WithProperties(cp)); err != nil {
			return nil, err
		}
	}
	return pair, nil
}

func maps(p iceberg.Properties, kv ...string) iceberg.Properties {
	out := iceberg.Properties{}
	for k, v := range p {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// checkNames proves from the file's exact column bounds that every row of
// a non-empty file carries the installation and run its path names.
func checkNames(tbl *table.Table, df iceberg.DataFile, inst, run string) error {
	if df.Count() == 0 {
		return nil
	}
	for col, want := range map[string]string{"installation_id": inst, "run_id": run} {
		f, ok := tbl.Schema().FindFieldByName(col)
		if !ok {
			return fmt.Errorf("no %s column", col)
		}
		lo, hi := df.LowerBoundValues()[f.ID], df.UpperBoundValues()[f.ID]
		if string(lo) != want || string(hi) != want || df.NullValueCounts()[f.ID] != 0 {
			return fmt.Errorf("rows whose %s is not %q", col, want)
		}
	}
	return nil
}

// withPartition gives a current table's data file its partition
// (installation_id) explicitly: iceberg-go infers it from column bounds,
// which an empty file does not have.
func withPartition(tbl *table.Table, df iceberg.DataFile, inst string) (iceberg.DataFile, error) {
	spec := tbl.Spec()
	if spec.NumFields() == 0 {
		return df, nil
	}
	pid := spec.Field(0).FieldID
	if v, ok := df.Partition()[pid].(string); ok && v == inst {
		return df, nil
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, df.FilePath(), df.FileFormat(),
		map[int]any{pid: inst}, nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues()).
		SplitOffsets(df.SplitOffsets())
	return b.Build(), nil
}

// liveDataFiles is the exact list of data files of a table's current
// snapshot, read from its manifests: empty files included (scan planning
// skips files without rows). A delete file is refused: this hub never
// writes one, so the tables would not be what it expects.
func liveDataFiles(ctx context.Context, tbl *table.Table) ([]iceberg.DataFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return nil, err
	}
	var out []iceberg.DataFile
	for _, mf := range mfs {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			return nil, fmt.Errorf("%s: delete files present; this hub never writes them", strings.Join(tbl.Identifier(), "."))
		}
		for e, err := range mf.Entries(fsys, true) {
			if err != nil {
				return nil, err
			}
			out = append(out, e.DataFile())
		}
	}
	return out, nil
}
