// Package inspect is the read model behind `kandev-extract inspect`: for
// one turn, session or installation of a warehouse, the claim each level
// makes (completeness, fan-out, lower bound), the rules that decided it
// (the reason codes) and the evidence — identifiers, counts and health
// facts read from warehouse.duckdb, never content. The same Document is
// rendered as a tree and as the versioned JSON contract
// (docs/inspect.md); a value the warehouse does not hold is nil (JSON
// null), never synthesized.
package inspect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// Format names the JSON contract; its fields are only ever added within
// a version.
const Format = "kandev-extract.inspect.v1"

// Kinds of object inspect looks up.
const (
	KindTurn         = "turn"
	KindSession      = "session"
	KindInstallation = "installation"
)

// Document is one inspection.
type Document struct {
	Format       string       `json:"format"`
	Query        Query        `json:"query"`
	Installation Installation `json:"installation"`
	// Sessions: the inspected session, or the inspected turn's session
	// (with only that turn), or every session of the installation (as
	// summaries, without turns or rows).
	Sessions []Session `json:"sessions"`
}

// Query is what was asked.
type Query struct {
	Kind         string  `json:"kind"`
	ID           string  `json:"id"`
	Installation *string `json:"installation"`
}

// Key is one activation key of kandev_meta.
type Key struct {
	Raw       *string    `json:"raw"`
	Parsed    *time.Time `json:"parsed"`
	Precision *string    `json:"precision"`
	State     string     `json:"state"`
}

// Served is what the warehouse serves for the installation.
type Served struct {
	LatestAttemptRunID  *string  `json:"latest_attempt_run_id"`
	LatestAttemptStatus *string  `json:"latest_attempt_status"`
	LatestAttemptFailed *bool    `json:"latest_attempt_failed"`
	DataAgeHours        *float64 `json:"data_age_hours"`
	IsStale             *bool    `json:"is_stale"`
}

// Disclosure is one current disclosure of the installation.
type Disclosure struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Count    *int64 `json:"count"`
}

// Installation is the installation level.
type Installation struct {
	InstallationID     string       `json:"installation_id"`
	RunID              string       `json:"run_id"`
	SnapshotAt         time.Time    `json:"snapshot_at"`
	SourceDialect      string       `json:"source_dialect"`
	KandevVersion      *string      `json:"kandev_version"`
	ExtractorVersion   string       `json:"extractor_version"`
	SubagentTableShape string       `json:"subagent_table_shape"`
	ActivationState    string       `json:"activation_state"`
	CaptureSince       Key          `json:"capture_since"`
	BackfillThrough    Key          `json:"backfill_through"`
	ExecutionSince     Key          `json:"execution_since"`
	SubagentRows       *int64       `json:"subagent_rows"`
	SessionRows        int64        `json:"session_rows"`
	TurnRows           int64        `json:"turn_rows"`
	RejectedValues     int64        `json:"rejected_values"`
	Served             Served       `json:"served"`
	Disclosures        []Disclosure `json:"disclosures"`
	// TurnsByCompleteness and TurnsByReason count the installation's
	// turns (TurnsByReason is nil when a turn predates the codes).
	TurnsByCompleteness map[string]int64 `json:"turns_by_completeness"`
	TurnsByReason       map[string]int64 `json:"turns_by_reason"`
}

// Claim is what a turn or session claims and the rules that decided it.
type Claim struct {
	Completeness      string `json:"fanout_completeness"`
	Fanout            *int64 `json:"fanout"`
	SubagentsObserved int64  `json:"subagents_observed"`
	LowerBound        int64  `json:"fanout_lower_bound"`
	// Reasons: the completeness_reasons codes; nil when the run predates
	// them.
	Reasons []string `json:"completeness_reasons"`
}

// Evidence is what the claim rests on.
type Evidence struct {
	CaptureWindow            string `json:"capture_window"`
	CaptureBoundaryAmbiguous bool   `json:"capture_boundary_ambiguous"`
	DistinctToolCalls        int64  `json:"distinct_tool_calls"`
	LiveBackfillOverlap      int64  `json:"live_backfill_overlap"`
	MessagesExpected         int64  `json:"messages_expected"`
	WriterShortfall          *int64 `json:"writer_shortfall"`
	// UnattributedSessionRows: turns only.
	UnattributedSessionRows *int64 `json:"unattributed_session_rows,omitempty"`
	// The lists below are filled for an inspected turn or session; a
	// session summary of an installation leaves them out.
	ToolCallsWithRows []string `json:"tool_calls_with_rows,omitempty"`
	// MessageToolCallsWithoutRows: the tool calls of its messages at or
	// after capture_since with no row (writer health's keys); nil when
	// the shortfall was not measured.
	MessageToolCallsWithoutRows *[]string     `json:"message_tool_calls_without_rows,omitempty"`
	Collisions                  *[]Collision  `json:"collisions,omitempty"`
	DeletedRows                 *[]DeletedRow `json:"deleted_rows,omitempty"`
}

