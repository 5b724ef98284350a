package transform

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
	"strings"
	"time"

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
	return spec
}

// TurnSchema is dim_turn.
var TurnSchema = runFields(append([]arrow.Field{
	str("turn_id"), str("session_id"), optStr("task_id"), optStr("workflow_step_id_at_start"),
	optStamp("started_at"), optStamp("completed_at"),
}, fanoutFields...)...)

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
	id, _ := asText(row[0])
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
	if u, ok, _ := asStamp(row[6]); ok && u.After(t.Stats.MaxUpdated) {
		t.Stats.MaxUpdated = u
	}
	c := t.ctx.fanout(b, started, startedOK, row[7], row[8], row[9])
	t.Stats.Rows++
	t.Stats.Completeness[c]++
	return b.EndRow()
}

// StepAtStart reads workflow_step_id_at_start from a turn's metadata JSON.
// NULL, ”, 'null' and '{}' carry no step; text that is not a JSON object is
// a problem (the raw text is not kept: metadata may hold anything).
func StepAtStart(v any) (step string, ok bool, problem string) {
	s, valid := asText(v)
	s = strings.TrimSpace(s)
	if !valid || s == "" || s == "null" {
		return "", false, ""
	}
	var m struct {
		Step *string `json:"workflow_step_id_at_start"`
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", false, "metadata is not a JSON object"
	}
	if m.Step == nil || *m.Step == "" {
		return "", false, ""
	}
	return *m.Step, true, ""
}

// ---- dim_task --------------------------------------------------------------

// TaskSpec reads tasks: structure only (no title, description or metadata).
func TaskSpec() models.TableSpec {
	return models.TableSpec{Name: "tasks", Columns: []models.ColumnSpec{
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
	}}
}

// TaskSchema is dim_task.
var TaskSchema = runFields(
	str("task_id"), optStr("workspace_id"), optStr("workflow_id"), optStr("workflow_step_id"),
	optStr("identifier"), optStr("state"), optStr("priority"), optStr("parent_id"), optBool("is_ephemeral"),
	optStamp("created_at"), optStamp("updated_at"), optStamp("archived_at"),
)

// DimStats counts a dimension's rows and its high water.
type DimStats struct {
	Rows       int64
	MaxUpdated time.Time
}

// Dim transforms a simple dimension: reference and text columns, integers,
// flags and timestamps, in spec order.
type Dim struct {
	ctx   *Context
	b     *Builder
	table string
	kinds []dimKind
	Stats DimStats
}

type dimKind int

const (
	dimID dimKind = iota
	dimRef
	dimInt
	dimFlag
	dimStamp
	dimUpdated // a timestamp that is also the high water
)

func newDim(ctx *Context, b *Builder, table string, kinds ...dimKind) *Dim {
	return &Dim{ctx: ctx, b: b, table: table, kinds: kinds}
}

// NewTasks returns the dim_task transformer.
func NewTasks(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "tasks", dimID, dimRef, dimRef, dimRef, dimRef, dimRef, dimRef, dimRef, dimFlag,
		dimStamp, dimUpdated, dimStamp)
}

// Append transforms one row.
func (d *Dim) Append(row []any) error {
	b := d.b
	d.ctx.lead(b)
	id, _ := asText(row[0])
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
		}
	}
	d.Stats.Rows++
	return b.EndRow()
}

func (d *Dim) column(i int) string {
	// Source column names, for rejects.
	spec := map[string]models.TableSpec{
		"tasks": TaskSpec(), "workflows": WorkflowSpec(), "workflow_steps": WorkflowStepSpec(),
	}[d.table]
	if i < len(spec.Columns) {
		return spec.Columns[i].Name
	}
	return "?"
}

// ---- dim_workflow, dim_workflow_step ---------------------------------------

// WorkflowSpec reads workflows (no description or prompt).
func WorkflowSpec() models.TableSpec {
	return models.TableSpec{Name: "workflows", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "workspace_id"},
		{Name: "name"},
		{Name: "created_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}
}

// WorkflowSchema is dim_workflow.
var WorkflowSchema = runFields(
	str("workflow_id"), optStr("workspace_id"), optStr("name"), optStamp("created_at"), optStamp("updated_at"),
)

// NewWorkflows returns the dim_workflow transformer.
func NewWorkflows(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "workflows", dimID, dimRef, dimRef, dimStamp, dimUpdated)
}

// WorkflowStepSpec reads workflow_steps (no prompt or events).
func WorkflowStepSpec() models.TableSpec {
	return models.TableSpec{Name: "workflow_steps", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "workflow_id"},
		{Name: "name"},
		{Name: "stage_type"},
		{Name: "position", Kind: models.KindInt},
		{Name: "created_at", Kind: models.KindStamp},
		{Name: "updated_at", Kind: models.KindStamp},
	}}
}

// WorkflowStepSchema is dim_workflow_step.
var WorkflowStepSchema = runFields(
	str("step_id"), optStr("workflow_id"), optStr("name"), optStr("stage_type"), optInt("position"),
	optStamp("created_at"), optStamp("updated_at"),
)

// NewWorkflowSteps returns the dim_workflow_step transformer.
func NewWorkflowSteps(ctx *Context, b *Builder) *Dim {
	return newDim(ctx, b, "workflow_steps", dimID, dimRef, dimRef, dimRef, dimInt, dimStamp, dimUpdated)
}
