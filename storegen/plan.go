package storegen

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// This file turns a semantic description of one session (sessionSpec: which
// turns, which subagents with which statuses) into the exact rows Kandev's
// repository code would have written for it (sessionOut). Both planners (the
// fixed reference population and the scaled one) produce sessionSpecs; the
// writer only inserts sessionOuts. One session is materialised at a time, so
// memory stays flat at any scale.

type agentKind int

const (
	agentClaude agentKind = iota
	agentOpenCode
)

type subStatus int

const (
	stAsync     subStatus = iota // Claude run_in_background dispatch: agent_status async_launched
	stCompleted                  // agent_status completed, metrics reported
	stStarted                    // OpenCode: agent_status started, tool call still in progress
	stAbsent                     // no agent_status at all; the tool call failed
)

type subSpec struct {
	status      subStatus
	noModel     bool // completed row whose payload carried no model
	toolUseZero bool // completed row that reported tool_use_count = 0
	typeNull    bool // subagent_type reported as "" (stored NULL)
	parent      int  // index of the parent slot in the same turn (nested subagent), or -1
	unknownExec bool // live row whose frames carried no execution id ('unknown')
	twinOf      int  // index of the slot this one collides with (same tool_call_id, other execution), or -1
}

type turnSpec struct {
	subs       []subSpec
	tools      int           // ordinary (non-subagent) tool-call messages
	closing    bool          // closing agent text message
	gap        time.Duration // pause between the previous turn's end and this turn's start
	startAt    time.Time     // when non-zero, the turn starts no earlier than this
	newExec    bool          // a new agent execution begins with this turn (live path)
	incomplete bool          // turn still running (completed_at NULL); must be the last turn
	openMeta   *string       // when set, verbatim metadata of the opening agent text ('null', '')
}

type sessionSpec struct {
	agent agentKind
	start time.Time // start of the first turn
	turns []turnSpec
	state string // task_sessions.state
	step  int    // workflow step index (0 Backlog, 1 In Progress, 2 Review, 3 Done)
	title string
}

// ---- materialised rows ----

type taskRow struct {
	id, title, state, stepID, identifier string
	position                             int
	created, updated                     time.Time
}

type sessionRow struct {
	id, profileID, snapshot, state string
	started, updated               time.Time
	completed                      *time.Time
}

type turnRow struct {
	id               string
	started, updated time.Time
	completed        *time.Time
}

type msgRow struct {
	id, turnID, author, content, typ, meta string
	created, updated                       time.Time
	promptSeq                              int
	subagentTask                           bool // metadata.normalized.kind = subagent_task
}

type subRow struct {
	id, turnID, toolCallID, execID, source string
	parent, stype, desc, agentID, child    string // "" → NULL
	model, agentStatus, toolStatus         string // "" → NULL
	isAsync                                int
	totalTokens, toolUses, durationMs      *int64
	observed, updated                      time.Time
	settled                                *time.Time
}

type sessionOut struct {
	task    taskRow
	session sessionRow
	stepID  string
	turns   []turnRow
	msgs    []msgRow
	subs    []subRow
}

// gen carries the state shared by every materialised session.
type gen struct {
	r        *rng
	capture  time.Time // zero: no activation boundary, every row is live
	stepIDs  [4]string
	taskSeq  int   // last KAN-n number handed out
	agentSeq int64 // source of unique provider agent ids
}

type genSnapshot struct {
	r        rng
	taskSeq  int
	agentSeq int64
}

func (g *gen) snapshot() genSnapshot { return genSnapshot{*g.r, g.taskSeq, g.agentSeq} }
func (g *gen) restore(s genSnapshot) {
	*g.r = s.r
	g.taskSeq = s.taskSeq
	g.agentSeq = s.agentSeq
}

// agentID returns Claude's 8-character agent id ("a" + 7 hex digits). The
// counter is scrambled by an odd multiplier mod 2^28, a bijection, so ids are
// unique up to 268M subagents without remembering any of them.
func (g *gen) agentID() string {
	g.agentSeq++
	v := uint64(g.agentSeq*0x9E3779B1+0x5bd1e995) & (1<<28 - 1)
	return fmt.Sprintf("a%07x", v)
}

func (g *gen) toolCallID(a agentKind) string {
	if a == agentOpenCode {
		return "call_" + g.r.alnum(24)
	}
	return "toolu_01" + g.r.alnum(22)
}

func jstr(s string) string {
	b, _ := json.Marshal(s) // Go's encoder, as Kandev's: HTML-safe escaping
	return string(b)
}

