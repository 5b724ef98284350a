package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"golang.org/x/sync/errgroup"
)

// MaintainOptions tune maintenance. Zero values take the defaults.
type MaintainOptions struct {
	// CompactTargetBytes is the size compaction aims for (default 128 MiB);
	// files under 3/4 of it are candidates.
	CompactTargetBytes int64
	// CompactMinInputFiles is the fewest small files worth one rewrite
	// (default 5).
	CompactMinInputFiles uint
	// ExpireOlderThan expires snapshots older than this (default 7 days),
	// keeping at least RetainLast (default 1). Files only expired snapshots
	// referenced (compacted or replaced data, old manifests) are deleted.
	ExpireOlderThan time.Duration
	RetainLast      int
	// OrphansOlderThan deletes files under a table's location that no
	// snapshot references once they are older than this (default 3 days,
	// Iceberg's: younger ones may belong to a commit in flight). Set
	// OrphansNow for 0.
	OrphansOlderThan time.Duration
	OrphansNow       bool
	// ExpireNow expires every snapshot older than now (but RetainLast).
	ExpireNow bool
	// Workers bounds the tables maintained at once (default 4).
	Workers int
}

// TableMaintenance is what maintenance did to one table.
type TableMaintenance struct {
	Table                     string
	FilesBefore, FilesAfter   int
	Compacted, CompactedInto  int
	ExpiredSnapshots          int
	OrphansDeleted            int
	OrphanBytes               int64
	CompactionSkippedConflict bool
}

// Maintain compacts small data files, expires old snapshots and deletes
// orphan files, for every table in the namespace this hub manages.
// Compaction is iceberg-go's bin-pack planner and rewrite (one snapshot
// per table); a compaction that meets a concurrent commit is skipped until
// the next run (its files are orphans that a later cleanup removes).
func (h *Hub) Maintain(ctx context.Context, opts MaintainOptions) ([]TableMaintenance, error) {
	ctx = h.IO(ctx)
	opts.CompactTargetBytes = cmp.Or(opts.CompactTargetBytes, 128<<20)
	opts.CompactMinInputFiles = cmp.Or(opts.CompactMinInputFiles, 5)
	if opts.ExpireOlderThan == 0 && !opts.ExpireNow {
		opts.ExpireOlderThan = 7 * 24 * time.Hour
	}
	opts.RetainLast = cmp.Or(opts.RetainLast, 1)
	if opts.OrphansOlderThan == 0 && !opts.OrphansNow {
		opts.OrphansOlderThan = 72 * time.Hour
	}
	bases, err := h.BaseTables(ctx)
	if err != nil {
		return nil, err
	}
	var ids []table.Identifier
	for _, base := range bases {
		ids = append(ids, h.HistoryTable(base), h.CurrentTable(base))
	}
	results, err := h.ResultsTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		ids = append(ids, table.Identifier{h.cfg.Namespace, r})
	}
	out := make([]TableMaintenance, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(opts.Workers, 4))
	for i, id := range ids {
		g.Go(func() error {
			tbl, err := h.cat.LoadTable(gctx, id)
			if err != nil {
				return err
			}
			tm, err := h.maintainTable(gctx, tbl, opts)
			if err != nil {
				return fmt.Errorf("maintain %s: %w", strings.Join(id, "."), err)
			}
			out[i] = tm
			h.log.Info("table maintained", "table", tm.Table, "files_before", tm.FilesBefore, "files_after", tm.FilesAfter,
				"expired_snapshots", tm.ExpiredSnapshots, "orphans_deleted", tm.OrphansDeleted)
			return nil
		})
	}
	return out, g.Wait()
}

func (h *Hub) maintainTable(ctx context.Context, tbl *table.Table, opts MaintainOptions) (TableMaintenance, error) {
	id := tbl.Identifier()
	tm := TableMaintenance{Table: strings.Join(id, ".")}
	if tbl.CurrentSnapshot() != nil {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return tm, err
		}
		live, err := liveDataFiles(ctx, tbl)
		if err != nil {
			return tm, err
		}
		tm.FilesBefore = len(live)
		cfg := compaction.DefaultConfig()
		cfg.TargetFileSizeBytes = opts.CompactTargetBytes
		cfg.MinFileSizeBytes = opts.CompactTargetBytes * 3 / 4
		cfg.MaxFileSizeBytes = opts.CompactTargetBytes * 9 / 5
		cfg.MinInputFiles = opts.CompactMinInputFiles
		plan, err := cfg.PlanCompaction(tasks)
		if err != nil {
			return tm, err
		}
		if len(plan.Groups) > 0 {
			groups := make([]table.CompactionTaskGroup, len(plan.Groups))
			for i, g := range plan.Groups {
				groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
				tm.Compacted += len(g.Tasks)
			}
			res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{
				SnapshotProps: map[string]string{PropOperation: "compact"},
				GroupOptions:  []table.CompactionGroupOption{table.WithCompactionTargetFileSize(opts.CompactTargetBytes)},
			})
			switch {
			case isConflict(err):
				tm.Compacted, tm.CompactionSkippedConflict = 0, true
			case err != nil:
				return tm, fmt.Errorf("compact: %w", err)
			default:
				tm.CompactedInto = res.AddedDataFiles
			}
		}
	}
	// Expire, from a fresh load (the compaction above is a snapshot too).
	var err error
	if tbl, err = h.cat.LoadTable(ctx, id); err != nil {
		return tm, err
	}
	before := len(tbl.Metadata().Snapshots())
	_, _, err = h.commit(ctx, id, func(t *table.Table) (*table.Transaction, error) {
		tx := t.NewTransaction()
		if err := tx.ExpireSnapshots(table.WithOlderThan(opts.ExpireOlderThan), table.WithRetainLast(opts.RetainLast)); err != nil {
			return nil, err
		}
		return tx, nil
	})
	if err != nil && !errors.Is(err, errNothing) {
		return tm, fmt.Errorf("expire snapshots: %w", err)
	}
	if tbl, err = h.cat.LoadTable(ctx, id); err != nil {
		return tm, err
	}
	tm.ExpiredSnapshots = before - len(tbl.Metadata().Snapshots())
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(opts.OrphansOlderThan))
	if err != nil {
		return tm, fmt.Errorf("delete orphan files: %w", err)
	}
	tm.OrphansDeleted, tm.OrphanBytes = len(res.DeletedFiles), res.TotalSizeBytes
	live, err := liveDataFiles(ctx, tbl)
	if err != nil {
		return tm, err
	}
	tm.FilesAfter = len(live)
	return tm, nil
}

var errNothing = errors.New("nothing to do")
