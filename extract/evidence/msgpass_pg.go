package evidence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// The message pass on PostgreSQL: the same one read of each table and the
// same set logic in the process as on SQLite (msgpass.go), with
// PostgreSQL's own semantics, which the server applies: the metadata is
// cast to jsonb once per message that needs it — a candidate of the exact
// pre-filter, or a message at or after capture_since (writer health parses
// every one of them, so that metadata that is not JSON fails the cast
// there as it always did) — and the kind and tool_call_id are read with
// #>>, as text. The evidence and health queries (messages.go, health.go)
// each parsed the candidates and sorted and joined on the server; here the
// server streams one row per subagent-task message.
//
// $1 is capture_since as a timestamp (NULL: none); %s an optional
// exclusion of messages whose metadata is not JSON (found after a failed
// first try, as before).
const pgPassMessages = `
SELECT m.turn_id, m.task_session_id, m.task_id, m.created_at >= $1::timestamp,
	x.meta #>> '{normalized,kind}' = 'subagent_task', x.meta #>> '{tool_call_id}', jsonb_typeof(x.meta -> 'tool_call_id'),
	octet_length(m.metadata) > ` + maxMessageMetadata + `
FROM task_session_messages m
CROSS JOIN LATERAL (SELECT CASE
		WHEN m.metadata IS NULL OR octet_length(m.metadata) > ` + maxMessageMetadata + ` OR m.metadata IN ('', 'null') THEN NULL
		WHEN m.created_at >= $1::timestamp OR strpos(m.metadata, 'subagent_task') > 0 OR strpos(m.metadata, '\') > 0 THEN m.metadata::jsonb
	END AS meta OFFSET 0) x
WHERE (x.meta #>> '{normalized,kind}' = 'subagent_task' OR (octet_length(m.metadata) > ` + maxMessageMetadata + ` AND m.created_at >= $1::timestamp)) %s`

const pgPassSubagents = `
SELECT turn_id, task_session_id, tool_call_id, observed_at >= $1::timestamp, observed_at FROM task_session_subagents`

// pgPassSubagentsFanout is pgPassSubagents with, for the fan-out
// (fanout.go), each row's source class (scans.FanoutSource) and which of
// its ids is over the 1 MiB key bound (1 turn, 2 session, 4 tool call:
// octet_length in the server's encoding, as the join measures).
var pgPassSubagentsFanout = strings.Replace(pgPassSubagents, " FROM task_session_subagents", `,
	`+scans.FanoutSource+`,
	CASE WHEN octet_length(turn_id) > 1048576 THEN 1 ELSE 0 END + CASE WHEN octet_length(task_session_id) > 1048576 THEN 2 ELSE 0 END
		+ CASE WHEN octet_length(tool_call_id) > 1048576 THEN 4 ELSE 0 END
FROM task_session_subagents`, 1)

// pgMessage takes one row of pgPassMessages.
func (p *msgPass) pgMessage(row []any) {
	recent, _ := row[3].(bool)
	if over, _ := row[7].(bool); over {
		p.addMessage(sqlValue{}, sqlValue{}, sqlValue{}, 0, recent, false, sqlValue{}, false)
		return
	}
	if kind, _ := row[4].(bool); !kind {
		return
	}
	tc := classifyValue(row[5])
	typ, _ := row[6].(string)
	p.addMessage(classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2]), 0, recent, true, tc,
		typ == "string" && tc.tag == tagText && tc.s != "")
}

// pgSubagent takes one row of pgPassSubagents.
func (p *msgPass) pgSubagent(row []any) {
	since, _ := row[3].(bool)
	var obs time.Time
	if t, ok := row[4].(time.Time); ok {
		// timestamp without time zone: its wall clock is UTC (the row
		// decoder gives it in UTC already: no rebuilding then).
		obs = t
		if t.Location() != time.UTC {
			obs = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		}
	}
	turn, sess, tc := classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2])
	if p.fan == nil {
		p.addSubagent(turn, sess, tc, since, obs)
		return
	}
	// The fan-out reads an id over the key bound as NULL; writer health
	// and the evidence compare it whole.
	over := sqlkit.AsInt64(row[6])
	if over == 0 {
		p.addSubagentIn(turn, sess, tc, since, obs, p.fanRow(turn, sess, tc, sqlkit.AsInt64(row[5])))
		return
	}
	p.addSubagent(turn, sess, tc, since, obs)
	for i, v := range []*sqlValue{&turn, &sess, &tc} {
		if over&(1<<i) != 0 {
			*v = sqlValue{tag: tagNull}
		}
	}
	p.fanRow(turn, sess, tc, sqlkit.AsInt64(row[5]))
}

