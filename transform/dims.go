package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev-extract/models"
)

// ---- dim_turn --------------------------------------------------------------

var turnTable = models.MustTable(models.TableTurn)

// TurnSchema is dim_turn.
var TurnSchema = turnTable.Schema()

// turnIn and turnOut are dim_turn's cells and columns.
var turnIn, turnOut = func() (in turnInCols, out turnOutCols) {
	t := turnTable
	r, c := t.ReadCol, t.Col
	in = turnInCols{id: r("id"), session: r("task_session_id"), task: r("task_id"), started: r("started_at"), completed: r("completed_at"),
		metadata: r("metadata"), updated: r("updated_at"), sessionMissing: r("session_missing")}
	out = turnOutCols{id: c("turn_id"), session: c("session_id"), task: c("task_id"), step: c("workflow_step_id_at_start"),
		started: c("started_at"), completed: c("completed_at"), unattributed: c("unattributed_session_rows")}
	in.fanoutIn, out.fanoutOut = resolveFanout(t)
	return in, out
}()

type turnInCols struct {
	id, session, task, started, completed, metadata, updated, sessionMissing int
	fanoutIn
}

type turnOutCols struct {
	id, session, task, step, started, completed, unattributed int
	fanoutOut
}

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

// Append transforms one task_session_turns row (the catalog's Read order).
func (t *Turns) Append(row []any) error {
	b, in, o := t.b, &turnIn, &turnOut
	const table = models.SourceTurns
	id, err := t.ctx.cleanText(table, turnTable.Read, row)
	if err != nil {
		return err
	}
	if err := t.ctx.flagDuplicate(table, id, row[in.id], row[in.sharingID], &t.Stats); err != nil {
		return err
	}
	if n, _, _ := asInt(row[in.sessionMissing]); n == 1 {
		t.Stats.Orphans++
		if err := t.ctx.Rejects.Add(table, id, "task_session_id", row[in.session],
			"orphan: no task_sessions row has this id (the session is gone); the turn is kept and counted", ActionFlagged); err != nil {
			return err
		}
	}
	t.ctx.lead(b)
	b.Str(o.id, id)
	sess, _ := asText(row[in.session])
	b.Str(o.session, sess)
	task, ok := asRef(row[in.task])
	b.OptStr(o.task, task, ok)
	step, stepOK, problem := StepAtStart(row[in.metadata])
	if problem != "" {
		if err := t.ctx.Rejects.Add(table, id, "metadata", nil, problem, ActionNulledValue); err != nil {
			return err
		}
	}
	b.OptStr(o.step, step, stepOK)
	started, startedOK, err := t.ctx.stampCol(b, o.started, table, id, "started_at", row[in.started])
	if err != nil {
		return err
	}
	if _, _, err := t.ctx.stampCol(b, o.completed, table, id, "completed_at", row[in.completed]); err != nil {
		return err
	}
	u, ok, err := t.ctx.optStamp(table, id, "updated_at", row[in.updated])
	if err != nil {
		return err
	}
	if ok && u.After(t.Stats.MaxUpdated) {
		t.Stats.MaxUpdated = u
	}
	n, _, _ := asInt(row[in.observed])
	live, _, _ := asInt(row[in.live])
	backfill, _, _ := asInt(row[in.backfill])
	distinct, _, _ := asInt(row[in.distinct])
	overlap, _, _ := asInt(row[in.overlap])
	unplaced := t.ctx.Unattributed[sess]
	c := t.ctx.fanout(b, &o.fanoutOut, &t.Stats, FanoutInput{Started: started, StartedOK: startedOK, Rows: n, Overlap: overlap, Distinct: distinct,
		Messages: t.ctx.TurnEvidence[id], Unattributed: unplaced}, live, backfill)
	b.Int(o.unattributed, unplaced, true)
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
	if valid {
		// Kandev's own form, the one every turn it writes has: read
		// without decoding (0.9 s of CPU for 400,000 turns otherwise).
		if step, plain := plainStepObject(s); plain {
			return step, step != "", ""
		}
	}
	return stepAtStartDecoded(s, valid)
}

// stepObjectPrefix is how Kandev writes a turn's metadata:
// {"workflow_step_id_at_start":"<step>"}.
const stepObjectPrefix = `{"` + stepKey + `":"`