// Collision is one tool call with more than one row.
type Collision struct {
	ToolCallID  string   `json:"tool_call_id"`
	SubagentIDs []string `json:"subagent_ids"`
}

// DeletedRow is a subagent row a previous run saw that the source no
// longer has (archive_subagent_context).
type DeletedRow struct {
	SubagentID           string     `json:"subagent_id"`
	ToolCallID           string     `json:"tool_call_id"`
	DeletedDetectedRunID *string    `json:"deleted_detected_run_id"`
	LastSeenRunID        *string    `json:"last_seen_run_id"`
	LastSeenSnapshotAt   *time.Time `json:"last_seen_snapshot_at"`
}

// Session is one session.
type Session struct {
	SessionID string     `json:"session_id"`
	TaskID    string     `json:"task_id"`
	State     *string    `json:"state"`
	StartedAt *time.Time `json:"started_at"`
	Claim     Claim      `json:"claim"`
	Evidence  Evidence   `json:"evidence"`
	Turns     []Turn     `json:"turns,omitempty"`
	// Unattributed: rows of the session that name no turn of the
	// snapshot (inspect session only).
	Unattributed []Subagent `json:"unattributed_subagents,omitempty"`
}

// Turn is one turn.
type Turn struct {
	TurnID       string     `json:"turn_id"`
	StartedAt    *time.Time `json:"started_at"`
	WorkflowStep *string    `json:"workflow_step_id_at_start"`
	Claim        Claim      `json:"claim"`
	Evidence     Evidence   `json:"evidence"`
	Subagents    []Subagent `json:"subagents"`
}

// Subagent is one subagent row, identifiers and classes only.
type Subagent struct {
	SubagentID               string     `json:"subagent_id"`
	ToolCallID               string     `json:"tool_call_id"`
	ParentToolCallID         *string    `json:"parent_tool_call_id"`
	AgentExecutionID         *string    `json:"agent_execution_id"`
	ExecutionID              *string    `json:"execution_id"`
	ExecutionIdentity        string     `json:"execution_identity"`
	ExecutionIdentityReasons []string   `json:"execution_identity_reasons"`
	Source                   string     `json:"source"`
	CaptureWindow            string     `json:"capture_window"`
	CaptureBoundaryAmbiguous bool       `json:"capture_boundary_ambiguous"`
	TurnAttribution          string     `json:"turn_attribution"`
	SubagentType             *string    `json:"subagent_type"`
	Model                    *string    `json:"model"`
	ToolStatus               *string    `json:"tool_status"`
	IsTerminal               bool       `json:"is_terminal"`
	ObservedAt               time.Time  `json:"observed_at"`
	SettledAt                *time.Time `json:"settled_at"`
	IsMeasured               bool       `json:"is_measured"`
	TotalTokens              *int64     `json:"total_tokens"`
	ToolUseCount             *int64     `json:"tool_use_count"`
	DurationMs               *int64     `json:"duration_ms"`
}

// ErrNotFound: no object of the kind has the id.
var ErrNotFound = errors.New("not found")

// AmbiguousError: the id names objects in several installations (or, as
// a prefix, several objects).
type AmbiguousError struct {
	Kind       string
	ID         string
	Candidates []string // "installation/id"
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s %q matches %d objects: %s; pass the full id, or --installation NAME", e.Kind, e.ID, len(e.Candidates), strings.Join(e.Candidates, ", "))
}

// minPrefix is the shortest id prefix inspect resolves (a report prints
// ids cut to 8 characters).
const minPrefix = 8

// maxCandidates bounds the candidates an ambiguous id lists.
const maxCandidates = 10

