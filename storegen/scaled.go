package storegen

import (
	"fmt"
	"time"
)

// scaledPlanner streams sessionSpecs for an arbitrary population size. Totals
// (sessions, turns, subagent rows, messages, collisions) are exact; the shape
// follows the reference population's rates. The timeline is split at
// capture_since into a backfilled phase and a live phase; no session crosses
// the boundary.
type scaledPlanner struct {
	r      *rng
	phases []*phase
	cur    int
	blank  bool // one opening agent message gets metadata '' (first session)
	null   bool // one opening agent message gets metadata 'null' (first live session)
	first  bool
}

type phase struct {
	live       bool
	sessions   int64
	done       int64
	from, to   time.Time // window for session start times
	turnsMix   *exactMix // turns per session
	zeroMix    *exactMix // 0 = turn without subagents, 1 = turn with subagents
	fanMix     *exactMix // subagents per turn with subagents (distinct tool calls)
	extrasMix  *exactMix // messages beyond user prompt + opening text + subagent messages
	turns      int64
	turnIdx    int64
	collisions int64
	placed     int64
}

// Shapes (relative weights by value).
var (
	shapeTurnsPerSession = []int64{0, 10, 18, 20, 17, 12, 8, 5, 4, 2, 2, 1, 1}
	shapeFanout          = []int64{0, 65, 12, 42, 5, 2, 0, 0, 1} // the reference distribution
	shapeExtras          = []int64{3, 4, 4, 3, 2, 1, 1}
)

// minMessages is the smallest message count a population can have: a user
// prompt and an opening agent text per turn, one message per distinct
// subagent tool call.
func minMessages(turns, subagents, collisions int64) int64 {
	return 2*turns + subagents - collisions
}

func newScaledPlanner(o *Options, r *rng) (*scaledPlanner, error) {
	n, t, s, k := int64(o.Sessions), int64(o.Turns), int64(o.Subagents), int64(o.Collisions)
	m := int64(o.Messages)
	if m == 0 {
		m = minMessages(t, s, k) + t/2
	}
	extras := m - minMessages(t, s, k)
	if extras < 0 {
		return nil, fmt.Errorf("storegen: Messages=%d is below the minimum %d (2 per turn + 1 per distinct subagent)", m, minMessages(t, s, k))
	}
	p := &scaledPlanner{r: r, blank: o.BlankMetadataMessage, null: o.NullMetadataMessage, first: true}

	type split struct {
		live       bool
		n, t, s, k int64
		e          int64
		from, to   time.Time
	}
	var splits []split
	c := o.CaptureSince
	switch {
	case c.IsZero() || !c.After(o.Start):
		splits = []split{{true, n, t, s - k, k, extras, o.Start, o.End.Add(-36 * time.Hour)}}
	case !c.Before(o.End):
		if k > 0 {
			return nil, fmt.Errorf("storegen: Collisions need live activity, but CaptureSince is not before End")
		}
		splits = []split{{false, n, t, s, 0, extras, o.Start, o.End.Add(-36 * time.Hour)}}
	default:
		total := int64(o.End.Sub(o.Start) / time.Second)
		before := int64(c.Sub(o.Start) / time.Second)
		nPre := n * before / total
		tPre := max(t*before/total, nPre)
		if t-tPre < n-nPre {
			tPre = t - (n - nPre)
		}
		sPre := (s - k) * tPre / t
		ePre := extras * tPre / t
		splits = []split{
			{false, nPre, tPre, sPre, 0, ePre, o.Start, c.Add(-36 * time.Hour)},
			{true, n - nPre, t - tPre, s - k - sPre, k, extras - ePre, c.Add(time.Minute), o.End.Add(-36 * time.Hour)},
		}
	}
	for _, sp := range splits {
		if sp.n == 0 {
			if sp.t != 0 || sp.s != 0 || sp.k != 0 {
				return nil, fmt.Errorf("storegen: population does not fit the timeline split at CaptureSince")
			}
			continue
		}
		if !sp.to.After(sp.from) {
			return nil, fmt.Errorf("storegen: timeline too short: sessions of a phase need Start/CaptureSince/End at least 36h apart")
		}
		ph := &phase{live: sp.live, sessions: sp.n, from: sp.from, to: sp.to, turns: sp.t, collisions: sp.k}
		var err error
		if ph.turnsMix, err = newExactMix(sp.n, sp.t, 1, shapeTurnsPerSession); err != nil {
			return nil, err
		}
		zeros := sp.t / 5
		if sp.s == 0 {
			zeros = sp.t
		} else {
			zeros = min(max(zeros, sp.t-sp.s), sp.t-1)
		}
		if ph.zeroMix, err = newExactMix(sp.t, sp.t-zeros, 0, []int64{zeros, sp.t - zeros}); err != nil {
			return nil, err
		}
		if ph.fanMix, err = newExactMix(sp.t-zeros, sp.s, 1, shapeFanout); err != nil {
			return nil, err
		}
		if ph.extrasMix, err = newExactMix(sp.t, sp.e, 0, shapeExtras); err != nil {
			return nil, err
		}
		if sp.k > (sp.t-zeros)/3 {
			return nil, fmt.Errorf("storegen: Collisions=%d too many for %d live turns with subagents", sp.k, sp.t-zeros)
		}
		p.phases = append(p.phases, ph)
	}
	return p, nil
}