var terminalToolStatus = map[string]bool{
	"complete": true, "completed": true, "success": true, "error": true, "failed": true, "cancelled": true,
}

// slotState is the per-subagent working state while a turn is laid out.
type slotState struct {
	spec          subSpec
	msgIdx        int
	toolCallID    string
	created       time.Time
	observed      time.Time
	settled       *time.Time
	lastFrame     time.Time
	durationMs    int64
	twinAt        time.Time
	agentID       string
	childSession  string
	desc, prompt  string
	stype, model  string
	result        string
	totalTokens   int64
	toolUses      int64
	hasChildUnder bool
}

func (g *gen) materialize(ss *sessionSpec) (*sessionOut, error) {
	r := g.r
	out := &sessionOut{}
	g.taskSeq++
	out.stepID = g.stepIDs[ss.step]
	out.task = taskRow{
		id:         r.uuid(),
		title:      ss.title,
		state:      taskStateForStep[ss.step],
		stepID:     out.stepID,
		identifier: fmt.Sprintf("KAN-%d", g.taskSeq),
		position:   g.taskSeq - 1,
	}
	sessModel := claudeSessionModel
	if ss.agent == agentOpenCode {
		sessModel = opencodeSessionModel
	}
	profileID := r.uuid()
	out.session = sessionRow{
		id:        r.uuid(),
		profileID: profileID,
		snapshot:  profileSnapshot(ss.agent, profileID),
		state:     ss.state,
	}
	turnStart := ss.start
	var curExec, prevExec string
	var lastActivity time.Time
	promptSeq := 0
	for ti := range ss.turns {
		tspec := &ss.turns[ti]
		if ti > 0 {
			turnStart = lastActivity.Add(tspec.gap)
		}
		if !tspec.startAt.IsZero() && tspec.startAt.After(turnStart) {
			turnStart = tspec.startAt
		}
		live := g.capture.IsZero() || !turnStart.Before(g.capture)
		if live && (curExec == "" || tspec.newExec) {
			prevExec, curExec = curExec, r.uuid()
		}
		tr := turnRow{id: r.uuid(), started: turnStart}
		promptSeq++
		end, err := g.layoutTurn(out, ss, tspec, &tr, live, curExec, prevExec, promptSeq, sessModel)
		if err != nil {
			return nil, err
		}
		if !live && !end.Before(g.capture) {
			return nil, fmt.Errorf("storegen: planner bug: turn %d of %s starts before capture_since but ends after it", ti, out.task.identifier)
		}
		if tspec.incomplete {
			if ti != len(ss.turns)-1 {
				return nil, fmt.Errorf("storegen: planner bug: incomplete turn is not the last")
			}
			tr.updated = end
		} else {
			done := end.Add(r.dur(300*time.Millisecond, 2*time.Second))
			tr.completed = &done
			tr.updated = done
			end = done
		}
		out.turns = append(out.turns, tr)
		lastActivity = end
	}
	first := out.turns[0].started
	out.session.started = first.Add(-r.dur(2*time.Second, 15*time.Second))
	switch ss.state {
	case "COMPLETED", "CANCELLED", "FAILED":
		c := lastActivity.Add(r.dur(500*time.Millisecond, 3*time.Second))
		out.session.completed = &c
		out.session.updated = c
	default:
		out.session.updated = lastActivity
	}
	out.task.created = out.session.started.Add(-r.dur(5*time.Second, 10*time.Minute))
	out.task.updated = out.session.updated
	return out, nil
}

var taskStateForStep = [4]string{"TODO", "IN_PROGRESS", "REVIEW", "COMPLETED"}

func profileSnapshot(a agentKind, id string) string {
	if a == agentOpenCode {
		return `{"agent_id":"opencode-acp","agent_name":"opencode","auto_approve":false,"cli_passthrough":false,"config_options":null,"dangerously_skip_permissions":false,"id":"` + id + `","mode":"","model":"anthropic/claude-sonnet-4-5","name":"OpenCode"}`
	}
	return `{"agent_id":"claude-acp","agent_name":"claude","auto_approve":false,"cli_passthrough":false,"config_options":null,"dangerously_skip_permissions":false,"id":"` + id + `","mode":"","model":"claude-sonnet-4-5-20250929","name":"Claude Sonnet"}`
}

