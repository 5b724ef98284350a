// Package storegen writes SQLite stores in Kandev's exact on-disk format:
// Kandev's full schema (102 tables and their indexes, extracted from a store
// Kandev's own code wrote), timestamp text exactly as mattn/go-sqlite3 writes
// it, kandev_meta activation keys as RFC3339Nano text, and message / subagent
// rows shaped like the ones Kandev's repository code writes (see
// testdata/kandev/README.md: stores Kandev's own code wrote at commit
// cd9fa0e6).
//
// It serves two purposes: DemoOptions reproduces the subagent-context spec's
// reference population exactly (a small, checked-in demo store), and
// LargeOptions scales to millions of rows for benchmarks, streaming one
// session at a time inside a single transaction.
//
// Output is deterministic: the same Options produce a byte-identical file.
// Nothing reads the wall clock.
package storegen

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed schema.sql
var schemaSQL string

//go:embed boot.sql
var bootSQL string

// Metadata keys Kandev keeps in kandev_meta.
const (
	KeyCaptureSince    = "subagent_context_capture_since"
	KeyBackfillThrough = "subagent_context_backfill_through"
	KeyExecutionSince  = "subagent_context_execution_since"
	KeyKandevVersion   = "kandev_version"
	KeySchemaInit      = "schema_initialized_at"
	KeyCommitCapture   = "commit_capture_activated_at"
)

// Options controls what Generate writes. The zero value is not useful; start
// from DemoOptions or LargeOptions.
type Options struct {
	// Seed drives every id, text choice and timestamp jitter.
	Seed uint64
	// Overwrite allows replacing an existing file at path.
	Overwrite bool

	// Reference selects the spec's reference population (253 subagent rows
	// over 38 sessions and 127 turns, plus sessions and turns without
	// subagents), laid out as an upgraded installation around a fixed
	// CaptureSince. With Reference set, Sessions/Turns/Subagents/Messages/
	// Collisions/Start/End/CaptureSince must be left as DemoOptions sets them.
	Reference bool

	// Scaled population (Reference unset). All totals are exact.
	Sessions   int // tasks, one session each
	Turns      int // task_session_turns rows (>= Sessions)
	Subagents  int // task_session_subagents rows, collision rows included
	Collisions int // extra rows re-using a (session, tool_call_id) under a second execution (AC-32)
	Messages   int // task_session_messages rows; 0 = minimum + Turns/2

	// Timeline. Session activity lies within [Start, End]. Activity before
	// CaptureSince is written as Kandev's upgrade backfill would have left it
	// (source 'backfill', execution 'unknown'); activity after it is live.
	// A zero CaptureSince writes no subagent_context_* keys and live rows only.
	Start, End   time.Time
	CaptureSince time.Time
	// BootAt is the installation's first boot (boot-time rows, workspace,
	// workflow, schema_initialized_at). Zero = 14 days before Start.
	BootAt time.Time

	// KandevVersion is kandev_meta.kandev_version ("" = "dev").
	KandevVersion string
	// MetaOverrides replaces kandev_meta values verbatim (e.g. second-precision
	// keys, or KeyExecutionSince); MetaDelete removes keys after that.
	MetaOverrides map[string]string
	MetaDelete    []string

	// NullMetadataMessage writes one agent message whose metadata is the text
	// 'null' (compatible with both message-metadata indexes).
	NullMetadataMessage bool
	// BlankMetadataMessage writes one agent message whose metadata is ''. Kandev's
	// idx_messages_metadata_tool_call_id / _pending_id raise on such a row, so
	// the store is then written without those two indexes (as in the fixtures).
	BlankMetadataMessage bool

	// PageSize is the SQLite page size (0 = 4096, mattn's and Kandev's default).
	PageSize int
}

// Stats describes a generated store.
type Stats struct {
	// Rows is the row count of every table Generate wrote to.
	Rows map[string]int64
	// Subagent population breakdown.
	BackfillRows, LiveRows, UnknownLiveRows, CollisionRows int64
	// Meta is the final kandev_meta content.
	Meta map[string]string
	// Bytes is the size of the finished file.
	Bytes int64
}

// DemoOptions reproduces the spec's reference population as an upgraded
// installation (see testdata/demo/README.md for the figures).
func DemoOptions() Options {
	return Options{
		Seed:                20260812,
		Reference:           true,
		Sessions:            demoSessions,
		Turns:               demoTurns,
		Subagents:           refSubagents,
		Collisions:          1,
		Messages:            demoMessages,
		Start:               demoStart,
		End:                 demoEnd,
		CaptureSince:        demoCapture,
		BootAt:              demoBoot,
		KandevVersion:       "dev",
		NullMetadataMessage: true,
		PageSize:            demoPageSize,
	}
}

// LargeOptions returns a scaled population. scale 1.0 is 100,000 sessions,
// 400,000 turns, 1,000,000 subagent rows (100 of them cross-execution
// collisions) and 2,000,000 messages over about nine months, upgraded
// (backfilled) at 40% of the timeline: about 4.1 GB, written in about three
// and a half minutes on two cores with flat memory (one session is held at a
// time; indexes are built after the load). Page size is Kandev's 4096.
func LargeOptions(scale float64) Options {
	n := func(base float64, floor int) int { return max(int(math.Round(base*scale)), floor) }
	start := time.Date(2025, 11, 3, 8, 0, 0, 0, time.UTC)
	end := time.Date(2026, 8, 12, 18, 0, 0, 0, time.UTC)
	capture := start.Add(end.Sub(start) * 2 / 5).Truncate(time.Second).Add(123456789)
	return Options{
		Seed:                1,
		Sessions:            n(100_000, 2),
		Turns:               n(400_000, 8),
		Subagents:           n(1_000_000, 20),
		Collisions:          n(100, 1),
		Messages:            n(2_000_000, 40),
		Start:               start,
		End:                 end,
		CaptureSince:        capture,
		KandevVersion:       "dev",
		NullMetadataMessage: true,
	}
}

