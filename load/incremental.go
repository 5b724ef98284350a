package load

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
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/internal/seams"
)

// The update (an incremental rebuild). A full rebuild reads every retained
// run's Parquet files again, so its time and memory grow with retention
// (~4 s and ~12 MiB per retained 1 M-row run: docs/benchmarks.md). The
// update starts instead from a copy of the warehouse.duckdb the previous
// build installed, deletes the rows of the runs no longer served, inserts
// the rows of the runs newly served from their verified files, and creates
// everything else (runs, warehouse_build, every view and comment) exactly
// as a full build does: its cost is one run's, whatever the retention.
//
// The copy is trusted only when it is byte for byte the file the previous
// build installed: that build recorded the file's size and SHA-256 in
// _database.json, and the copy is hashed while it is made. Anything else
// builds in full, and says why: no record, a file changed since (an
// analyst's writes, a swap of a waiting database, another build), a
// write-ahead log beside it, objects of an analyst in it (the full build
// carries them), a different DuckDB version or storage layout, a table
// whose columns differ from what the retained runs' files would give, or
// any error while updating (the copy is discarded).

// stampRel records the size and SHA-256 of the warehouse.duckdb the last
// build installed.
const stampRel = "_database.json"

// stampFormat is the version of the _database.json format.
const stampFormat = 1

