package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kandev/kandev-extract/models"
)

// ---- dim_turn --------------------------------------------------------------

// TurnSpec reads task_session_turns with their subagent counts. metadata is
// read only for workflow_step_id_at_start.
func TurnSpec(featurePresent bool) models.TableSpec {
	spec := models.TableSpec{Name: "task_session_turns", Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "task_session_id", Required: true},
		{Name: "task_id"},
		{Name: "started_at", Kind: models.KindStamp, Required: true},
		{Name: "completed_at", Kind: models.KindStamp},
		{Name: "metadata"},
		{Name: "updated_at", Kind: models.KindStamp},
	}}
	if featurePresent {
		spec.Columns = append(spec.Columns, countColumns()...)
		spec.Join = fanoutJoin("turn_id")
	} else {
		spec.Columns = append(spec.Columns, zeroCountColumns()...)
	}
	spec.Columns = append(spec.Columns,
		models.ColumnSpec{Name: "rows_sharing_id", Kind: models.KindCount, Expr: "COALESCE(dup.n, 1)"},
		models.ColumnSpec{Name: "session_missing", Kind: models.KindCount, Expr: sessionMissing})
	spec.Columns = append(spec.Columns, evidenceColumns(featurePresent)...)
	spec.Join += duplicateJoin("task_session_turns", "dup")
	return capped(spec)
}

// turnDistinct is the position of distinct_tool_calls (then
// live_backfill_overlap) in TurnSpec.
var turnDistinct = TurnSpec(true).Column("distinct_tool_calls")

var turnNames = specNames(TurnSpec(true))

// TurnSchema is dim_turn.
var TurnSchema = runFields(append(append([]arrow.Field{
	str("turn_id"), str("session_id"), optStr("task_id"), optStr("workflow_step_id_at_start"),
	optStamp("started_at"), optStamp("completed_at"),
}, fanoutFields...), integer("unattributed_session_rows"))...)

// Turns transforms task_session_turns into dim_turn.
type Turns struct {
	ctx   *Context
	b     *Builder
	Stats FanoutStats
}

// NewTurns returns the dim_turn transformer.
func NewTurns(ctx *Context, b *Builder) *Turns {
	return &Turns{ctx: ctx, b: b, Stats: FanoutStats{Completeness: map[models.FanoutCompleteness]int64{}}}
}

