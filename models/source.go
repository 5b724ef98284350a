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

// SQLiteNotIndexed marks, in a spec's Join, a table reference that SQLite
// should scan rather than read through an index. It is an SQL comment, so
// it is inert as written; the SQLite reader renders it as NOT INDEXED and
// the PostgreSQL reader removes it. (Without ANALYZE statistics SQLite
// groups task_session_subagents through a non-covering index, one random
// table lookup per row; a plain scan is faster.)
const SQLiteNotIndexed = "/*kx:sqlite-not-indexed*/"

// Column reports the index of a column in the spec, or -1.
func (t TableSpec) Column(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// MetaEntry is one kandev_meta row, verbatim.
type MetaEntry struct {
	Key   string
	Value string
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
	Meta(ctx context.Context) ([]MetaEntry, error)
	// TableExists reports whether a table is present.
	TableExists(ctx context.Context, table string) (bool, error)
	// Columns lists a table's columns (nil when the table is absent).
	Columns(ctx context.Context, table string) ([]string, error)
	SubagentSchema(ctx context.Context) (SubagentSchema, error)
	// Scan streams the rows of spec to fn. The row slice is reused between
	// calls: fn must copy what it keeps. Values are nil, string, int64 or
	// time.Time (KindStamp on PostgreSQL); SQLite's dynamic typing may put
	// any of them in any column, and the transformer checks.
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