// layoutTurn appends the turn's messages and subagent rows to out and returns
// the instant of the turn's last activity.
func (g *gen) layoutTurn(out *sessionOut, ss *sessionSpec, tspec *turnSpec, tr *turnRow, live bool, curExec, prevExec string, promptSeq int, sessModel string) (time.Time, error) {
	r := g.r
	add := func(m msgRow) int {
		m.id = r.uuid()
		m.turnID = tr.id
		out.msgs = append(out.msgs, m)
		return len(out.msgs) - 1
	}
	t := tr.started.Add(r.dur(8*time.Millisecond, 40*time.Millisecond))
	add(msgRow{author: "user", content: pick(r, userPrompts), typ: "message", meta: "{}", created: t, updated: t, promptSeq: promptSeq})
	t = t.Add(r.dur(2*time.Second, 14*time.Second))
	openMeta := `{"model":` + jstr(sessModel) + `}`
	if tspec.openMeta != nil {
		openMeta = *tspec.openMeta
	}
	add(msgRow{author: "agent", content: pick(r, agentOpenings), typ: "message", meta: openMeta, created: t, updated: t})
	last := t

	// Order of work items: subagent launches in slot order (a nested child
	// always follows its parent), ordinary tool calls spread among them.
	slots := make([]*slotState, len(tspec.subs))
	var order []int // >= 0: slot index; -1: ordinary tool call
	for i, s := range tspec.subs {
		slots[i] = &slotState{spec: s}
		if s.twinOf < 0 {
			order = append(order, i)
		}
		if s.parent >= 0 {
			slots[s.parent].hasChildUnder = true
		}
	}
	for k := 0; k < tspec.tools; k++ {
		pos := r.intn(len(order) + 1)
		order = append(order, 0)
		copy(order[pos+1:], order[pos:])
		order[pos] = -1
	}

	cursor := t
	for _, it := range order {
		cursor = cursor.Add(r.dur(400*time.Millisecond, 25*time.Second))
		if it < 0 {
			g.ordinaryTool(out, ss, slots, cursor, add, &last)
			continue
		}
		s := slots[it]
		s.created = cursor
		s.toolCallID = g.toolCallID(ss.agent)
		s.observed = cursor.Add(r.dur(250*time.Millisecond, 1500*time.Millisecond))
		s.desc = pick(r, subagentDescriptions)
		s.prompt = pick(r, subagentPrompts)
		if !s.spec.typeNull {
			s.stype = pick(r, subagentTypes)
		}
		switch s.spec.status {
		case stAsync:
			s.agentID = g.agentID()
			s.model = pick(r, subagentModels)
			st := s.observed.Add(r.dur(300*time.Millisecond, 2500*time.Millisecond))
			s.settled = &st
		case stCompleted:
			s.agentID = g.agentID()
			if !s.spec.noModel {
				s.model = pick(r, subagentModels)
			}
			s.durationMs = int64(r.between(8266, 528792))
			if s.hasChildUnder && s.durationMs < 120000 {
				s.durationMs += 120000
			}
			if s.spec.parent >= 0 {
				p := slots[s.spec.parent]
				room := p.created.Add(time.Duration(p.durationMs)*time.Millisecond).Sub(cursor) - 5*time.Second
				if room > 3*time.Second {
					s.durationMs = min(s.durationMs, room.Milliseconds())
				}
			}
			s.totalTokens = int64(r.between(10878, 114402))
			if s.spec.toolUseZero {
				s.toolUses = 0
			} else {
				s.toolUses = int64(r.between(1, 45))
			}
			s.result = pick(r, resultTexts)
			st := cursor.Add(time.Duration(s.durationMs)*time.Millisecond + r.dur(200*time.Millisecond, 1500*time.Millisecond))
			s.settled = &st
		case stStarted:
			s.childSession = "ses_" + r.hexs(12) + r.alnum(14)
		case stAbsent:
			st := s.observed.Add(r.dur(5*time.Second, 20*time.Second))
			s.settled = &st
		}
		s.lastFrame = s.observed
		if s.settled != nil {
			s.lastFrame = *s.settled
		}
		s.msgIdx = add(msgRow{author: "agent", typ: "tool_call", created: cursor, subagentTask: true})
	}
	// A parent must not settle before its nested child.
	for _, s := range slots {
		if s.spec.twinOf >= 0 || s.spec.parent < 0 || s.settled == nil {
			continue
		}
		p := slots[s.spec.parent]
		if p.settled != nil && !p.settled.After(s.settled.Add(time.Second)) {
			p.durationMs = s.settled.Sub(p.created).Milliseconds() + int64(r.between(1000, 5000))
			st := p.created.Add(time.Duration(p.durationMs)*time.Millisecond + r.dur(200*time.Millisecond, 1500*time.Millisecond))
			p.settled = &st
			p.lastFrame = st
		}
	}
	// Collision twins: a late frame from another execution of this session
	// reuses the tool_call_id; the orchestrator updates the same message.
	for i, s := range slots {
		if s.spec.twinOf < 0 {
			continue
		}
		o := slots[s.spec.twinOf]
		if !live {
			return time.Time{}, fmt.Errorf("storegen: planner bug: collision twin in a backfilled turn")
		}
		slots[i] = &slotState{}
		*slots[i] = *o
		slots[i].spec = s.spec
		tw := o.lastFrame.Add(r.dur(30*time.Second, 400*time.Second))
		o.twinAt = tw
		slots[i].observed = tw
		slots[i].lastFrame = tw
		if o.settled != nil {
			slots[i].settled = &tw
		}
	}

	for _, s := range slots {
		if s.spec.twinOf >= 0 {
			continue
		}
		m := &out.msgs[s.msgIdx]
		m.updated = s.lastFrame
		if !s.twinAt.IsZero() {
			m.updated = s.twinAt
		}
		title := s.desc
		if ss.agent == agentOpenCode {
			title = "task"
		}
		parentTC := ""
		if s.spec.parent >= 0 {
			parentTC = slots[s.spec.parent].toolCallID
		}
		m.content = title
		m.meta = subagentMetadata(ss.agent, s, parentTC, title)
		if m.updated.After(last) {
			last = m.updated
		}
	}
	for _, s := range slots {
		m := out.msgs[s.msgIdx]
		parentTC := ""
		if s.spec.parent >= 0 {
			parentTC = slots[s.spec.parent].toolCallID
		}
		row := subRow{
			id:          r.uuid(),
			turnID:      tr.id,
			toolCallID:  s.toolCallID,
			parent:      parentTC,
			stype:       s.stype,
			desc:        s.desc,
			agentID:     s.agentID,
			child:       s.childSession,
			model:       s.model,
			agentStatus: agentStatusText[s.spec.status],
			toolStatus:  toolStatusText[s.spec.status],
		}
		if s.spec.status == stAsync {
			row.isAsync = 1
		}
		if s.spec.status == stCompleted {
			row.totalTokens = ptr(s.totalTokens)
			row.toolUses = ptr(s.toolUses)
			row.durationMs = ptr(s.durationMs)
		}
		if live {
			row.source = "live"
			row.execID = curExec
			if s.spec.twinOf >= 0 {
				row.execID = prevExec
				if row.execID == "" {
					row.execID = r.uuid()
				}
			}
			if s.spec.unknownExec {
				row.execID = "unknown"
			}
			row.observed = s.observed
			row.settled = s.settled
			row.updated = s.lastFrame
		} else {
			// AC-21: the backfill derives the row from the message: observed_at
			// = created_at, settled_at = updated_at when the top-level
			// metadata.status is terminal, execution 'unknown' (AC-31).
			row.source = "backfill"
			row.execID = "unknown"
			row.observed = m.created
			row.updated = m.updated
			if terminalToolStatus[row.toolStatus] {
				u := m.updated
				row.settled = &u
			}
		}
		out.subs = append(out.subs, row)
	}

	if tspec.closing {
		last = last.Add(r.dur(1*time.Second, 8*time.Second))
		add(msgRow{author: "agent", content: pick(r, agentClosings), typ: "message", meta: `{"model":` + jstr(sessModel) + `}`, created: last, updated: last})
	}
	return last, nil
}