// databaseStamp is _database.json.
type databaseStamp struct {
	Format int `json:"format"`
	// Layout is layoutKey of the build that wrote the file.
	Layout string `json:"layout"`
	// Schema is schemaKey of its views and comments ("" when unknown:
	// the update then creates them anew).
	Schema  string `json:"schema,omitempty"`
	BuildID string `json:"build_id"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// layoutKey names what decides how a build stores the _history tables'
// rows: the DuckDB library, the storage and compression options, and how
// the files are read. Everything else in the file is created anew by every
// build, full or update.
func layoutKey(ctx context.Context, conn *sql.Conn) (string, error) {
	var version string
	if err := conn.QueryRowContext(ctx, `SELECT library_version FROM pragma_version()`).Scan(&version); err != nil {
		return "", err
	}
	h := sha256.New()
	for _, s := range []string{"kandev-extract layout 1", version, warehouseStorage, buildCompression, historySelect([]string{"f"})} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readStamp reads _database.json; ok is false when it is missing or not
// one this build wrote.
func (w *Warehouse) readStamp() (s databaseStamp, ok bool) {
	p, err := w.inside(stampRel, false)
	if err != nil {
		return s, false
	}
	f, err := openNoFollow(p)
	if err != nil {
		return s, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil || json.Unmarshal(data, &s) != nil || s.Format != stampFormat || !validSHA256(s.SHA256) || s.Bytes <= 0 || s.Layout == "" {
		return databaseStamp{}, false
	}
	return s, true
}

// writeStamp records the installed warehouse.duckdb.
func (w *Warehouse) writeStamp(s databaseStamp) error {
	p, err := w.inside(stampRel, false)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(p, append(data, '\n'))
}

// dropStamp removes _database.json before warehouse.duckdb is replaced, so
// that no instant exists at which it describes another file than the one
// in place (the hash would catch it; this says it plainly).
func (w *Warehouse) dropStamp() error {
	err := w.remove(stampRel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// copyPrevious copies the installed warehouse.duckdb to dst, hashing it on
// the way, and says why it cannot be updated ("" when it can).
func (w *Warehouse) copyPrevious(ctx context.Context, dst string, stamp databaseStamp) (string, error) {
	if p, err := w.inside(DatabaseFile+".wal", false); err != nil {
		return "warehouse.duckdb.wal: " + err.Error(), nil
	} else if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		return "warehouse.duckdb has a write-ahead log (changes made since the last build)", nil
	}
	src, err := w.inside(DatabaseFile, false)
	if err != nil {
		return err.Error(), nil
	}
	in, err := openNoFollow(src)
	if err != nil {
		return "warehouse.duckdb cannot be read (" + firstLine(err.Error()) + ")", nil
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || fi.Size() != stamp.Bytes {
		return changedSince("size"), nil
	}
	out, err := seams.CreateFile(dst)
	if err != nil {
		return "", err
	}
	n, sum, err := copyHashed(ctx, out, in, dst)
	if err != nil {
		return "", fmt.Errorf("copy warehouse.duckdb: %w", err)
	}
	if n != stamp.Bytes || sum != stamp.SHA256 {
		return changedSince("SHA-256"), nil
	}
	return "", nil
}

// copyChunk is how much copyHashed copies before the hashing of it starts.
const copyChunk = 32 << 20

// copyHashed copies in to out (closing out), and returns the size and
// SHA-256 of the copy as read back from path, out's path: what is checked
// is what the update uses. Chunk by chunk, file to file (so the kernel
// copies: copy_file_range on Linux), while another goroutine hashes the
// chunks already copied: on a 2.2 GB file 1.7–1.8 s against 2.3–4.8 s
// for a copy then a hash (docs/benchmarks.md).
func copyHashed(ctx context.Context, out seams.File, in *os.File, path string) (int64, string, error) {
	copied := make(chan int64, 1)
	type hashed struct {
		n   int64
		sum string
		err error
	}
	result := make(chan hashed, 1)
	go func() {
		var r hashed
		defer func() { result <- r }()
		f, err := openNoFollow(path)
		if err != nil {
			r.err = err
			for range copied {
			}
			return
		}
		defer f.Close()
		h := sha256.New()
		for upto := range copied {
			if r.err != nil {
				continue
			}
			n, err := io.CopyN(h, f, upto-r.n)
			r.n += n
			r.err = err
		}
		r.sum = hex.EncodeToString(h.Sum(nil))
	}()
	var total int64
	var err error
	for err == nil {
		var n int64
		n, err = io.CopyN(out, in, copyChunk)
		total += n
		if err == nil {
			err = ctx.Err()
		}
		if n > 0 {
			// The channel holds one offset: the hasher is at most one
			// chunk behind, reading what the page cache still holds.
			copied <- total
		}
	}
	close(copied)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	r := <-result
	if err == nil {
		err = r.err
	}
	return r.n, r.sum, err
}

// changedSince is why a file other than the one the last build installed
// is not updated.
func changedSince(what string) string {
	return "warehouse.duckdb changed since the last build installed it: its " + what + " differs (an analyst's writes, or a waiting database swapped in)"
}

// notUpdatable is why a copy of the previous build cannot be updated: the
// rebuild builds in full instead.
type notUpdatable struct{ reason string }

func (n *notUpdatable) Error() string { return n.reason }

// updated is what updateInto did.
type updated struct {
	added, removed int
	// schema is the schemaKey of the views and comments the file holds;
	// viewsKept says they are the previous build's.
	schema    string
	viewsKept bool
}

// updateInto turns the copy of the previous build at path into what
// buildInto would build: the _history tables lose the rows of the runs no
// longer served and gain those of the runs newly served, and every other
// object is dropped and created anew — but for the views and their
// comments, kept when the previous build created them with the very
// statements this one would (stamp.Schema): then only the comments that
// state the disclosures are set again. A *notUpdatable error says why it
// did not update; any error leaves the copy to be discarded.
func updateInto(ctx context.Context, dir, path string, stamp databaseStamp, runs []runRow, problems []ManifestProblem, files map[string][]string, staleAfter time.Duration, info buildInfo, memoryLimit string) (u updated, err error) {
	b, err := openBuild(ctx, path, memoryLimit)
	if err != nil {
		return u, err
	}
	defer b.close()
	no := func(format string, args ...any) (updated, error) {
		return updated{}, &notUpdatable{reason: fmt.Sprintf(format, args...)}
	}
	key, err := layoutKey(ctx, b.conn)
	if err != nil {
		return u, err
	}
	if key != stamp.Layout {
		return no("the last build stored its tables another way (another DuckDB version or storage layout)")
	}
	if len(files) == 0 {
		return no("no run is served")
	}
	// Freed blocks are reused, never returned: a file mostly free is
	// compacted by a full build.
	var free, used int64
	if err := b.conn.QueryRowContext(ctx, `SELECT free_blocks, used_blocks FROM pragma_database_size() WHERE database_name = 'warehouse'`).Scan(&free, &used); err != nil {
		return u, err
	}
	if free > used {
		return no("more of warehouse.duckdb is free space than data (%d of %d blocks free): a full build compacts it", free, free+used)
	}
	views, err := analyticViews()
	if err != nil {
		return u, err
	}
	// Only this build's objects: the full build carries an analyst's.
	objs, err := analystObjects(ctx, b.conn, "warehouse", views)
	if err != nil {
		return u, err
	}
	var foreign []string
	for _, kind := range objs {
		for _, o := range kind {
			foreign = append(foreign, o.schema+"."+o.name)
		}
	}
	if len(foreign) > 0 {
		return no("it holds objects of an analyst (%s), which a full build carries", strings.Join(foreign, ", "))
	}
	// The runs it serves now, against those to serve.
	type key2 = [2]string
	had := map[key2]bool{}
	rows, err := b.conn.QueryContext(ctx, `SELECT installation_id, run_id FROM runs WHERE served AND status = 'committed'`)
	if err != nil {
		return u, err
	}
	for rows.Next() {
		var k key2
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			rows.Close()
			return u, err
		}
		had[k] = true
	}
	if err := rows.Close(); err != nil {
		return u, err
	}
	want := map[key2]bool{}
	newFiles := map[string][]string{}
	for _, r := range runs {
		if !r.served {
			continue
		}
		k := key2{r.m.InstallationID, r.m.RunID}
		want[k] = true
		if had[k] {
			continue
		}
		u.added++
		for t := range r.m.Files {
			newFiles[t] = append(newFiles[t], filepath.Join(dir, fileRel(t, r.m.InstallationID, r.m.RunID)))
		}
	}
	var gone []key2
	for k := range had {
		if !want[k] {
			gone = append(gone, k)
		}
	}
	u.removed = len(gone)
	slices.SortFunc(gone, func(a, b key2) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	// Each table must have exactly the columns (names, types, order) a
	// full build's read of every served file would give it.
	for _, t := range baseTables {
		list := slices.Clone(files[t])
		if len(list) == 0 {
			return no("no served file for table %s", t)
		}
		sort.Strings(list)
		wantCols, err := describe(ctx, b.conn, `DESCRIBE `+historySelect(list))
		if err != nil {
			return u, err
		}
		haveCols, err := describe(ctx, b.conn, `DESCRIBE `+t+`_history`)
		if err != nil {
			return no("table %s_history cannot be described (%s)", t, firstLine(err.Error()))
		}
		if !slices.Equal(wantCols, haveCols) {
			return no("table %s_history's columns differ from what the served runs' files give", t)
		}
	}
	// Everything but the _history tables goes, and is created anew below;
	// the views and their comments stay when the statements that created
	// them are the ones this build would run (each view present too).
	comments, err := staticComments(ctx, b.conn)
	if err != nil {
		return u, err
	}
	created := viewStatements(views)
	u.schema = schemaKey(created, comments)
	// The views a build creates over the _history tables (the base and
	// analytic views; current_runs is created with the run tables).
	keepable := map[string]bool{}
	for _, t := range baseTables {
		keepable[t] = true
	}
	for _, v := range views {
		keepable[v.name] = true
	}
	var present []object
	kept := 0
	for _, q := range []string{`SELECT 'VIEW', view_name FROM duckdb_views() WHERE database_name = 'warehouse' AND NOT internal`,
		`SELECT 'TABLE', table_name FROM duckdb_tables() WHERE database_name = 'warehouse' AND NOT internal AND NOT ends_with(table_name, '_history')`} {
		rows, err := b.conn.QueryContext(ctx, q)
		if err != nil {
			return u, err
		}
		for rows.Next() {
			var o object
			if err := rows.Scan(&o.kind, &o.name); err != nil {
				rows.Close()
				return u, err
			}
			if o.kind == "VIEW" && keepable[o.name] {
				kept++
			}
			present = append(present, o)
		}
		if err := rows.Close(); err != nil {
			return u, err
		}
	}
	u.viewsKept = stamp.Schema != "" && stamp.Schema == u.schema && kept == len(keepable)
	var dropSQL strings.Builder
	for _, o := range present {
		if u.viewsKept && o.kind == "VIEW" && keepable[o.name] {
			continue
		}
		dropSQL.WriteString(`DROP ` + o.kind + ` ` + ident(o.name) + ";\n")
	}
	if err := b.exec("BEGIN TRANSACTION;\n" + dropSQL.String() + "COMMIT"); err != nil {
		return u, err
	}
	var match string
	if len(gone) > 0 {
		pairs := make([]string, len(gone))
		for i, k := range gone {
			pairs[i] = "(" + quote(k[0]) + ", " + quote(k[1]) + ")"
		}
		match = `(installation_id, run_id) IN (VALUES ` + strings.Join(pairs, ", ") + `)`
	}
	if match != "" {
		// Deleted and checkpointed before anything is inserted, so the
		// blocks of the runs' row groups are free for the new rows: the
		// file stays at about the retained runs' size.
		// On one thread: deleting a large run from ten and checkpointing
		// peaked ~15 MiB lower than on two, in the same time.
		if err := b.exec(`SET threads = 1`); err != nil {
			return u, err
		}
		for _, t := range baseTables {
			if err := b.exec(`DELETE FROM ` + t + `_history WHERE ` + match); err != nil {
				return u, err
			}
		}
		if err := b.exec(`CHECKPOINT warehouse`); err != nil {
			return u, err
		}
		if err := b.exec(`SET threads = ` + strconv.Itoa(DuckDBThreads)); err != nil {
			return u, err
		}
	}
	for _, t := range baseTables {
		if list := newFiles[t]; len(list) > 0 {
			sort.Strings(list)
			if err := b.exec(`INSERT INTO ` + t + `_history BY NAME ` + historySelect(list)); err != nil {
				return u, err
			}
		}
	}
	if err := b.createRunTables(runs, problems, info, staleAfter); err != nil {
		return u, err
	}
	if !u.viewsKept {
		if u.schema, err = b.createViews(views); err != nil {
			return u, err
		}
		return u, b.finish()
	}
	if err := b.exec(`BEGIN TRANSACTION`); err != nil {
		return u, err
	}
	if err := discloseComments(ctx, b.conn, views); err != nil {
		return u, err
	}
	if err := b.exec(`COMMIT`); err != nil {
		return u, err
	}
	return u, b.finish()
}

// describe lists a query's column names and types.
func describe(ctx context.Context, conn *sql.Conn, q string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals[0].String+" "+vals[1].String)
	}
	return out, rows.Err()
}

// update makes tmp the previous build updated, when it can (out.Updated);
// otherwise it leaves no file at tmp and returns why the build is a full
// one.
func (w *Warehouse) update(ctx context.Context, out *Rebuilt, full bool, work, tmp string, runs []runRow, files map[string][]string, staleAfter time.Duration, info buildInfo) (string, error) {
	if full {
		return "asked for (--full-rebuild)", nil
	}
	if _, err := os.Lstat(filepath.Join(w.Dir, DatabaseFile)); errors.Is(err, fs.ErrNotExist) {
		return w.fromTemplate(ctx, out, work, tmp, runs, files, staleAfter, info)
	}
	stamp, ok := w.readStamp()
	if !ok {
		return "no record of the last build (" + stampRel + ")", nil
	}
	reason, err := w.copyPrevious(ctx, tmp, stamp)
	if err == nil && reason == "" {
		var u updated
		u, err = updateInto(ctx, w.Dir, tmp, stamp, runs, out.Problems, files, staleAfter, info, DuckDBMemoryLimit)
		if err == nil {
			out.Updated, out.layout = true, stamp.Layout
			out.Added, out.Removed, out.schema, out.ViewsKept = u.added, u.removed, u.schema, u.viewsKept
			return "", nil
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	var nu *notUpdatable
	switch {
	case errors.As(err, &nu):
		reason = nu.reason
	case err != nil:
		reason = "the update failed (" + firstLine(err.Error()) + ")"
	}
	// The copy goes; the full build starts from nothing.
	for _, f := range []string{DatabaseFile, DatabaseFile + ".wal"} {
		if err := w.remove(filepath.Join(work, f)); err != nil {
			return "", err
		}
	}
	return reason, nil
}

// fromTemplate makes tmp the first build: the built-in empty warehouse
// (template.go) updated with every served run, when it can
// (out.FromTemplate); otherwise it leaves no file at tmp, for a build from
// nothing. Either way the database serves every retained run, as a full
// build's does, and the reason returned says why it is one.
func (w *Warehouse) fromTemplate(ctx context.Context, out *Rebuilt, work, tmp string, runs []runRow, files map[string][]string, staleAfter time.Duration, info buildInfo) (string, error) {
	const reason = "no warehouse.duckdb yet"
	stamp, err := writeTemplate(tmp)
	if err == nil {
		var u updated
		u, err = updateInto(ctx, w.Dir, tmp, stamp, runs, out.Problems, files, staleAfter, info, rebuildMemoryLimit())
		if err == nil {
			out.FromTemplate, out.layout, out.schema, out.ViewsKept = true, stamp.Layout, u.schema, u.viewsKept
			return reason, nil
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	for _, f := range []string{DatabaseFile, DatabaseFile + ".wal"} {
		if err := w.remove(filepath.Join(work, f)); err != nil {
			return "", err
		}
	}
	var nu *notUpdatable
	if errors.As(err, &nu) {
		return reason + " (built from nothing: the built-in empty warehouse could not start it, because " + nu.reason + ")", nil
	}
	return reason + " (built from nothing: the built-in empty warehouse failed: " + firstLine(err.Error()) + ")", nil
}
