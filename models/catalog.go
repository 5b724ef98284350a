package models

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
)

// The table catalog: one declarative definition per warehouse table — its
// name and comment, the source table it is read from, the source columns
// a scan reads (with their caps) in row order, the warehouse columns with
// their types, encoding hints and meanings, and the high-water column.
// extract builds its scans from Read (adding the SQL of the computed
// columns), transform resolves every column it reads or writes by name
// once, load names its tables and Parquet encodings from it, and
// docs/warehouse.md is checked against it (models/catalog_test.go).

// Warehouse table names.
const (
	TableFact            = "fact_subagent_context"
	TableInstallation    = "fact_installation_state"
	TableTask            = "dim_task"
	TableSession         = "dim_session"
	TableTurn            = "dim_turn"
	TableWorkflow        = "dim_workflow"
	TableWorkflowStep    = "dim_workflow_step"
	TableDisclosures     = "disclosures"
	TableRejects         = "rejects"
	TableWriterHealth    = "fact_writer_health"
	TableShortfall       = "fact_writer_shortfall"
	TableArchiveSubagent = "archive_subagent_context"
	TableArchiveSession  = "archive_session"
	TableArchiveTurn     = "archive_turn"
)

// Source tables the extractor reads.
const (
	SourceSubagents = "task_session_subagents"
	SourceSessions  = "task_sessions"
	SourceTurns     = "task_session_turns"
	SourceTasks     = "tasks"
	SourceWorkflows = "workflows"
	SourceSteps     = "workflow_steps"
	SourceMeta      = "kandev_meta"
	SourceMessages  = "task_session_messages"
)

// Type is a warehouse column's type. Parquet holds each as the Arrow type
// Arrow returns; DuckDB reports it as DuckDB returns.
type Type uint8

const (
	String    Type = iota // UTF-8 BYTE_ARRAY
	Int64                 // signed INT64, never unsigned
	Bool                  // BOOLEAN
	Timestamp             // TIMESTAMP(MICROS, isAdjustedToUTC=true)
)

// ArrowTimestamp is the warehouse's one timestamp type.
var ArrowTimestamp = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// Arrow is the type's Arrow data type.
func (t Type) Arrow() arrow.DataType {
	switch t {
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case Timestamp:
		return ArrowTimestamp
	}
	return arrow.BinaryTypes.String
}

// DuckDB is the type as DuckDB reports it for the Parquet column.
func (t Type) DuckDB() string {
	return [...]string{String: "VARCHAR", Int64: "BIGINT", Bool: "BOOLEAN", Timestamp: "TIMESTAMP WITH TIME ZONE"}[t]
}

// Encoding is a hint to the Parquet writer.
type Encoding uint8

const (
	// EncodeDictionary: low cardinality (statuses, enums, models, small
	// counts, installation and run ids): dictionary encoded, with min/max
	// statistics. The default for strings, integers and booleans.
	EncodeDictionary Encoding = iota
	// EncodePlain: plain encoding, with statistics: timestamps (the
	// default) and (nearly) unique numbers.
	EncodePlain
	// EncodeUnique: (nearly) unique identifiers, or ids that repeat only a
	// few times in a row group: plain (a dictionary costs hashing and a
	// large dictionary page; zstd finds the repeats) and no statistics
	// (their min and max prune nothing, and their byte-wise comparisons
	// cost a quarter of the writer's time).
	EncodeUnique
)

// Column is one warehouse column.
type Column struct {
	Name     string
	Type     Type
	Nullable bool
	Encoding Encoding
	// Comment is the column's meaning, exactly as docs/warehouse.md states
	// it (models/catalog_test.go compares them).
	Comment string
}

// Field is the column's Arrow field.
func (c Column) Field() arrow.Field {
	return arrow.Field{Name: c.Name, Type: c.Type.Arrow(), Nullable: c.Nullable}
}

func req(name string, t Type, comment string) Column {
	c := Column{Name: name, Type: t, Comment: comment}
	if t == Timestamp {
		c.Encoding = EncodePlain
	}
	return c
}

func opt(name string, t Type, comment string) Column {
	c := req(name, t, comment)
	c.Nullable = true
	return c
}

func (c Column) unique() Column { c.Encoding = EncodeUnique; return c }
func (c Column) plain() Column  { c.Encoding = EncodePlain; return c }

// SourceColumn is one column a scan of a table's source reads, stored or
// computed by the source inside the snapshot.
type SourceColumn struct {
	Name     string
	Kind     ColumnKind
	Required bool
	// Computed columns are evaluated by the source's query (extract holds
	// their SQL); every other column is stored.
	Computed bool
	// Content marks a column that may hold user or agent content: its raw
	// value is never copied (into rejects).
	Content bool
	// MaxBytes is the cap applied by the source query (see
	// ColumnSpec.MaxBytes); 0 for computed columns.
	MaxBytes int
}

// label, scalar and content are stored columns with their caps: an
// identifier or label (MaxLabelBytes), the text of an integer or instant
// (MaxScalarBytes), content read for one key (MaxMetadataBytes).
func label(name string) SourceColumn { return SourceColumn{Name: name, MaxBytes: MaxLabelBytes} }
func scalar(name string, k ColumnKind) SourceColumn {
	return SourceColumn{Name: name, Kind: k, MaxBytes: MaxScalarBytes}
}
func content(name string) SourceColumn {
	return SourceColumn{Name: name, Content: true, MaxBytes: MaxMetadataBytes}
}
func computed(name string) SourceColumn {
	return SourceColumn{Name: name, Kind: KindCount, Computed: true}
}
func (c SourceColumn) required() SourceColumn { c.Required = true; return c }

