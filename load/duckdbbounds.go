package load

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// DuckDBThreads is how many worker threads DuckDB may use in a run.
// DuckDB defaults to one per core, and each thread of a CREATE TABLE … AS
// SELECT … FROM read_parquet holds its own buffers (about 15 MB on the
// fact table): under a 96 MB limit the rebuild of a 1M-row run failed
// with "Out of Memory" from 8 threads on, that is on most laptops and
// servers, while it passed on the 2-core machines it was tested on (4
// passed; measured before the limit became 64 MB with smaller row groups,
// warehouseStorage). Two threads cost little: the run has finished
// reading by then; and work that still runs out is done again with a
// larger limit (withMemoryRetry, the rebuild's own retry).
const DuckDBThreads = 2

// DuckDB is an in-memory DuckDB database and the one connection all of a
// piece of work runs on, bounded by BoundDuckDB. Database files are
// ATTACHed on it, never named in the driver's DSN, which cuts a path at
// "?" (a warehouse may be called "wh?").
type DuckDB struct {
	db   *sql.DB
	Conn *sql.Conn
}

// OpenDuckDB opens an in-memory DuckDB with a run's bounds.
func OpenDuckDB(ctx context.Context) (*DuckDB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	d := &DuckDB{db: db, Conn: conn}
	if err := BoundDuckDB(ctx, conn); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the connection and the database.
func (d *DuckDB) Close() error {
	err := d.Conn.Close()
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// BoundDuckDB applies a run's bounds to a DuckDB connection: the memory
// limit (beyond it DuckDB spills to disk) and the thread count that keeps
// the work within it on any machine.
func BoundDuckDB(ctx context.Context, conn *sql.Conn) error {
	for _, q := range []string{
		`SET memory_limit = '` + DuckDBMemoryLimit + `'`,
		`SET threads = ` + strconv.Itoa(DuckDBThreads),
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// withMemoryRetry runs do, a statement on conn that may be run again from
// the start (it rewrites what it writes); if it fails with DuckDB's "Out of
// Memory" error, conn's memory limit is raised to RetryMemoryLimit for a
// second attempt and set back after. It returns why it ran twice ("" when
// it did not). The limits are set for the widest rows measured; wider ones
// must cost memory, not the run.
func withMemoryRetry(ctx context.Context, conn *sql.Conn, do func() error) (string, error) {
	err := do()
	if !isOutOfMemory(err) {
		return "", err
	}
	var limit string
	if qerr := conn.QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&limit); qerr != nil {
		return "", err
	}
	why := memoryRetryReason(limit, err)
	if _, serr := conn.ExecContext(ctx, `SET memory_limit = `+quote(RetryMemoryLimit)); serr != nil {
		return "", err
	}
	err = do()
	if _, serr := conn.ExecContext(ctx, `SET memory_limit = `+quote(limit)); serr != nil && err == nil {
		err = fmt.Errorf("set the memory limit back to %s: %w", limit, serr)
	}
	return why, err
}

// memoryRetryReason says why work was done again with RetryMemoryLimit.
func memoryRetryReason(limit string, err error) string {
	return fmt.Sprintf("ran out of DuckDB's %s memory limit (%s) and was done again with %s", limit, firstLine(err.Error()), RetryMemoryLimit)
}