// Append transforms one task_session_turns row (TurnSpec order).
func (t *Turns) Append(row []any) error {
	b := t.b
	id, err := t.ctx.cleanText("task_session_turns", turnNames, row)
	if err != nil {
		return err
	}
	if err := t.ctx.flagDuplicate("task_session_turns", id, row[0], row[10], &t.Stats); err != nil {
		return err
	}
	if n, _, _ := asInt(row[11]); n == 1 {
		t.Stats.Orphans++
		if err := t.ctx.Rejects.Add("task_session_turns", id, "task_session_id", row[1],
			"orphan: no task_sessions row has this id (the session is gone); the turn is kept and counted", ActionFlagged); err != nil {
			return err
		}
	}
	t.ctx.lead(b)
	b.Str(id)
	sess, _ := asText(row[1])
	b.Str(sess)
	b.OptStr(asRef(row[2]))
	step, stepOK, problem := StepAtStart(row[5])
	if problem != "" {
		if err := t.ctx.Rejects.Add("task_session_turns", id, "metadata", nil, problem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.OptStr(step, stepOK)
	started, startedOK, err := t.ctx.stampCol(b, "task_session_turns", id, "started_at", row[3])
	if err != nil {
		return err
	}
	if _, _, err := t.ctx.stampCol(b, "task_session_turns", id, "completed_at", row[4]); err != nil {
		return err
	}
	u, ok, err := t.ctx.optStamp("task_session_turns", id, "updated_at", row[6])
	if err != nil {
		return err
	}
	if ok && u.After(t.Stats.MaxUpdated) {
		t.Stats.MaxUpdated = u
	}
	n, _, _ := asInt(row[7])
	live, _, _ := asInt(row[8])
	backfill, _, _ := asInt(row[9])
	distinct, _, _ := asInt(row[turnDistinct])
	overlap, _, _ := asInt(row[turnDistinct+1])
	unplaced := t.ctx.Unattributed[sess]
	c := t.ctx.fanout(b, &t.Stats, FanoutInput{Started: started, StartedOK: startedOK, Rows: n, Overlap: overlap, Distinct: distinct,
		Messages: t.ctx.TurnEvidence[id], Unattributed: unplaced}, live, backfill)
	b.Int(unplaced, true)
	t.Stats.Rows++
	t.Stats.Completeness[c]++
	return b.EndRow()
}

// stepKey is the turn metadata key Kandev writes the starting step under.
const stepKey = "workflow_step_id_at_start"

// Reasons StepAtStart gives (they appear in the rejects table; the
// metadata itself never does).
const (
	ProblemMetadataNotJSON   = "metadata is not JSON"
	ProblemMetadataNotObject = "metadata is JSON but not an object"
	ProblemStepNotString     = "metadata.workflow_step_id_at_start is not a string"
)

// StepAtStart reads workflow_step_id_at_start from a turn's metadata JSON.
// NULL, ”, 'null' and '{}' carry no step; text that is not a JSON object,
// or a step that is not a string, is a problem (the raw text is never
// kept: metadata may hold anything). A step is returned only when it is a
// non-empty string; invalid UTF-8 in it comes back repaired (U+FFFD).
func StepAtStart(v any) (step string, ok bool, problem string) {
	if t, cut := v.(models.Truncated); cut {
		return "", false, fmt.Sprintf("metadata is %d bytes, over the %d bytes read for workflow_step_id_at_start: not read", t.Bytes, t.Cap)
	}
	s, valid := asText(v)
	s = strings.TrimSpace(s)
	if !valid || s == "" || s == "null" {
		return "", false, ""
	}
	if !json.Valid([]byte(s)) {
		return "", false, ProblemMetadataNotJSON
	}
	if s[0] != '{' {
		return "", false, ProblemMetadataNotObject
	}
	// A map, not a struct: encoding/json matches struct fields without
	// regard to case, and Kandev's key is exact.
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", false, ProblemMetadataNotObject
	}
	raw := bytes.TrimSpace(m[stepKey])
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", false, ""
	}
	var step2 string
	if err := json.Unmarshal(raw, &step2); err != nil {
		return "", false, ProblemStepNotString
	}
	if step2 == "" {
		return "", false, ""
	}
	return validText(step2), true, ""
}

// ---- dim_task --------------------------------------------------------------

// TaskSpec reads tasks: structure only (no title, description or metadata).
func TaskSpec() models.TableSpec {
	return capped(withDuplicateCount(models.TableSpec{Name: "tasks", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "workspace_id"},
		{Name: "workflow_id"},
		{Name: "workflow_step_id"},
		{Name: "identifier"},
		{Name: "state"},
		{Name: "priority"},
		{Name: "parent_id"},
		{Name: "is_ephemeral", Kind: models.KindInt},
		{Name: "created_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
		{Name: "archived_at", Kind: models.KindStamp},
	}}))
}

// TaskSchema is dim_task.
var TaskSchema = runFields(
	str("task_id"), optStr("workspace_id"), optStr("workflow_id"), optStr("workflow_step_id"),
	optStr("identifier"), optStr("state"), optStr("priority"), optStr("parent_id"), optBool("is_ephemeral"),
	optStamp("created_at"), optStamp("updated_at"), optStamp("archived_at"),
)

// DimStats counts a dimension's rows, the rows sharing an id with another
// (kept and flagged), and its high water.
type DimStats struct {
	Rows         int64
	DuplicateIDs int64
	MaxUpdated   time.Time
}

// withDuplicateCount adds rows_sharing_id to a dimension's scan: how many
// rows share the row's id (1 unless the store lost its primary key).
func withDuplicateCount(spec models.TableSpec) models.TableSpec {
	spec.Alias = "t"
	spec.Columns = append(spec.Columns, models.ColumnSpec{Name: "rows_sharing_id", Kind: models.KindCount, Expr: "COALESCE(dup.n, 1)"})
	spec.Join += duplicateJoin(spec.Name, "dup")
	return spec
}

// Dim transforms a simple dimension: reference and text columns, integers,
// flags and timestamps, in spec order.
type Dim struct {
	ctx   *Context
	b     *Builder
	table string
	kinds []dimKind
	names []string
	Stats DimStats
}