// Table is one warehouse table.
type Table struct {
	Name string
	// Comment is the COMMENT ON text of the table's current view.
	Comment string
	// Source is the source table the rows come from ("" when the
	// extractor derives them: disclosures, rejects).
	Source string
	// Read is what a scan of Source reads, in row order: stored columns,
	// then the columns the source computes. Nil when Source is not
	// scanned as a table (kandev_meta, the messages).
	Read []SourceColumn
	// ID is the warehouse column that holds the source row's id ("" for
	// a table without one).
	ID string
	// HighWater is the column of Read whose maximum is the table's high
	// water in provenance ("" for none).
	HighWater string
	// Columns are the warehouse columns in file order; installation_id
	// and run_id lead every table.
	Columns []Column
	// Archive is set on an archive table: the table whose deleted rows it
	// keeps, by which column. Its Columns are that table's, then
	// ArchiveColumns.
	Archive *Archived

	col, read map[string]int
}

// Archived names the table an archive keeps the deleted rows of; its ID
// identifies a row.
type Archived struct {
	Of string
}

// Col is the index of a warehouse column. It panics on a name the table
// does not have: callers resolve their columns once, at setup.
func (t *Table) Col(name string) int {
	i, ok := t.col[name]
	if !ok {
		panic(fmt.Sprintf("models: table %s has no column %s", t.Name, name))
	}
	return i
}

// ReadCol is the index of a source column in a scan's row. It panics on a
// name the scan does not read.
func (t *Table) ReadCol(name string) int {
	i, ok := t.read[name]
	if !ok {
		panic(fmt.Sprintf("models: the scan of %s reads no column %s", t.Source, name))
	}
	return i
}

// Schema is the table's Arrow schema.
func (t *Table) Schema() *arrow.Schema {
	fields := make([]arrow.Field, len(t.Columns))
	for i, c := range t.Columns {
		fields[i] = c.Field()
	}
	return arrow.NewSchema(fields, nil)
}

// ReadNames are the names of Read, in row order.
func (t *Table) ReadNames() []string {
	names := make([]string, len(t.Read))
	for i, c := range t.Read {
		names[i] = c.Name
	}
	return names
}

// Tables is the catalog, in the warehouse's order. Do not modify it.
func Tables() []*Table { return catalog }

// TableNames are the catalog's names, in order.
func TableNames() []string {
	names := make([]string, len(catalog))
	for i, t := range catalog {
		names[i] = t.Name
	}
	return names
}

// Lookup returns the table named name, or nil.
func Lookup(name string) *Table {
	for _, t := range catalog {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// MustTable returns the table named name; it panics on a name not in the
// catalog.
func MustTable(name string) *Table {
	t := Lookup(name)
	if t == nil {
		panic("models: no table " + name + " in the catalog")
	}
	return t
}

// Archives are the catalog's archive tables, in order.
func Archives() []*Table {
	var out []*Table
	for _, t := range catalog {
		if t.Archive != nil {
			out = append(out, t)
		}
	}
	return out
}

// Scanned are the catalog's tables read by a scan of their source, in
// catalog order.
func Scanned() []*Table {
	var out []*Table
	for _, t := range catalog {
		if t.Read != nil {
			out = append(out, t)
		}
	}
	return out
}

// ColumnEncoding is the encoding hint of a column name, the same in every
// table that has it (models/catalog_test.go checks); ok is false for a
// name no table has.
func ColumnEncoding(name string) (e Encoding, ok bool) {
	e, ok = encodings[name]
	return e, ok
}

var encodings = map[string]Encoding{}

// leadColumns lead every table: every row carries its installation and run.
var leadColumns = []Column{
	req("installation_id", String, "Stable installation name (`--installation`); every row carries it."),
	req("run_id", String, "The extraction run that wrote the row (sortable: UTC start + random suffix)."),
}

// ArchiveColumns follow the archived table's columns in its archive.
var ArchiveColumns = []Column{
	opt("deleted_detected_run_id", String, "The run that first found the row missing from the source."),
	opt("last_seen_run_id", String, "The last run whose snapshot still had the row."),
	opt("last_seen_snapshot_at", Timestamp, "That run's snapshot instant: the row was deleted after it (and before the detecting run's snapshot)."),
}

func init() {
	for _, t := range catalog {
		if t.Archive != nil {
			of := MustTable(t.Archive.Of)
			t.Columns = append(slices.Clone(of.Columns), ArchiveColumns...)
			t.ID = of.ID
		} else {
			t.Columns = append(slices.Clone(leadColumns), t.Columns...)
		}
		t.col = map[string]int{}
		for i, c := range t.Columns {
			if _, dup := t.col[c.Name]; dup {
				panic("models: " + t.Name + "." + c.Name + " twice")
			}
			t.col[c.Name] = i
			if _, seen := encodings[c.Name]; !seen {
				encodings[c.Name] = c.Encoding
			}
		}
		t.read = map[string]int{}
		for i, c := range t.Read {
			t.read[c.Name] = i
		}
	}
}
