package pipeline

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"time"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/transform"
)

// Deletions between runs: the ids of sessions, turns and subagent rows are
// remembered as 128-bit hashes while the snapshot streams (16 bytes a row,
// never the rows), then the previous run's ids are read back from its
// verified files and looked up. Rows the previous run had and this one has
// not were deleted in the source; they go to the archive tables, which
// every run carries forward.

// idSet holds the hashes of one table's ids, sorted once sealed.
type idSet struct {
	hashes []idHash
}

type idHash struct{ hi, lo uint64 }

// Two independently seeded hashes make 128 bits: a deleted id is missed
// only if it collides with a present one in both (about 1 in 10^26 for a
// million rows).
var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashID(id string) idHash {
	return idHash{maphash.String(idSeeds[0], id), maphash.String(idSeeds[1], id)}
}

func compareHash(a, b idHash) int {
	if a.hi != b.hi {
		if a.hi < b.hi {
			return -1
		}
		return 1
	}
	switch {
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// add records a row's id as read from the source (text or integer).
func (s *idSet) add(v any) {
	switch x := v.(type) {
	case string:
		s.hashes = append(s.hashes, hashID(x))
	case int64:
		s.hashes = append(s.hashes, hashID(strconv.FormatInt(x, 10)))
	case []byte:
		s.hashes = append(s.hashes, hashID(string(x)))
	}
}

func (s *idSet) seal() { slices.SortFunc(s.hashes, compareHash) }

// has says whether id, as its bytes, was added (maphash hashes a string and
// its bytes alike).
func (s *idSet) has(id []byte) bool {
	h := idHash{maphash.Bytes(idSeeds[0], id), maphash.Bytes(idSeeds[1], id)}
	_, ok := slices.BinarySearchFunc(s.hashes, h, compareHash)
	return ok
}

// trackedIDs are the tables whose deletions are tracked, by the table the
// pipeline writes: those the catalog archives.
var trackedIDs = func() map[string]bool {
	m := map[string]bool{}
	for _, a := range models.Archives() {
		m[a.Archive.Of] = true
	}
	return m
}()

// deletions is what the comparison with the previous run found; its
// archiver holds the deleted ids until the archives are written.
type deletions struct {
	previous *models.Manifest
	archiver *load.Archiver
	// deleted counts newly deleted rows per archived table; carried the
	// previous archive's rows.
	deleted, carried map[string]int64
	// sources are the archive inputs, per archive table.
	sources map[string]load.ArchiveSource
	// skipped says why no comparison was made (no previous run, or its
	// files failed verification).
	skipped string
}

func (d *deletions) close() {
	if d.archiver != nil {
		d.archiver.Close()
	}
}

// archiveRows is how many rows the archive of a table holds in this run.
func (d *deletions) archiveRows(archive string) int64 { return d.deleted[archive] + d.carried[archive] }

// detectDeletions compares the ids read in this run with the previous
// committed run's files.
func detectDeletions(ctx context.Context, whDir string, previous *models.Manifest, rebound bool, ids map[string]*idSet) (*deletions, error) {
	d := &deletions{previous: previous, deleted: map[string]int64{}, carried: map[string]int64{}, sources: map[string]load.ArchiveSource{}}
	var err error
	if d.archiver, err = load.OpenArchiver(ctx); err != nil {
		return nil, err
	}
	for _, a := range load.Archives {
		d.sources[a.Archive] = load.ArchiveSource{Archived: a}
	}
	if previous == nil {
		d.skipped = "this is the installation's first committed run"
		return d, nil
	}
	if err := load.VerifyRun(whDir, *previous); err != nil {
		d.skipped = fmt.Sprintf("the previous run %s failed verification (%v)", previous.RunID, err)
		return d, nil
	}
	for _, a := range load.Archives {
		if p, ok := load.RunFile(whDir, *previous, a.Archive); ok {
			src := d.sources[a.Archive]
			src.PreviousArchive = p
			d.sources[a.Archive] = src
			n, err := d.archiver.Rows(ctx, p)
			if err != nil {
				d.close()
				return nil, fmt.Errorf("previous archive %s: %w", a.Archive, err)
			}
			d.carried[a.Archive] = n
		}
	}
	if rebound {
		// The previous run read the store this name was bound to before:
		// its rows were not deleted here. Its archive is carried forward.
		d.skipped = "the installation was rebound to another source in this run"
		return d, nil
	}
	for _, a := range load.Archives {
		src := d.sources[a.Archive]
		src.PreviousRun = previous.RunID
		src.PreviousSnapshot = previous.Provenance.SnapshotAt.UTC().Format(time.RFC3339Nano)
		p, ok := load.RunFile(whDir, *previous, a.Table)
		set := ids[a.Table]
		if !ok || set == nil {
			d.sources[a.Archive] = src
			continue
		}
		src.Previous = p
		src.DeletedIDs = "deleted_" + a.Table
		n, err := d.collectDeleted(ctx, p, a.IDColumn, src.DeletedIDs, set)
		if err != nil {
			d.close()
			return nil, fmt.Errorf("compare %s with run %s: %w", a.Table, previous.RunID, err)
		}
		d.deleted[a.Archive] = n
		d.sources[a.Archive] = src
	}
	return d, nil
}

// collectDeleted reads the previous file's ids (load.ReadIDs) and keeps
// those not in set on the archiver, as table.
func (d *deletions) collectDeleted(ctx context.Context, file, idCol, table string, set *idSet) (int64, error) {
	var gone []string
	if _, err := load.ReadIDs(file, idCol, func(id []byte) {
		if !set.has(id) {
			gone = append(gone, string(id))
		}
	}); err != nil {
		return 0, err
	}
	return d.archiver.KeepDeleted(ctx, table, gone)
}

// disclosures says what was deleted since the previous run, and how much
// the archive holds.
func (d *deletions) disclosures() []transform.Disclosure {
	var out []transform.Disclosure
	sessions, turns, subagents := d.deleted[load.TableArchiveSession], d.deleted[load.TableArchiveTurn], d.deleted[load.TableArchiveSubagent]
	if sessions+turns+subagents > 0 {
		out = append(out, transform.Disclosure{Rule: "deletions", Severity: "warning", Count: subagents, HasCount: true,
			Instant: d.previous.Provenance.SnapshotAt,
			Text: fmt.Sprintf("Since run %s (snapshot %s), %d session(s), %d turn(s) and %d subagent row(s) were deleted from the source "+
				"(Kandev deletes a session's turns and subagent rows with it, AC-16). Current views show the source as it is now, so "+
				"counts may drop between runs; the archive_* tables and subagent_contexts_with_deleted keep every deleted row, "+
				"flagged with the run that last saw it.",
				d.previous.RunID, d.previous.Provenance.SnapshotAt.UTC().Format(time.RFC3339Nano), sessions, turns, subagents)})
	}
	if n := d.archiveRows(load.TableArchiveSubagent); n > subagents && n > 0 {
		out = append(out, transform.Disclosure{Rule: "archived_rows", Severity: "info", Count: n, HasCount: true,
			Text: fmt.Sprintf("%d subagent row(s), %d session(s) and %d turn(s) deleted from the source over earlier runs are kept in the archive_* tables; current views leave them out.",
				n, d.archiveRows(load.TableArchiveSession), d.archiveRows(load.TableArchiveTurn))})
	}
	return out
}
