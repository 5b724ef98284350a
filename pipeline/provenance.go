package pipeline

import (
	"time"

	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
)

// provenanceInput is what a run's provenance document is assembled from.
type provenanceInput struct {
	runID, installation string
	source              models.Source
	identity            load.SourceIdentity
	state               models.InstallationState
	snapshotAt          time.Time
	outs                *outputs
	tr                  *transformers
	meta                []models.MetaEntry
	messagesRead        int64
	del                 *deletions
}

// buildProvenance assembles the document every file of the run carries:
// per table the rows read and written and the high water actually read,
// the deletions found and the archives' rows.
func buildProvenance(in provenanceInput) *models.Provenance {
	state, rejects := in.state, in.tr.rejects
	prov := &models.Provenance{
		Format: models.ProvenanceFormat, Version: models.DocumentVersion,
		RunID: in.runID, InstallationID: in.installation,
		SourceDialect: in.source.Dialect(), SourceLocation: in.source.Location(), SourceFingerprint: in.identity.Fingerprint,
		KandevVersion: state.KandevVersion, SnapshotAt: in.snapshotAt,
		ExtractorVersion: ExtractorVersion(), SchemaVersion: models.SchemaVersion,
		RawKeys: map[string]*string{
			models.KeyCaptureSince:    state.CaptureSince.Raw,
			models.KeyBackfillThrough: state.BackfillThrough.Raw,
			models.KeyExecutionSince:  state.ExecutionSince.Raw,
		},
		TableShape: state.Shape, ActivationState: state.Activation,
		Tables:         map[string]models.TableProvenance{},
		RejectedValues: rejects.Count, QuarantinedRows: rejects.Rows,
		RejectsByAction: rejects.ByAction(),
	}
	for _, o := range in.outs.list {
		t := o.table
		tp := models.TableProvenance{SourceTable: t.Source, RowsWritten: o.file.Rows}
		switch t.Name {
		case models.TableFact:
			tp.RowsRead = o.file.Rows + rejects.Rows // quarantined rows were read too
		case models.TableInstallation:
			tp.RowsRead = models.MetaRowsRead(in.meta)
		case models.TableWriterHealth:
			tp.RowsRead = in.messagesRead
		case models.TableShortfall, models.TableDisclosures, models.TableRejects:
			tp.RowsRead = 0 // the messages are counted once, under fact_writer_health
		default:
			tp.RowsRead = o.file.Rows
		}
		if t.HighWater != "" {
			if at := in.tr.highWater(t.Name); !at.IsZero() {
				tp.HighWaterColumn, tp.HighWater = t.HighWater, &at
			}
		}
		prov.Tables[t.Name] = tp
	}
	del := in.del
	if del.skipped == "" {
		prov.ComparedWithRun = del.previous.RunID
		prov.Deleted = map[string]int64{}
		for _, a := range load.Archives {
			prov.Deleted[a.Archive] = del.deleted[a.Archive]
		}
	}
	for _, a := range load.Archives {
		prov.Tables[a.Archive] = models.TableProvenance{RowsWritten: del.archiveRows(a.Archive)}
	}
	return prov
}