// Inspect reads the Document of one object. installation, when not "",
// restricts the lookup to that installation. An id is matched exactly, or
// else (8 characters or more) as a unique prefix.
func Inspect(ctx context.Context, db *sql.DB, kind, id, installation string) (*Document, error) {
	doc := &Document{Format: Format, Query: Query{Kind: kind, ID: id}, Sessions: []Session{}}
	if installation != "" {
		doc.Query.Installation = &installation
	}
	var inst, session, turn string
	var err error
	switch kind {
	case KindTurn:
		var key [3]string
		key, err = resolve(ctx, db, `SELECT installation_id, session_id, turn_id FROM fanout_by_turn`, "turn_id", kind, id, installation)
		inst, session, turn = key[0], key[1], key[2]
	case KindSession:
		var key [3]string
		key, err = resolve(ctx, db, `SELECT installation_id, session_id, session_id FROM fanout_by_session`, "session_id", kind, id, installation)
		inst, session = key[0], key[1]
	case KindInstallation:
		if installation != "" && installation != id {
			return nil, fmt.Errorf("installation %q: %w (--installation says %q)", id, ErrNotFound, installation)
		}
		var key [3]string
		key, err = resolve(ctx, db, `SELECT installation_id, installation_id, installation_id FROM installations`, "installation_id", kind, id, "")
		inst = key[0]
	default:
		return nil, fmt.Errorf("inspect: unknown kind %q: use turn, session or installation", kind)
	}
	if err != nil {
		return nil, err
	}
	if err := readInstallation(ctx, db, inst, &doc.Installation); err != nil {
		return nil, err
	}
	switch kind {
	case KindInstallation:
		doc.Sessions, err = readSessions(ctx, db, inst, "")
	default:
		doc.Sessions, err = readSessions(ctx, db, inst, session)
		if err == nil && len(doc.Sessions) == 1 {
			err = expandSession(ctx, db, inst, &doc.Sessions[0], turn)
		}
	}
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// resolve finds the one object whose idCol is id (or starts with it).
func resolve(ctx context.Context, db *sql.DB, sel, idCol, kind, id, installation string) ([3]string, error) {
	var none [3]string
	find := func(cond string) ([][3]string, error) {
		q := sel + ` WHERE ` + cond
		args := []any{id}
		if installation != "" {
			q += ` AND installation_id = ?`
			args = append(args, installation)
		}
		q += ` ORDER BY 1, 3 LIMIT ` + fmt.Sprint(maxCandidates+1)
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out [][3]string
		for rows.Next() {
			var k [3]string
			if err := rows.Scan(&k[0], &k[1], &k[2]); err != nil {
				return nil, err
			}
			out = append(out, k)
		}
		return out, rows.Err()
	}
	found, err := find(idCol + ` = ?`)
	if err == nil && len(found) == 0 && len(id) >= minPrefix && kind != KindInstallation {
		found, err = find(`starts_with(` + idCol + `, ?)`)
	}
	if err != nil {
		return none, fmt.Errorf("inspect %s: %w", kind, err)
	}
	switch len(found) {
	case 0:
		where := "in the warehouse's current data"
		if installation != "" {
			where = fmt.Sprintf("in installation %q", installation)
		}
		hint := ""
		switch {
		case kind == KindInstallation:
			if names, err := strings1(ctx, db, `SELECT installation_id FROM installations ORDER BY 1 LIMIT `+fmt.Sprint(maxCandidates)); err == nil && len(names) > 0 {
				hint = " (installations: " + strings.Join(names, ", ") + ")"
			}
		case len(id) < minPrefix:
			hint = fmt.Sprintf(" (an id prefix needs %d characters or more)", minPrefix)
		}
		return none, fmt.Errorf("%s %q: %w %s%s", kind, id, ErrNotFound, where, hint)
	case 1:
		return found[0], nil
	}
	amb := &AmbiguousError{Kind: kind, ID: id}
	for i, k := range found {
		if i == maxCandidates {
			amb.Candidates = append(amb.Candidates, "…")
			break
		}
		amb.Candidates = append(amb.Candidates, k[0]+"/"+k[2])
	}
	return none, amb
}

func readInstallation(ctx context.Context, db *sql.DB, inst string, out *Installation) error {
	keys := func(prefix string) string {
		return prefix + `_raw, ` + prefix + `, ` + prefix + `_precision, ` + prefix + `_state`
	}
	row := db.QueryRowContext(ctx, `SELECT i.installation_id, i.run_id, i.snapshot_at, i.source_dialect, i.kandev_version, i.extractor_version,
			i.subagent_table_shape, i.activation_state, `+keys("capture_since")+`, `+keys("backfill_through")+`, `+keys("execution_since")+`,
			i.subagent_rows, i.session_rows, i.turn_rows, i.rejected_values,
			c.latest_attempt_run_id, c.latest_attempt_status, c.latest_attempt_failed, c.data_age_hours, c.is_stale
		FROM installations i LEFT JOIN current_runs c USING (installation_id) WHERE i.installation_id = ?`, inst)
	var keyVals [3]struct {
		raw, precision sql.NullString
		parsed         sql.NullTime
		state          string
	}
	var kandev sql.NullString
	var subagents sql.NullInt64
	var attemptRun, attemptStatus sql.NullString
	var attemptFailed, stale sql.NullBool
	var age sql.NullFloat64
	if err := row.Scan(&out.InstallationID, &out.RunID, &out.SnapshotAt, &out.SourceDialect, &kandev, &out.ExtractorVersion,
		&out.SubagentTableShape, &out.ActivationState,
		&keyVals[0].raw, &keyVals[0].parsed, &keyVals[0].precision, &keyVals[0].state,
		&keyVals[1].raw, &keyVals[1].parsed, &keyVals[1].precision, &keyVals[1].state,
		&keyVals[2].raw, &keyVals[2].parsed, &keyVals[2].precision, &keyVals[2].state,
		&subagents, &out.SessionRows, &out.TurnRows, &out.RejectedValues,
		&attemptRun, &attemptStatus, &attemptFailed, &age, &stale); err != nil {
		return fmt.Errorf("inspect installation %q: %w", inst, err)
	}
	out.KandevVersion, out.SubagentRows = str(kandev), i64(subagents)
	for i, k := range []*Key{&out.CaptureSince, &out.BackfillThrough, &out.ExecutionSince} {
		v := keyVals[i]
		*k = Key{Raw: str(v.raw), Parsed: stamp(v.parsed), Precision: str(v.precision), State: v.state}
	}
	out.Served = Served{LatestAttemptRunID: str(attemptRun), LatestAttemptStatus: str(attemptStatus),
		LatestAttemptFailed: boolean(attemptFailed), DataAgeHours: float(age), IsStale: boolean(stale)}

	out.Disclosures = []Disclosure{}
	rows, err := db.QueryContext(ctx, `SELECT rule, severity, count FROM disclosures WHERE installation_id = ? ORDER BY CASE severity WHEN 'alarm' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, rule`, inst)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var d Disclosure
		var n sql.NullInt64
		if err := rows.Scan(&d.Rule, &d.Severity, &n); err != nil {
			return err
		}
		d.Count = i64(n)
		out.Disclosures = append(out.Disclosures, d)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	out.TurnsByCompleteness = map[string]int64{}
	for _, c := range []models.FanoutCompleteness{models.FanoutComplete, models.FanoutLowerBound, models.FanoutUnknown} {
		out.TurnsByCompleteness[string(c)] = 0
	}
	if err := counts(ctx, db, out.TurnsByCompleteness, `SELECT fanout_completeness, count(*) FROM fanout_by_turn WHERE installation_id = ? GROUP BY 1`, inst); err != nil {
		return err
	}
	var undated int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM fanout_by_turn WHERE installation_id = ? AND completeness_reasons IS NULL`, inst).Scan(&undated); err != nil {
		return err
	}
	if undated == 0 {
		out.TurnsByReason = map[string]int64{}
		return counts(ctx, db, out.TurnsByReason, `SELECT code, count(*) FROM (SELECT unnest(completeness_reasons) AS code FROM fanout_by_turn WHERE installation_id = ?) GROUP BY 1`, inst)
	}
	return nil
}

func counts(ctx context.Context, db *sql.DB, into map[string]int64, q string, args ...any) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		into[k] = n
	}
	return rows.Err()
}

// claimColumns are the claim and evidence columns fanout_by_turn and
// fanout_by_session share, in scanClaim's order.
const claimColumns = `fanout_completeness, fanout, subagents_observed, fanout_lower_bound, completeness_reasons,
	capture_window, capture_boundary_ambiguous, distinct_tool_calls, live_backfill_overlap, messages_expected, writer_shortfall`

// claimCells are the scan targets of claimColumns.
type claimCells struct {
	fanout, shortfall sql.NullInt64
	reasons           any
}

func (c *claimCells) targets(cl *Claim, ev *Evidence) []any {
	return []any{&cl.Completeness, &c.fanout, &cl.SubagentsObserved, &cl.LowerBound, &c.reasons,
		&ev.CaptureWindow, &ev.CaptureBoundaryAmbiguous, &ev.DistinctToolCalls, &ev.LiveBackfillOverlap, &ev.MessagesExpected, &c.shortfall}
}

func (c *claimCells) finish(cl *Claim, ev *Evidence) {
	cl.Fanout, ev.WriterShortfall = i64(c.fanout), i64(c.shortfall)
	cl.Reasons = list(c.reasons)
}

// readSessions reads one session (session != "") or every session of the
// installation.
func readSessions(ctx context.Context, db *sql.DB, inst, session string) ([]Session, error) {
	q := `SELECT session_id, task_id, state, started_at, ` + claimColumns + ` FROM fanout_by_session WHERE installation_id = ?`
	args := []any{inst}
	if session != "" {
		q += ` AND session_id = ?`
		args = append(args, session)
	}
	rows, err := db.QueryContext(ctx, q+` ORDER BY started_at NULLS LAST, session_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("inspect sessions: %w", err)
	}
	defer rows.Close()
	out := []Session{}
	for rows.Next() {
		var s Session
		var state sql.NullString
		var started sql.NullTime
		var c claimCells
		if err := rows.Scan(append([]any{&s.SessionID, &s.TaskID, &state, &started}, c.targets(&s.Claim, &s.Evidence)...)...); err != nil {
			return nil, err
		}
		c.finish(&s.Claim, &s.Evidence)
		s.State, s.StartedAt = str(state), stamp(started)
		out = append(out, s)
	}
	return out, rows.Err()
}