type dimKind int

const (
	dimID dimKind = iota
	dimRef
	dimInt
	dimFlag
	dimStamp
	dimUpdated    // a timestamp that is also the high water
	dimDuplicates // rows_sharing_id: not written, flagged when above 1
)

func newDim(ctx *Context, b *Builder, table string, kinds ...dimKind) *Dim {
	spec := map[string]models.TableSpec{
		"tasks": TaskSpec(), "workflows": WorkflowSpec(), "workflow_steps": WorkflowStepSpec(),
	}[table]
	return &Dim{ctx: ctx, b: b, table: table, kinds: kinds, names: specNames(spec)}
}

// NewTasks returns the dim_task transformer.
func NewTasks(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "tasks", dimID, dimRef, dimRef, dimRef, dimRef, dimRef, dimRef, dimRef, dimFlag,
		dimStamp, dimUpdated, dimStamp, dimDuplicates)
}

// Append transforms one row.
func (d *Dim) Append(row []any) error {
	b := d.b
	id, err := d.ctx.cleanText(d.table, d.names, row)
	if err != nil {
		return err
	}
	d.ctx.lead(b)
	for i, k := range d.kinds {
		switch k {
		case dimID:
			b.Str(id)
		case dimRef:
			b.OptStr(asRef(row[i]))
		case dimInt, dimFlag:
			n, ok, problem := asInt(row[i])
			if problem != "" {
				if err := d.ctx.Rejects.Add(d.table, id, d.column(i), row[i], problem, ActionNulledValue); err != nil {
					return err
				}
			}
			if k == dimFlag {
				b.Bool(n != 0, ok)
			} else {
				b.Int(n, ok)
			}
		case dimStamp, dimUpdated:
			t, ok, err := d.ctx.stampCol(b, d.table, id, d.column(i), row[i])
			if err != nil {
				return err
			}
			if k == dimUpdated && ok && t.After(d.Stats.MaxUpdated) {
				d.Stats.MaxUpdated = t
			}
		case dimDuplicates:
			if n, _, _ := asInt(row[i]); n > 1 {
				d.Stats.DuplicateIDs++
				if err := d.ctx.Rejects.Add(d.table, id, "id", row[0], duplicateIDReason(n), ActionFlagged); err != nil {
					return err
				}
			}
		}
	}
	d.Stats.Rows++
	return b.EndRow()
}

// column is a source column name, for rejects.
func (d *Dim) column(i int) string {
	if i < len(d.names) {
		return d.names[i]
	}
	return "?"
}

// ---- dim_workflow, dim_workflow_step ---------------------------------------

// WorkflowSpec reads workflows (no description or prompt).
func WorkflowSpec() models.TableSpec {
	return capped(withDuplicateCount(models.TableSpec{Name: "workflows", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "workspace_id"},
		{Name: "name"},
		{Name: "created_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}))
}

// WorkflowSchema is dim_workflow.
var WorkflowSchema = runFields(
	str("workflow_id"), optStr("workspace_id"), optStr("name"), optStamp("created_at"), optStamp("updated_at"),
)

// NewWorkflows returns the dim_workflow transformer.
func NewWorkflows(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "workflows", dimID, dimRef, dimRef, dimStamp, dimUpdated, dimDuplicates)
}

// WorkflowStepSpec reads workflow_steps (no prompt or events).
func WorkflowStepSpec() models.TableSpec {
	return capped(withDuplicateCount(models.TableSpec{Name: "workflow_steps", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "workflow_id"},
		{Name: "name"},
		{Name: "stage_type"},
		{Name: "position", Kind: models.KindInt},
		{Name: "created_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}))
}

// WorkflowStepSchema is dim_workflow_step.
var WorkflowStepSchema = runFields(
	str("step_id"), optStr("workflow_id"), optStr("name"), optStr("stage_type"), optInt("position"),
	optStamp("created_at"), optStamp("updated_at"),
)

// NewWorkflowSteps returns the dim_workflow_step transformer.
func NewWorkflowSteps(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "workflow_steps", dimID, dimRef, dimRef, dimRef, dimInt, dimStamp, dimUpdated, dimDuplicates)
}