func ptr[T any](v T) *T { return &v }

var agentStatusText = map[subStatus]string{stAsync: "async_launched", stCompleted: "completed", stStarted: "started", stAbsent: ""}
var toolStatusText = map[subStatus]string{stAsync: "complete", stCompleted: "completed", stStarted: "in_progress", stAbsent: "failed"}

// ordinaryTool appends one non-subagent tool call (read/shell/search/edit).
// Inside a Claude turn it is sometimes issued by a still-running subagent and
// then carries parent_tool_call_id, as in the fixtures.
func (g *gen) ordinaryTool(out *sessionOut, ss *sessionSpec, slots []*slotState, at time.Time, add func(msgRow) int, last *time.Time) {
	r := g.r
	var typ, title, norm string
	switch r.intn(4) {
	case 0:
		p := pick(r, filePaths)
		typ, title = "tool_read", "Read "+p
		norm = `{"kind":"read_file","read_file":{"file_path":` + jstr(p) + `}}`
	case 1:
		c := pick(r, shellCommands)
		typ, title = "tool_execute", c
		norm = `{"kind":"shell_exec","shell_exec":{"command":` + jstr(c) + `}}`
	case 2:
		p := pick(r, searchPatterns)
		typ, title = "tool_search", `grep "`+p+`"`
		norm = `{"kind":"code_search","code_search":{"pattern":` + jstr(p) + `}}`
	default:
		p := pick(r, filePaths)
		typ, title = "tool_edit", "Edit "+p
		norm = `{"kind":"modify_file","modify_file":{"file_path":` + jstr(p) + `,"mutations":[{"type":"patch","old_content":"return nil","new_content":"return err"}]}}`
	}
	parent := ""
	if ss.agent == agentClaude {
		for _, s := range slots {
			if s.spec.status == stCompleted && s.spec.twinOf < 0 && !s.created.IsZero() && s.settled != nil && s.settled.After(at.Add(10*time.Second)) {
				if r.chance(1, 2) {
					parent = s.toolCallID
				}
				break
			}
		}
	}
	var b strings.Builder
	b.WriteString(`{"normalized":`)
	b.WriteString(norm)
	if parent != "" {
		b.WriteString(`,"parent_tool_call_id":`)
		b.WriteString(jstr(parent))
	}
	b.WriteString(`,"status":"completed","title":`)
	b.WriteString(jstr(title))
	b.WriteString(`,"tool_call_id":`)
	b.WriteString(jstr(g.toolCallID(ss.agent)))
	b.WriteString(`}`)
	upd := at.Add(r.dur(300*time.Millisecond, 7*time.Second))
	add(msgRow{author: "agent", content: title, typ: typ, meta: b.String(), created: at, updated: upd})
	if upd.After(*last) {
		*last = upd
	}
}

