package models

import "time"

// Formats and versions of the documents the extractor writes. Bump
// SchemaVersion when a warehouse table changes shape, DocumentVersion when
// a manifest or provenance document does.
const (
	ProvenanceFormat = "kandev-extract/provenance"
	ManifestFormat   = "kandev-extract/run-manifest"
	DocumentVersion  = 2
	SchemaVersion    = 1
)

// KnownDocumentVersion reports whether this build understands a manifest or
// provenance document of version v. Version 1 manifests (before commit
// sequences and checksums) are read; anything newer is refused, never served.
func KnownDocumentVersion(v int) bool { return v == 1 || v == DocumentVersion }

// Provenance says where every row of a run came from. It is stamped into
// every Parquet file's key-value metadata and into the run manifest.
type Provenance struct {
	Format         string  `json:"format"`
	Version        int     `json:"version"`
	RunID          string  `json:"run_id"`
	InstallationID string  `json:"installation_id"`
	SourceDialect  Dialect `json:"source_dialect"`
	SourceLocation string  `json:"source_location"` // secrets redacted
	// SourceFingerprint is the store's own identity,
	// kandev_meta.schema_initialized_at verbatim (nil: absent).
	SourceFingerprint *string                    `json:"source_fingerprint,omitempty"`
	KandevVersion     *string                    `json:"kandev_version"`
	SnapshotAt        time.Time                  `json:"snapshot_at"`
	ExtractorVersion  string                     `json:"extractor_version"`
	SchemaVersion     int                        `json:"schema_version"`
	RawKeys           map[string]*string         `json:"raw_keys"` // null = row absent
	TableShape        TableShape                 `json:"subagent_table_shape"`
	ActivationState   ActivationState            `json:"activation_state"`
	Tables            map[string]TableProvenance `json:"tables"`
	RejectedValues    int64                      `json:"rejected_values"`
	QuarantinedRows   int64                      `json:"quarantined_rows"`
	// RejectsByAction splits rejected_values by the rejects table's action
	// (quarantined_row, nulled_value, replaced_value, truncated_value,
	// flagged); every
	// action is present, zero included.
	RejectsByAction map[string]int64 `json:"rejects_by_action"`
	// ComparedWithRun is the previous committed run this run's deletions
	// were detected against (empty: none, e.g. the first run); Deleted
	// counts, per archive table, the rows that run had and this one has
	// not.
	ComparedWithRun string           `json:"compared_with_run,omitempty"`
	Deleted         map[string]int64 `json:"deleted,omitempty"`
}

// TableProvenance is what was actually read from one source table.
type TableProvenance struct {
	SourceTable     string     `json:"source_table"`
	RowsRead        int64      `json:"rows_read"`
	RowsWritten     int64      `json:"rows_written"`
	HighWaterColumn string     `json:"high_water_column,omitempty"`
	HighWater       *time.Time `json:"high_water,omitempty"`
}

// Run statuses in a manifest.
const (
	RunCommitted = "committed"
	RunFailed    = "failed"
)

// Manifest records one installation's part of a run. A committed manifest
// is the commit marker: files without one are not part of the warehouse.
type Manifest struct {
	Format         string    `json:"format"`
	Version        int       `json:"version"`
	RunID          string    `json:"run_id"`
	InstallationID string    `json:"installation_id"`
	Status         string    `json:"status"`
	Error          string    `json:"error,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	FinishedAt     time.Time `json:"finished_at"`
	DurationMS     int64     `json:"duration_ms"`
	// CommitSeq orders an installation's runs (committed and failed): one
	// more than the highest it had when the run was recorded. "Latest"
	// follows it, never the wall clock (a clock that ran ahead must not pin
	// the current views). 0 in version 1 manifests.
	CommitSeq  int64                  `json:"commit_seq,omitempty"`
	Files      map[string]string      `json:"files,omitempty"`     // table -> path relative to the warehouse
	Checksums  map[string]FileSummary `json:"checksums,omitempty"` // table -> the file's size and SHA-256
	Provenance *Provenance            `json:"provenance,omitempty"`
}

// FileSummary is what a published file must still be before it is served.
type FileSummary struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}
