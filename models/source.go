package models

import (
	"context"
	"time"
)

// ColumnKind says how a source column is read and converted.
type ColumnKind int

const (
	KindText  ColumnKind = iota // TEXT, read as string
	KindInt                     // INTEGER; SQLite may still hold text in it
	KindStamp                   // TIMESTAMP: SQLite text, PostgreSQL UTC wall clock
	KindCount                   // an aggregate expression the source computes
)

// ColumnSpec is one column the extractor wants from a table.
type ColumnSpec struct {
	Name     string
	Kind     ColumnKind
	Required bool
	// Expr, when set, is an SQL expression evaluated by the source instead
	// of reading a stored column (used for per-turn subagent counts, which
	// must come from the same snapshot). It is written in SQL that both
	// dialects accept.
	Expr string
	// MaxBytes caps a stored column: the source query hands over at most
	// its first MaxBytes bytes (cut at a character boundary), so a huge
	// value never enters the process. A longer value arrives as a
	// Truncated cell. 0 reads the value whole (Expr columns, whose values
	// the source computes).
	MaxBytes int
}

// Truncated is the cell of a capped column (ColumnSpec.MaxBytes) whose
// stored value is longer than the cap. The source measured the value
// (SQLite's and PostgreSQL's octet_length read no content) and read at
// most a bounded prefix of it.
type Truncated struct {
	// Prefix is the value's first bytes: at most the cap, never a partial
	// UTF-8 sequence at its end. Valid only when HasPrefix: SQLite cannot
	// read a prefix without loading the whole value, so over
	// SQLitePrefixBytes the value is not read at all.
	Prefix    string
	HasPrefix bool
	// Bytes is the stored value's length in bytes.
	Bytes int64
	// Cap is the column's MaxBytes; Kind its ColumnKind.
	Cap  int
	Kind ColumnKind
}

// TableSpec is a table to stream: the columns the pipeline needs and nothing
// more. Content columns (message text, prompts, results, titles,
// descriptions) are never listed, so they are never read.
type TableSpec struct {
	Name    string
	Columns []ColumnSpec
	// Alias, when set, names the table in the FROM clause; stored columns
	// are then read as Alias.column.
	Alias string
	// Join is appended after the FROM clause (an aggregate LEFT JOIN).
	Join string
	// Where is an optional filter in SQL both dialects accept.
	Where string
}

// Column reports the index of a column in the spec, or -1.
func (t TableSpec) Column(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// SQLitePrefixBytes bounds the values SQLite reads a prefix of: substr()
// loads the whole value into memory first, so a capped value longer than
// this is measured (octet_length reads no content) but not read at all.
// kandev_meta values, read one at a time, are bounded by
// SQLiteMetaPrefixBytes instead.
const (
	SQLitePrefixBytes     = 1 << 20
	SQLiteMetaPrefixBytes = 32 << 20
)

// Caps on what the extractor reads of a stored value (ColumnSpec.MaxBytes,
// and every kandev_meta value). Each is applied in the source query, so a
// longer value never enters the process; every cut is listed in rejects.
const (
	// MaxLabelBytes caps identifiers and labels: ids, references, tool
	// call and execution ids, models, types, statuses, states, names,
	// kandev_version and the raw activation keys. Kandev's ids are 36-byte
	// UUIDs or ~30-byte tool call ids, a valid key is at most 35 bytes.
	MaxLabelBytes = 256
	// MaxScalarBytes caps the text of a timestamp or an integer column:
	// the longest valid one is 35 bytes, so a longer value is refused as
	// not a timestamp / not an integer, never cut into one.
	MaxScalarBytes = 64
	// MaxMetadataBytes caps turn metadata, which is read only for
	// workflow_step_id_at_start (Kandev writes ~70 bytes); a longer one is
	// not read at all.
	MaxMetadataBytes = 16 << 10
)

// MetaEntry is one kandev_meta key the extractor reads (MetaKeys), its
// value verbatim up to MaxLabelBytes.
type MetaEntry struct {
	Key   string
	Value string
	// Bytes is the stored value's length in bytes. When it exceeds
	// MaxLabelBytes, Value holds only its first bytes (cut at a character
	// boundary), or nothing when !HasPrefix (see Truncated).
	Bytes     int64
	HasPrefix bool
	// Rows is how many kandev_meta rows have this key: 1 unless the store
	// lost its primary key, when the first one read is used.
	Rows int64
}

// Truncated reports whether the stored value was longer than Value.
func (e MetaEntry) Truncated() bool { return e.Bytes > int64(len(e.Value)) }

// MetaKeys are the only kandev_meta keys the extractor reads (the three
// activation keys, kandev_version, and schema_initialized_at, the store's
// fingerprint); every other row stays unread.
var MetaKeys = []string{KeyCaptureSince, KeyBackfillThrough, KeyExecutionSince, KeyKandevVersion, KeySchemaInitializedAt}

// MetaRowsRead is how many kandev_meta rows a Meta result was read from
// (the rows of MetaKeys, duplicates included).
func MetaRowsRead(meta []MetaEntry) int64 {
	var n int64
	for _, e := range meta {
		n += e.Rows
	}
	return n
}

// SubagentSchema is the observed shape of task_session_subagents.
type SubagentSchema struct {
	Exists  bool
	Columns []string
	// UniqueKeys lists each unique constraint or unique index by its
	// column set, in declared order.
	UniqueKeys [][]string
}

// Source is a Kandev store the extractor can read.
type Source interface {
	Dialect() Dialect
	// Location is the store's location with any secret redacted; safe to
	// print and to write into provenance.
	Location() string
	// Begin opens one consistent read-only snapshot.
	Begin(ctx context.Context) (Snapshot, error)
	Close() error
}

// Snapshot is one consistent, read-only view of a store: every read made
// through it sees the same data (SQLite read transaction, PostgreSQL
// REPEATABLE READ READ ONLY).
type Snapshot interface {
	// At is the wall-clock instant the snapshot was taken.
	At() time.Time
	// Meta reads the kandev_meta rows of MetaKeys (and no other), one
	// entry per key, values capped at MaxLabelBytes.
	Meta(ctx context.Context) ([]MetaEntry, error)
	// TableExists reports whether a table is present.
	TableExists(ctx context.Context, table string) (bool, error)
	// Columns lists a table's columns (nil when the table is absent).
	Columns(ctx context.Context, table string) ([]string, error)
	SubagentSchema(ctx context.Context) (SubagentSchema, error)
	// Scan streams the rows of spec to fn. The row slice is reused between
	// calls: fn must copy what it keeps. Values are nil, string, int64 or
	// time.Time (KindStamp on PostgreSQL); SQLite's dynamic typing may put
	// any of them in any column, and the transformer checks. A value
	// longer than its column's MaxBytes is a Truncated.
	Scan(ctx context.Context, spec TableSpec, fn func(row []any) error) error
	// Query runs a read-only statement inside the snapshot (writer health)
	// and streams its rows like Scan.
	Query(ctx context.Context, query string, args []any, fn func(row []any) error) error
	Close() error
}

// MissingColumnError reports a required column that the store lacks.
type MissingColumnError struct {
	Source, Table, Column string
}

func (e *MissingColumnError) Error() string {
	return "store " + e.Source + ": table " + e.Table + " has no column " + e.Column +
		" (required); this Kandev version is not supported"
}

// MissingTableError reports a required table that the store lacks.
type MissingTableError struct {
	Source, Table string
}

func (e *MissingTableError) Error() string {
	return "store " + e.Source + ": required table " + e.Table + " is missing; is this a Kandev store?"
}