// subagentMetadata renders a subagent tool-call message's metadata exactly as
// Kandev's message-creator adapter writes it: the outer object is a Go map
// (keys in sorted order), "normalized" is streams.NormalizedPayload's own
// MarshalJSON (kind, payload, background_work) and subagent_task is
// streams.SubagentTaskPayload in struct-field order with omitempty on
// everything but description, prompt and subagent_type.
func subagentMetadata(a agentKind, s *slotState, parentTC, title string) string {
	var b strings.Builder
	b.WriteString(`{"normalized":{"kind":"subagent_task","subagent_task":{"description":`)
	b.WriteString(jstr(s.desc))
	b.WriteString(`,"prompt":`)
	b.WriteString(jstr(s.prompt))
	b.WriteString(`,"subagent_type":`)
	b.WriteString(jstr(s.stype))
	if st := agentStatusText[s.spec.status]; st != "" {
		b.WriteString(`,"status":`)
		b.WriteString(jstr(st))
	}
	if s.agentID != "" {
		b.WriteString(`,"agent_id":`)
		b.WriteString(jstr(s.agentID))
	}
	if s.model != "" {
		b.WriteString(`,"model":`)
		b.WriteString(jstr(s.model))
	}
	if s.childSession != "" {
		b.WriteString(`,"child_session_id":`)
		b.WriteString(jstr(s.childSession))
	}
	if s.spec.status == stCompleted {
		fmt.Fprintf(&b, `,"duration_ms":%d,"total_tokens":%d,"tool_use_count":%d,"result_text":%s`,
			s.durationMs, s.totalTokens, s.toolUses, jstr(s.result))
	}
	if s.spec.status == stAsync {
		b.WriteString(`,"is_async":true,"output_file":`)
		b.WriteString(jstr("/tmp/claude/tasks/" + s.agentID + ".output"))
		b.WriteString(`,"can_read_output_file":true`)
	}
	b.WriteString(`}`)
	if a == agentClaude {
		switch s.spec.status {
		case stAsync:
			b.WriteString(`,"background_work":{"kind":"subagent","work_id":` + jstr(s.agentID) + `,"detached":true}`)
		case stCompleted:
			b.WriteString(`,"background_work":{"kind":"subagent","work_id":` + jstr(s.agentID) + `,"ended":true}`)
		default:
			b.WriteString(`,"background_work":{"kind":"subagent"}`)
		}
	}
	b.WriteString(`}`)
	if parentTC != "" {
		b.WriteString(`,"parent_tool_call_id":`)
		b.WriteString(jstr(parentTC))
	}
	b.WriteString(`,"status":`)
	b.WriteString(jstr(toolStatusText[s.spec.status]))
	b.WriteString(`,"title":`)
	b.WriteString(jstr(title))
	b.WriteString(`,"tool_call_id":`)
	b.WriteString(jstr(s.toolCallID))
	b.WriteString(`}`)
	return b.String()
}