// plainStepObject reads s when it is exactly Kandev's form with a step
// that needs no decoding — no quote, backslash or control character, and
// valid UTF-8 — so it says what decoding would (StepAtStartMatchesDecoded).
func plainStepObject(s string) (string, bool) {
	if len(s) < len(stepObjectPrefix)+2 || !strings.HasPrefix(s, stepObjectPrefix) || !strings.HasSuffix(s, `"}`) {
		return "", false
	}
	step := s[len(stepObjectPrefix) : len(s)-2]
	for i := 0; i < len(step); i++ {
		if c := step[i]; c == '"' || c == '\\' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.ValidString(step) {
		return "", false
	}
	return step, true
}

// stepAtStartDecoded is StepAtStart by decoding the JSON.
func stepAtStartDecoded(s string, valid bool) (step string, ok bool, problem string) {
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

// ---- dim_task, dim_workflow, dim_workflow_step ----------------------------

// TaskSchema is dim_task (structure only: no title, description or
// metadata).
var TaskSchema = models.MustTable(models.TableTask).Schema()

// WorkflowSchema is dim_workflow (no description or prompt).
var WorkflowSchema = models.MustTable(models.TableWorkflow).Schema()

// WorkflowStepSchema is dim_workflow_step (no prompt or events).
var WorkflowStepSchema = models.MustTable(models.TableWorkflowStep).Schema()

// DimStats counts a dimension's rows, the rows sharing an id with another
// (kept and flagged), and its high water.
type DimStats struct {
	Rows         int64
	DuplicateIDs int64
	MaxUpdated   time.Time
}

// Dim transforms a simple dimension, every stored column read copied into
// the warehouse column of the same name (the id into the table's id
// column): references and text, integers, flags (an integer read into a
// BOOLEAN column) and timestamps; its plan is derived from the catalog
// once.
type Dim struct {
	ctx   *Context
	b     *Builder
	table *models.Table
	plan  []dimCell
	Stats DimStats
}

// dimCell is what Dim does with one cell of the scan.
type dimCell struct {
	kind dimKind
	in   int    // the cell
	out  int    // the warehouse column (-1 when none)
	name string // the source column, for rejects
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

// dimPlan derives a dimension's plan from its catalog entry.
func dimPlan(t *models.Table) []dimCell {
	var plan []dimCell
	for i, c := range t.Read {
		cell := dimCell{in: i, out: -1, name: c.Name}
		switch {
		case c.Name == "rows_sharing_id":
			cell.kind = dimDuplicates
		case c.Computed:
			panic("transform: no use for the computed column " + c.Name + " of " + t.Source)
		case c.Name == "id":
			cell.kind, cell.out = dimID, t.Col(t.ID)
		case c.Kind == models.KindStamp && c.Name == t.HighWater:
			cell.kind, cell.out = dimUpdated, t.Col(c.Name)
		case c.Kind == models.KindStamp:
			cell.kind, cell.out = dimStamp, t.Col(c.Name)
		case c.Kind == models.KindInt && t.Columns[t.Col(c.Name)].Type == models.Bool:
			cell.kind, cell.out = dimFlag, t.Col(c.Name)
		case c.Kind == models.KindInt:
			cell.kind, cell.out = dimInt, t.Col(c.Name)
		default:
			cell.kind, cell.out = dimRef, t.Col(c.Name)
		}
		plan = append(plan, cell)
	}
	return plan
}

var dimPlans = map[string][]dimCell{}

func init() {
	for _, name := range []string{models.TableTask, models.TableWorkflow, models.TableWorkflowStep} {
		dimPlans[name] = dimPlan(models.MustTable(name))
	}
}

func newDim(ctx *Context, b *Builder, table string) *Dim {
	return &Dim{ctx: ctx, b: b, table: models.MustTable(table), plan: dimPlans[table]}
}

// NewTasks returns the dim_task transformer.
func NewTasks(ctx *Context, b *Builder) *Dim { return newDim(ctx, b, models.TableTask) }

// NewWorkflows returns the dim_workflow transformer.
func NewWorkflows(ctx *Context, b *Builder) *Dim { return newDim(ctx, b, models.TableWorkflow) }

// NewWorkflowSteps returns the dim_workflow_step transformer.
func NewWorkflowSteps(ctx *Context, b *Builder) *Dim { return newDim(ctx, b, models.TableWorkflowStep) }

// Append transforms one row.
func (d *Dim) Append(row []any) error {
	b, table := d.b, d.table.Source
	id, err := d.ctx.cleanText(table, d.table.Read, row)
	if err != nil {
		return err
	}
	d.ctx.lead(b)
	for _, c := range d.plan {
		v := row[c.in]
		switch c.kind {
		case dimID:
			b.Str(c.out, id)
		case dimRef:
			s, ok := asRef(v)
			b.OptStr(c.out, s, ok)
		case dimInt, dimFlag:
			n, ok, problem := asInt(v)
			if problem != "" {
				if err := d.ctx.Rejects.Add(table, id, c.name, v, problem, ActionNulledValue); err != nil {
					return err
				}
			}
			if c.kind == dimFlag {
				b.Bool(c.out, n != 0, ok)
			} else {
				b.Int(c.out, n, ok)
			}
		case dimStamp, dimUpdated:
			t, ok, err := d.ctx.stampCol(b, c.out, table, id, c.name, v)
			if err != nil {
				return err
			}
			if c.kind == dimUpdated && ok && t.After(d.Stats.MaxUpdated) {
				d.Stats.MaxUpdated = t
			}
		case dimDuplicates:
			if n, _, _ := asInt(v); n > 1 {
				d.Stats.DuplicateIDs++
				if err := d.ctx.Rejects.Add(table, id, "id", row[0], duplicateIDReason(n), ActionFlagged); err != nil {
					return err
				}
			}
		}
	}
	d.Stats.Rows++
	return b.EndRow()
}