// next returns the next session in time order, or nil when done.
func (p *scaledPlanner) next() (*sessionSpec, error) {
	for p.cur < len(p.phases) && p.phases[p.cur].done == p.phases[p.cur].sessions {
		ph := p.phases[p.cur]
		if ph.placed != ph.collisions {
			return nil, fmt.Errorf("storegen: placed %d of %d collisions", ph.placed, ph.collisions)
		}
		p.cur++
	}
	if p.cur == len(p.phases) {
		return nil, nil
	}
	r := p.r
	ph := p.phases[p.cur]
	ss := &sessionSpec{agent: agentClaude, title: pick(r, taskTitles)}
	if r.chance(1, 20) {
		ss.agent = agentOpenCode
	}
	slot := ph.to.Sub(ph.from) / time.Duration(ph.sessions)
	ss.start = ph.from.Add(slot*time.Duration(ph.done) + r.dur(0, slot/2))
	nt := ph.turnsMix.draw(r)
	maxGap := min(90*time.Minute, 18*time.Hour/time.Duration(nt))
	for ti := 0; ti < nt; ti++ {
		var t turnSpec
		t.gap = r.dur(2*time.Minute, max(maxGap, 2*time.Minute))
		if ti > 0 && r.chance(1, 3) {
			t.newExec = true
		}
		e := ph.extrasMix.draw(r)
		if e > 0 {
			t.closing = true
			t.tools = e - 1
		}
		if ph.zeroMix.draw(r) == 1 {
			k := ph.fanMix.draw(r)
			t.subs = make([]subSpec, k)
			for i := range t.subs {
				sp := newSub()
				if ss.agent == agentOpenCode {
					sp.status = stStarted
					sp.typeNull = r.chance(2, 5)
				} else {
					switch x := r.intn(248); {
					case x < refAsync:
						sp.status = stAsync
					case x < refAsync+refCompleted:
						sp.status = stCompleted
						sp.noModel = r.chance(refCompletedNoMd, refCompleted)
						sp.toolUseZero = r.chance(1, 28)
					default:
						sp.status = stAbsent
						sp.typeNull = true
					}
				}
				sp.unknownExec = ph.live && r.chance(1, 50)
				t.subs[i] = sp
			}
			if ss.agent == agentClaude && k >= 2 && r.chance(1, 64) {
				t.subs[0] = subSpec{status: stCompleted, parent: -1, twinOf: -1}
				t.subs[1] = subSpec{status: stCompleted, parent: 0, twinOf: -1}
			}
			// Cross-execution collisions, spread over the first half of the
			// live phase so every one finds a turn.
			if ph.collisions > ph.placed {
				due := min(ph.collisions, ph.turnIdx*2*ph.collisions/ph.turns+1)
				if due > ph.placed {
					if t.subs[0].status == stAbsent {
						t.subs[0] = newSub()
						t.subs[0].status = stCompleted
					}
					t.subs = append(t.subs, subSpec{status: t.subs[0].status, parent: -1, twinOf: 0})
					t.subs[0].unknownExec = false
					t.newExec = ti > 0
					ph.placed++
				}
			}
		}
		ph.turnIdx++
		ss.turns = append(ss.turns, t)
	}
	ss.state = "COMPLETED"
	switch x := r.intn(50); {
	case x < 5:
		ss.state = "WAITING_FOR_INPUT"
	case x < 6:
		ss.state = "CANCELLED"
	}
	ph.done++
	if p.cur == len(p.phases)-1 && ph.done == ph.sessions {
		ss.state = "RUNNING"
		ss.turns[len(ss.turns)-1].incomplete = true
	}
	if p.blank && p.first {
		blank := ""
		ss.turns[0].openMeta = &blank
	} else if p.null && ph.live {
		null := "null"
		ss.turns[0].openMeta = &null
		p.null = false
	}
	p.first = false
	ss.step = stepFor(r, ss.state)
	return ss, nil
}
