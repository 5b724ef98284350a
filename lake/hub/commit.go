package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// maxCommitAttempts bounds the commit retries of one table update.
const maxCommitAttempts = 12

// testHookBeforeCommit, when set (tests), runs just before each commit
// attempt: a test commits a competing snapshot there.
var testHookBeforeCommit func(ctx context.Context, id table.Identifier, attempt int)

// isConflict reports whether a commit failed because the table moved
// underneath it, so that nothing was committed and a reload and retry is
// safe. iceberg-go v0.7.0's SQL catalog reports a snapshot that changed
// between the transaction's load and the catalog's check as a plain
// requirement failure ("requirement failed: branch \"main\" has changed"),
// which its own retry loop does not retry (apache/iceberg-go#1079); a race
// inside the catalog's compare-and-swap is table.ErrCommitFailed. A
// serialization failure (isSerializationFailure) rolled the catalog's
// transaction back, so nothing was committed either.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) || isSerializationFailure(err) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "requirement failed") &&
		(strings.Contains(s, "has changed") || strings.Contains(s, "created concurrently"))
}

// commit applies one update to a table until it lands: it loads the
// table, asks build for a transaction against that state (nil: nothing
// left to do, e.g. another hub did it), and commits it. On a conflict the
// attempt's own manifests are removed (nothing references them) and it
// starts again from a fresh load, so build always decides on the state it
// commits against. Data files are never written here: build only
// references files already in place, so a retry re-writes no data.
func (h *Hub) commit(ctx context.Context, id table.Identifier, build func(*table.Table) (*table.Transaction, error)) (committed bool, retries int, err error) {
	for attempt := 0; ; attempt++ {
		tbl, err := h.cat.LoadTable(ctx, id)
		if err != nil {
			return false, attempt, fmt.Errorf("load %s: %w", strings.Join(id, "."), err)
		}
		tx, err := build(tbl)
		if err != nil || tx == nil {
			return false, attempt, err
		}
		staged, _ := tx.StagedTable()
		if testHookBeforeCommit != nil {
			testHookBeforeCommit(ctx, id, attempt)
		}
		_, err = tx.Commit(ctx)
		if err == nil {
			return true, attempt, nil
		}
		if !isConflict(err) {
			return false, attempt, fmt.Errorf("commit %s: %w", strings.Join(id, "."), err)
		}
		discardStaged(ctx, tbl, staged)
		if attempt+1 >= maxCommitAttempts {
			return false, attempt, fmt.Errorf("commit %s: still conflicting after %d attempts: %w", strings.Join(id, "."), attempt+1, err)
		}
		h.log.Info("commit conflict; reloading and retrying", "table", strings.Join(id, "."), "attempt", attempt+1, "err", err)
		if err := backoff(ctx, attempt); err != nil {
			return false, attempt, err
		}
	}
}

// discardStaged removes the manifest list and manifests a transaction
// wrote for snapshots that did not land (best effort: orphan-file cleanup
// removes whatever is left).
func discardStaged(ctx context.Context, base *table.Table, staged *table.StagedTable) {
	if staged == nil {
		return
	}
	fsys, err := base.FS(ctx)
	if err != nil {
		return
	}
	known := map[int64]bool{}
	for _, s := range base.Metadata().Snapshots() {
		known[s.SnapshotID] = true
	}
	for _, s := range staged.Metadata().Snapshots() {
		if known[s.SnapshotID] {
			continue
		}
		if mfs, err := s.Manifests(fsys); err == nil {
			for _, mf := range mfs {
				if mf.SnapshotID() == s.SnapshotID {
					fsys.Remove(mf.FilePath())
				}
			}
		}
		if s.ManifestList != "" {
			fsys.Remove(s.ManifestList)
		}
	}
}

// isSerializationFailure reports whether err is PostgreSQL's answer to a
// transaction that lost to a concurrent one (SQLSTATE 40001, or 40P01 for a
// deadlock): the transaction was rolled back, and doing it again is what
// PostgreSQL asks for. iceberg-go's SQL catalog runs its writes in
// serializable transactions and retries them three times within 30 ms,
// which hubs creating tables side by side on a busy server outlast (seen:
// "create kandev.writer_health_history: ERROR: could not serialize access
// due to read/write dependencies among transactions (SQLSTATE 40001)").
// pgx's *pgconn.PgError carries the code (SQLState).
func isSerializationFailure(err error) bool {
	var state interface{ SQLState() string }
	if !errors.As(err, &state) {
		return false
	}
	code := state.SQLState()
	return code == "40001" || code == "40P01"
}

// createTable creates a table in the catalog, or loads it when another hub
// created it first. A creation that lost to a concurrent catalog
// transaction (isSerializationFailure) wrote nothing to the catalog and is
// done again, with the commits' backoff, up to maxCommitAttempts times.
func (h *Hub) createTable(ctx context.Context, id table.Identifier, sc *iceberg.Schema, logMsg string, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	name := strings.Join(id, ".")
	for attempt := 0; ; attempt++ {
		t, err := createTableHook(h.cat.CreateTable)(ctx, id, sc, opts...)
		if errors.Is(err, catalog.ErrTableAlreadyExists) { // another hub
			return h.cat.LoadTable(ctx, id)
		}
		if err == nil {
			h.log.Info(logMsg, "table", name, "location", t.Location())
			return t, nil
		}
		if !isSerializationFailure(err) || attempt+1 >= maxCommitAttempts {
			return nil, fmt.Errorf("create %s: %w", name, err)
		}
		h.log.Info("table creation lost to a concurrent catalog transaction; retrying", "table", name, "attempt", attempt+1, "err", err)
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
	}
}

// createTableFunc is the catalog's CreateTable.
type createTableFunc func(ctx context.Context, id table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error)

// testHookCreateTable, when set (tests), wraps the catalog's CreateTable.
var testHookCreateTable func(createTableFunc) createTableFunc

func createTableHook(f createTableFunc) createTableFunc {
	if testHookCreateTable != nil {
		return testHookCreateTable(f)
	}
	return f
}

// backoff waits before attempt+1: 20 ms doubling up to 2 s, plus up to as
// much again at random, so that competing hubs do not retry in step.
func backoff(ctx context.Context, attempt int) error {
	wait := min(20*time.Millisecond<<attempt, 2*time.Second)
	wait += time.Duration(rand.Int64N(int64(wait)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(wait):
		return nil
	}
}
