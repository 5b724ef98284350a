package hub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

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
// inside the catalog's compare-and-swap is table.ErrCommitFailed.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
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
		wait := min(20*time.Millisecond<<attempt, 2*time.Second)
		wait += time.Duration(rand.Int64N(int64(wait)))
		select {
		case <-ctx.Done():
			return false, attempt, ctx.Err()
		case <-time.After(wait):
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