// vacuumLimit: stores with fewer rows than this are VACUUMed (compact, like
// the fixtures); larger ones are left as written.
const vacuumLimit = 200_000

// Generate writes a new store at path. It refuses to replace an existing file
// unless opts.Overwrite is set. The file is built under a temporary name and
// renamed into place only when complete.
func Generate(ctx context.Context, path string, opts Options) (Stats, error) {
	o := opts
	if err := o.normalize(); err != nil {
		return Stats{}, err
	}
	if _, err := os.Stat(path); err == nil && !o.Overwrite {
		return Stats{}, fmt.Errorf("storegen: %s already exists (set Overwrite to replace it)", path)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Stats{}, err
	}
	tmp := path + ".storegen-tmp"
	for _, f := range []string{tmp, tmp + "-journal"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return Stats{}, err
		}
	}
	st, err := generate(ctx, tmp, &o)
	if err != nil {
		os.Remove(tmp)
		os.Remove(tmp + "-journal")
		return Stats{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return Stats{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Stats{}, err
	}
	st.Bytes = fi.Size()
	return st, nil
}

func (o *Options) normalize() error {
	if o.PageSize == 0 {
		o.PageSize = 4096
	}
	if o.PageSize < 512 || o.PageSize > 65536 || o.PageSize&(o.PageSize-1) != 0 {
		return fmt.Errorf("storegen: PageSize %d is not a power of two in [512, 65536]", o.PageSize)
	}
	if o.KandevVersion == "" {
		o.KandevVersion = "dev"
	}
	if o.Reference {
		d := DemoOptions()
		if o.Sessions != d.Sessions || o.Turns != d.Turns || o.Subagents != d.Subagents ||
			o.Collisions != d.Collisions || o.Messages != d.Messages ||
			!o.Start.Equal(d.Start) || !o.End.Equal(d.End) || !o.CaptureSince.Equal(d.CaptureSince) {
			return errors.New("storegen: the reference population is fixed; keep DemoOptions' sizes and timeline")
		}
	} else {
		switch {
		case o.Sessions < 1:
			return errors.New("storegen: Sessions must be >= 1")
		case o.Turns < o.Sessions:
			return errors.New("storegen: Turns must be >= Sessions (every session has a turn)")
		case o.Subagents < 0 || o.Collisions < 0 || o.Messages < 0:
			return errors.New("storegen: negative size")
		case o.Collisions > o.Subagents/2:
			return errors.New("storegen: Collisions must be at most half of Subagents")
		case o.Start.IsZero() || !o.End.After(o.Start):
			return errors.New("storegen: need Start < End")
		}
	}
	if o.BootAt.IsZero() {
		o.BootAt = o.Start.Add(-14 * 24 * time.Hour)
	}
	return nil
}

// schemaStatements splits the embedded schema into tables and indexes.
func schemaStatements(withMetadataIndexes bool) (tables, indexes []string) {
	for _, chunk := range strings.Split(schemaSQL, "\n-- @")[1:] {
		head, body, _ := strings.Cut(chunk, "\n")
		kind, name, _ := strings.Cut(head, " ")
		if !withMetadataIndexes && (name == "idx_messages_metadata_tool_call_id" || name == "idx_messages_metadata_pending_id") {
			continue
		}
		stmt := strings.TrimSpace(body)
		if kind == "table" {
			tables = append(tables, stmt)
		} else {
			indexes = append(indexes, stmt)
		}
	}
	return tables, indexes
}

func generate(ctx context.Context, path string, o *Options) (Stats, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return Stats{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer conn.Close()
	for _, p := range []string{
		fmt.Sprintf("PRAGMA page_size=%d", o.PageSize),
		"PRAGMA journal_mode=OFF",
		"PRAGMA synchronous=OFF",
		"PRAGMA locking_mode=EXCLUSIVE",
		"PRAGMA cache_size=-8192",
	} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return Stats{}, fmt.Errorf("storegen: %s: %w", p, err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return Stats{}, err
	}
	defer tx.Rollback()
	w := &writer{ctx: ctx, tx: tx, o: o, st: Stats{Rows: map[string]int64{}}}
	if err := w.run(); err != nil {
		return Stats{}, err
	}
	if err := tx.Commit(); err != nil {
		return Stats{}, err
	}
	var total int64
	for _, n := range w.st.Rows {
		total += n
	}
	if total < vacuumLimit {
		if _, err := conn.ExecContext(ctx, "VACUUM"); err != nil {
			return Stats{}, fmt.Errorf("storegen: VACUUM: %w", err)
		}
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		return Stats{}, err
	}
	if mode != "delete" {
		return Stats{}, fmt.Errorf("storegen: journal_mode is %q, want delete", mode)
	}
	if err := conn.Close(); err != nil {
		return Stats{}, err
	}
	return w.st, db.Close()
}
