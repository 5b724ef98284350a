package transform

import (
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// The scans of the catalog's tables by their old names. transform writes
// no SQL: the scans are extract's (extract.Spec, extract/scans). These
// remain for internal/bench, cmd's progress and extract/membound, which
// name them so, and go when those call extract.Spec.

// Prefer extract.Spec(models.MustTable(models.TableFact), true).
func SubagentSpec() models.TableSpec { return scans.Spec(models.MustTable(models.TableFact), true) }

// Prefer extract.Spec(models.MustTable(models.TableSession), featurePresent).
func SessionSpec(featurePresent bool) models.TableSpec {
	return scans.Spec(models.MustTable(models.TableSession), featurePresent)
}

// Prefer extract.Spec(models.MustTable(models.TableTurn), featurePresent).
func TurnSpec(featurePresent bool) models.TableSpec {
	return scans.Spec(models.MustTable(models.TableTurn), featurePresent)
}

// Prefer extract.Spec(models.MustTable(models.TableTask), true).
func TaskSpec() models.TableSpec { return scans.Spec(models.MustTable(models.TableTask), true) }

// Prefer extract.Spec(models.MustTable(models.TableWorkflow), true).
func WorkflowSpec() models.TableSpec { return scans.Spec(models.MustTable(models.TableWorkflow), true) }

// Prefer extract.Spec(models.MustTable(models.TableWorkflowStep), true).
func WorkflowStepSpec() models.TableSpec {
	return scans.Spec(models.MustTable(models.TableWorkflowStep), true)
}
