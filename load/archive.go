package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// Rows deleted from the source between runs are kept in archive tables that
// every run carries forward: the archive of a run is the previous run's
// archive plus the rows the previous run had and this one has not. Retention
// therefore never loses them (only the latest run's archive is needed).

// Archive tables (the catalog's, models.TableArchive*).
const (
	TableArchiveSubagent = models.TableArchiveSubagent
	TableArchiveSession  = models.TableArchiveSession
	TableArchiveTurn     = models.TableArchiveTurn
)

// Archived pairs an archive table with the table whose deleted rows it
// keeps.
type Archived struct {
	Archive, Table, IDColumn string
}

// Archives lists the archive tables, from the catalog.
var Archives = func() []Archived {
	var out []Archived
	for _, a := range models.Archives() {
		out = append(out, Archived{a.Name, a.Archive.Of, a.ID})
	}
	return out
}()

// VerifyRun checks a committed run's files against its manifest (size and
// SHA-256), as Rebuild does before serving it.
func VerifyRun(dir string, m models.Manifest) error { return verifyRun(dir, m) }

// RunFile is the path of a committed run's file of a table (derived from
// the manifest's validated names, never read from it); ok is false when the
// run has no file for the table.
func RunFile(dir string, m models.Manifest, table string) (path string, ok bool) {
	if _, has := m.Files[table]; !has || !isTable(table) {
		return "", false
	}
	return filepath.Join(dir, fileRel(table, m.InstallationID, m.RunID)), true
}

// ArchiveSource is what one archive table of a run is built from.
type ArchiveSource struct {
	Archived
	// Current is this run's staged (closed) file of Table: it gives the
	// archive its columns.
	Current string
	// Previous and PreviousArchive are the previous run's files ("" when
	// it has none); DeletedIDs names the set of ids, kept on the same
	// Archiver (KeepDeleted), of Previous's rows this run no longer has.
	Previous, PreviousArchive, DeletedIDs string
	// PreviousRun and PreviousSnapshot flag the newly archived rows.
	PreviousRun      string
	PreviousSnapshot string
}

// Archiver is the DuckDB connection a run writes its archives with: the
// ids of the rows deleted since the previous run wait on it (KeepDeleted)
// until the archives are written (Staging.WriteArchive).
type Archiver struct{ duck *DuckDB }

// OpenArchiver opens an Archiver, bounded as every DuckDB of a run.
func OpenArchiver(ctx context.Context) (*Archiver, error) {
	duck, err := OpenDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	return &Archiver{duck: duck}, nil
}

// Close drops the kept ids.
func (a *Archiver) Close() error { return a.duck.Close() }

// Rows counts the rows of a Parquet file.
func (a *Archiver) Rows(ctx context.Context, path string) (int64, error) {
	var n int64
	err := a.duck.Conn.QueryRowContext(ctx, `SELECT count(*) FROM read_parquet(`+quote(path)+`)`).Scan(&n)
	return n, err
}

// KeepDeleted keeps ids as the set name (an ArchiveSource's DeletedIDs)
// and returns how many it holds.
func (a *Archiver) KeepDeleted(ctx context.Context, name string, ids []string) (int64, error) {
	conn := a.duck.Conn
	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE `+ident(name)+` (id VARCHAR)`); err != nil {
		return 0, err
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 500)]
		ids = ids[len(batch):]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO `+ident(name)+` VALUES `+strings.TrimSuffix(strings.Repeat("(?),", len(batch)), ","), args...); err != nil {
			return 0, err
		}
	}
	var n int64
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+ident(name)).Scan(&n)
	return n, err
}

// WriteArchive writes a run's archive of one table with DuckDB on a:
// the previous archive carried forward plus the previous run's rows that
// were deleted, every row's run_id set to this run, the newly archived ones
// flagged with the run that detected the deletion and the run (and
// snapshot) that last saw them. The file gets the run's provenance
// document like every other file.
//
// A statement that runs out of DuckDB's memory limit is run again with a
// larger one (withMemoryRetry); retried says why ("" when it was not).
func (s *Staging) WriteArchive(ctx context.Context, a *Archiver, src ArchiveSource, run, provenance string) (retried string, err error) {
	conn := a.duck.Conn
	path := s.Path(src.Archive)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	q := `(SELECT *, NULL::VARCHAR AS deleted_detected_run_id, NULL::VARCHAR AS last_seen_run_id, NULL::TIMESTAMPTZ AS last_seen_snapshot_at
		FROM read_parquet(` + quote(src.Current) + `) LIMIT 0)`
	if src.Previous != "" && src.DeletedIDs != "" {
		q += ` UNION ALL BY NAME
		(SELECT * REPLACE (` + quote(run) + ` AS run_id), ` + quote(run) + ` AS deleted_detected_run_id,
			run_id AS last_seen_run_id, ` + quote(src.PreviousSnapshot) + `::TIMESTAMPTZ AS last_seen_snapshot_at
		FROM read_parquet(` + quote(src.Previous) + `, union_by_name = true)
		WHERE ` + ident(src.IDColumn) + ` IN (SELECT id FROM ` + ident(src.DeletedIDs) + `))`
	}
	if src.PreviousArchive != "" {
		q += ` UNION ALL BY NAME
		(SELECT * REPLACE (` + quote(run) + ` AS run_id) FROM read_parquet(` + quote(src.PreviousArchive) + `, union_by_name = true))`
	}
	copyq := `COPY (` + q + `) TO ` + quote(path) + ` (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384, KV_METADATA {` +
		quote(ProvenanceKey) + `: ` + quote(provenance) + `})`
	retried, err = withMemoryRetry(ctx, conn, func() error {
		_, err := conn.ExecContext(ctx, copyq)
		return err
	})
	if err != nil {
		return retried, fmt.Errorf("archive %s: %w", src.Archive, err)
	}
	return retried, nil
}