// expandSession adds the session's turns (only turn, when given), their
// rows and the evidence lists.
func expandSession(ctx context.Context, db *sql.DB, inst string, s *Session, turn string) error {
	q := `SELECT turn_id, started_at, workflow_step_id_at_start, unattributed_session_rows, ` + claimColumns +
		` FROM fanout_by_turn WHERE installation_id = ? AND session_id = ?`
	args := []any{inst, s.SessionID}
	if turn != "" {
		q += ` AND turn_id = ?`
		args = append(args, turn)
	}
	rows, err := db.QueryContext(ctx, q+` ORDER BY started_at NULLS LAST, turn_id`, args...)
	if err != nil {
		return fmt.Errorf("inspect turns: %w", err)
	}
	for rows.Next() {
		var t Turn
		var started sql.NullTime
		var step sql.NullString
		var unplaced int64
		var c claimCells
		if err := rows.Scan(append([]any{&t.TurnID, &started, &step, &unplaced}, c.targets(&t.Claim, &t.Evidence)...)...); err != nil {
			rows.Close()
			return err
		}
		c.finish(&t.Claim, &t.Evidence)
		t.StartedAt, t.WorkflowStep, t.Evidence.UnattributedSessionRows = stamp(started), str(step), &unplaced
		s.Turns = append(s.Turns, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	all, err := readSubagents(ctx, db, inst, s.SessionID)
	if err != nil {
		return err
	}
	for i := range s.Turns {
		t := &s.Turns[i]
		t.Subagents = []Subagent{}
		for _, r := range all {
			if r.turnID == t.TurnID {
				t.Subagents = append(t.Subagents, r.Subagent)
			}
		}
		if err := fillEvidence(ctx, db, inst, "turn_id", t.TurnID, t.Subagents, &t.Evidence); err != nil {
			return err
		}
	}
	var rowsOfSession []Subagent
	for _, r := range all {
		rowsOfSession = append(rowsOfSession, r.Subagent)
		if turn == "" && r.TurnAttribution != string(models.Attributed) {
			s.Unattributed = append(s.Unattributed, r.Subagent)
		}
	}
	return fillEvidence(ctx, db, inst, "session_id", s.SessionID, rowsOfSession, &s.Evidence)
}

type subagentRow struct {
	Subagent
	turnID string
}

func readSubagents(ctx context.Context, db *sql.DB, inst, session string) ([]subagentRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT coalesce(turn_id, ''), subagent_id, tool_call_id, parent_tool_call_id, agent_execution_id, execution_id,
			execution_identity, execution_identity_reasons, source, capture_window, capture_boundary_ambiguous, turn_attribution,
			subagent_type, model, tool_status, is_terminal, observed_at, settled_at, is_measured, total_tokens, tool_use_count, duration_ms
		FROM subagent_contexts WHERE installation_id = ? AND task_session_id = ? ORDER BY observed_at, subagent_id`, inst, session)
	if err != nil {
		return nil, fmt.Errorf("inspect subagents: %w", err)
	}
	defer rows.Close()
	var out []subagentRow
	for rows.Next() {
		var r subagentRow
		var parent, agentExec, exec, typ, model, status sql.NullString
		var settled sql.NullTime
		var tokens, tools, dur sql.NullInt64
		var reasons any
		if err := rows.Scan(&r.turnID, &r.SubagentID, &r.ToolCallID, &parent, &agentExec, &exec, &r.ExecutionIdentity, &reasons,
			&r.Source, &r.CaptureWindow, &r.CaptureBoundaryAmbiguous, &r.TurnAttribution, &typ, &model, &status, &r.IsTerminal,
			&r.ObservedAt, &settled, &r.IsMeasured, &tokens, &tools, &dur); err != nil {
			return nil, err
		}
		r.ParentToolCallID, r.AgentExecutionID, r.ExecutionID = str(parent), str(agentExec), str(exec)
		r.SubagentType, r.Model, r.ToolStatus, r.SettledAt = str(typ), str(model), str(status), stamp(settled)
		r.TotalTokens, r.ToolUseCount, r.DurationMs = i64(tokens), i64(tools), i64(dur)
		r.ExecutionIdentityReasons = list(reasons)
		out = append(out, r)
	}
	return out, rows.Err()
}

// fillEvidence adds the id lists of one turn (col turn_id) or session
// (col session_id).
func fillEvidence(ctx context.Context, db *sql.DB, inst, col, id string, rows []Subagent, ev *Evidence) error {
	byCall := map[string][]string{}
	var calls []string
	for _, r := range rows {
		if _, seen := byCall[r.ToolCallID]; !seen && r.ToolCallID != "" {
			calls = append(calls, r.ToolCallID)
		}
		byCall[r.ToolCallID] = append(byCall[r.ToolCallID], r.SubagentID)
	}
	ev.ToolCallsWithRows = append([]string{}, calls...)
	collisions := []Collision{}
	for _, c := range calls {
		if ids := byCall[c]; len(ids) > 1 {
			collisions = append(collisions, Collision{ToolCallID: c, SubagentIDs: ids})
		}
	}
	ev.Collisions = &collisions
	if ev.WriterShortfall != nil {
		missing, err := strings1(ctx, db, `SELECT DISTINCT tool_call_id FROM fact_writer_shortfall WHERE installation_id = ? AND `+col+` = ? ORDER BY 1`, inst, id)
		if err != nil {
			return err
		}
		ev.MessageToolCallsWithoutRows = &missing
	}
	archCol := col
	if col == "session_id" {
		archCol = "task_session_id"
	}
	q, err := db.QueryContext(ctx, `SELECT subagent_id, tool_call_id, deleted_detected_run_id, last_seen_run_id, last_seen_snapshot_at
		FROM archive_subagent_context WHERE installation_id = ? AND `+archCol+` = ? ORDER BY subagent_id`, inst, id)
	if err != nil {
		return fmt.Errorf("inspect deleted rows: %w", err)
	}
	defer q.Close()
	deleted := []DeletedRow{}
	for q.Next() {
		var d DeletedRow
		var det, last sql.NullString
		var at sql.NullTime
		if err := q.Scan(&d.SubagentID, &d.ToolCallID, &det, &last, &at); err != nil {
			return err
		}
		d.DeletedDetectedRunID, d.LastSeenRunID, d.LastSeenSnapshotAt = str(det), str(last), stamp(at)
		deleted = append(deleted, d)
	}
	ev.DeletedRows = &deleted
	return q.Err()
}

func strings1(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func str(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	return &v.String
}

func i64(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func float(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

func boolean(v sql.NullBool) *bool {
	if !v.Valid {
		return nil
	}
	return &v.Bool
}

func stamp(v sql.NullTime) *time.Time {
	if !v.Valid {
		return nil
	}
	t := v.Time.UTC()
	return &t
}

// list reads a DuckDB VARCHAR[] (nil when NULL).
func list(v any) []string {
	items, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