// readMessagesPG is the pass on PostgreSQL, once readMessages has checked
// the schema and counted the messages.
func readMessagesPG(ctx context.Context, s PostgresSnapshot, ev MessageEvidence, since *time.Time, subagents, health, fanout bool) (MessageEvidence, *models.HealthCounts, error) {
	var bound any
	if since != nil {
		bound = ceilMicro(*since).Format("2006-01-02 15:04:05.999999")
	}
	wrap := func(err error) error { return s.Wrap("message pass over", "task_session_messages", err) }
	// Metadata that is not JSON aborts the cast for the whole statement:
	// try under a savepoint; only when it fails on invalid JSON, find those
	// messages and read again without them.
	var (
		bad       []string
		badRecent int64
	)
	var p *msgPass
	defer func() {
		if p != nil {
			p.release()
		}
	}()
	for attempt := 0; ; attempt++ {
		if p != nil {
			p.release() // the attempt that met metadata that is not JSON
		}
		p = newMsgPass(since, subagents, health, fanout)
		exclude, args := "", []any{bound}
		if attempt > 0 {
			exclude, args = "AND NOT (m.id = ANY($2))", append(args, bad)
		}
		if err := s.Exec(ctx, `SAVEPOINT kx_pass`); err != nil {
			return ev, nil, wrap(err)
		}
		if err := forRows(ctx, s, fmt.Sprintf(pgPassMessages, exclude), args, p.pgMessage); err != nil {
			var pgErr *pgconn.PgError
			if attempt > 0 || !errors.As(err, &pgErr) || pgErr.Code != "22P02" {
				return ev, nil, wrap(err)
			}
			if err := s.Exec(ctx, `ROLLBACK TO SAVEPOINT kx_pass`); err != nil {
				return ev, nil, wrap(err)
			}
			if bad, badRecent, err = malformedSince(ctx, s, bound); err != nil {
				return ev, nil, err
			}
			ev.Malformed = int64(len(bad))
			continue
		}
		if err := s.Exec(ctx, `RELEASE SAVEPOINT kx_pass`); err != nil {
			return ev, nil, wrap(err)
		}
		p.malformed += badRecent
		p.sealMessages()
		if subagents {
			q := pgPassSubagents
			if p.fan != nil {
				q = pgPassSubagentsFanout
			}
			if err := forRows(ctx, s, q, []any{bound}, p.pgSubagent); err != nil {
				return ev, nil, s.Wrap("message pass over", "task_session_subagents", err)
			}
		}
		counts := p.finish(&ev)
		if len(p.missingKeys) > 0 {
			if err := p.pgReadMissing(ctx, s, &ev, bound, bad); err != nil {
				return ev, nil, err
			}
		}
		if !health {
			return ev, nil, nil
		}
		return ev, &counts, nil
	}
}

// forRows streams a query's rows to fn (Snapshot.Stream); its error is
// the driver's.
func forRows(ctx context.Context, s Snapshot, q string, args []any, fn func(row []any)) error {
	return s.Stream(ctx, q, args, false, func(row []any) error {
		fn(row)
		return nil
	})
}

// malformedSince lists the messages whose metadata is not JSON (as the
// health check always found them: Go's json.Valid on values within the
// read bound) and counts those at or after bound.
func malformedSince(ctx context.Context, s Snapshot, bound any) ([]string, int64, error) {
	var (
		bad    []string
		recent int64
	)
	err := s.Stream(ctx, `SELECT id, metadata, created_at >= $1::timestamp FROM task_session_messages
		WHERE metadata IS NOT NULL AND octet_length(metadata) <= `+maxMessageMetadata+` AND metadata NOT IN ('', 'null')`, []any{bound}, false, func(row []any) error {
		id, okID := row[0].(string)
		meta, okMeta := row[1].(string)
		if !okID || !okMeta {
			return fmt.Errorf("a message's id or metadata is %T, %T: not text", row[0], row[1])
		}
		if !json.Valid([]byte(meta)) {
			bad = append(bad, id)
			if isNew, _ := row[2].(bool); isNew {
				recent++
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, s.Wrap("message pass over", "task_session_messages", err)
	}
	return bad, recent, nil
}

// pgReadMissing reads the shortfall's rows back from the sessions
// concerned (see readMissing).
func (p *msgPass) pgReadMissing(ctx context.Context, s Snapshot, ev *MessageEvidence, bound any, bad []string) error {
	sessions := make([]string, 0, len(p.missingGroups))
	for _, g := range p.missingGroups {
		sessions = append(sessions, p.sess.value(g).s)
	}
	exclude, args := "AND m.task_session_id = ANY($2)", []any{bound, sessions}
	if len(bad) > 0 {
		exclude, args = exclude+" AND NOT (m.id = ANY($3))", append(args, bad)
	}
	seen := map[[3]string]bool{}
	var rows []models.MissingRow
	err := forRows(ctx, s, fmt.Sprintf(pgPassMessages, exclude), args, func(row []any) {
		recent, _ := row[3].(bool)
		kind, _ := row[4].(bool)
		typ, _ := row[6].(string)
		turn, sess, task, tc := classifyValue(row[0]), classifyValue(row[1]), classifyValue(row[2]), classifyValue(row[5])
		if !recent || !kind || typ != "string" || tc.tag != tagText || tc.s == "" || !sess.nonEmpty() || !task.nonEmpty() {
			return
		}
		if p.subagents {
			if _, found := slices.BinarySearchFunc(p.sinceKeys.All(), p.pairKey(sess, tc), hashkey.Compare); found {
				return
			}
		}
		k := [3]string{turn.s, sess.s, tc.s}
		if !seen[k] {
			seen[k] = true
			rows = append(rows, models.MissingRow{TurnID: turn.s, SessionID: sess.s, ToolCallID: tc.s})
		}
	})
	if err != nil {
		return s.Wrap("message pass over", "task_session_messages", err)
	}
	ev.Missing = append(ev.Missing, rows...)
	shortfallCounts(ev)
	return nil
}
