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
// fact table): under DuckDBMemoryLimit the rebuild of a 1M-row run fails
// with "Out of Memory" from 8 threads on, that is on most laptops and
// servers, while it passed on the 2-core machines it was tested on. Two
// threads fit with room to spare (4 do, measured) and cost little: the
// run has finished reading by then.
const DuckDBThreads = 2

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
