package storegen

import "time"

// The reference population (Options.Reference, DemoOptions): the figures the
// spec measured on its reference store ("Sampled input shapes"), laid out as
// an upgraded installation whose history before capture_since was recovered
// by Kandev's backfill and whose later activity was captured live.
var (
	demoBoot          = time.Date(2026, 7, 21, 8, 14, 9, 271935118, time.UTC)
	demoCapture       = time.Date(2026, 8, 7, 12, 0, 0, 123456789, time.UTC)
	demoFirstObserved = time.Date(2026, 8, 3, 15, 32, 20, 418203117, time.UTC)
	demoLastObserved  = time.Date(2026, 8, 12, 13, 24, 58, 730916254, time.UTC)
	demoStart         = time.Date(2026, 8, 3, 9, 7, 41, 250000000, time.UTC)
	demoEnd           = time.Date(2026, 8, 12, 17, 0, 0, 0, time.UTC)
)

// Reference figures (spec, "Sampled input shapes").
const (
	refSubagents     = 253
	refSessions      = 38 // sessions with at least one subagent row
	refTurns         = 127
	refAsync         = 190
	refCompleted     = 57
	refCompletedNoMd = 8 // completed rows without a model (57 - 49)
	refStarted       = 5
	refAbsent        = 1
)

// refFanout is the per-turn fan-out distribution: fan-out → number of turns.
var refFanout = map[int]int{1: 65, 2: 12, 3: 42, 4: 5, 5: 2, 8: 1}

func newSub() subSpec { return subSpec{parent: -1, twinOf: -1} }

func subTurn(k int) turnSpec {
	t := turnSpec{subs: make([]subSpec, k)}
	for i := range t.subs {
		t.subs[i] = newSub()
	}
	return t
}

type demoPlan struct {
	specs       []*sessionSpec
	firstAnchor int // session whose earliest subagent observation is pinned to demoFirstObserved
	lastAnchor  int // session whose latest subagent observation is pinned to demoLastObserved
}

// slotRef addresses one subagent slot of the plan.
type slotRef struct {
	s    *sessionSpec
	turn int
	slot int
	live bool
}

func (x slotRef) spec() *subSpec { return &x.s.turns[x.turn].subs[x.slot] }

func planDemo(r *rng, withNull bool) *demoPlan {
	const minute = time.Minute
	// Fan-out values of the 127 subagent turns.
	var fan []int
	for _, k := range []int{1, 2, 3, 4, 5, 8} {
		for i := 0; i < refFanout[k]; i++ {
			fan = append(fan, k)
		}
	}
	shuffle(r, fan)
	take := func(v int) int { // remove one occurrence of v
		for i, x := range fan {
			if x == v {
				fan = append(fan[:i], fan[i+1:]...)
				return v
			}
		}
		panic("storegen: reference fan-out exhausted")
	}
	next := func() int { v := fan[0]; fan = fan[1:]; return v }

	withZeros := func(turns []turnSpec, n int) []turnSpec {
		for i := 0; i < n; i++ {
			z := turnSpec{tools: 1, closing: true}
			pos := r.intn(len(turns) + 1)
			turns = append(turns, turnSpec{})
			copy(turns[pos+1:], turns[pos:])
			turns[pos] = z
		}
		return turns
	}

	// OpenCode sessions: every row is 'started' (child session, no agent id).
	ocA := &sessionSpec{agent: agentOpenCode, turns: []turnSpec{subTurn(take(1)), {tools: 1, closing: true}, subTurn(take(1))}}
	ocB := &sessionSpec{agent: agentOpenCode, turns: []turnSpec{subTurn(take(1)), {tools: 2, closing: true}, subTurn(take(2))}}

	// The straddling session: starts before capture_since, continues after it.
	x := &sessionSpec{agent: agentClaude}
	x.turns = []turnSpec{subTurn(next()), {tools: 1, closing: true}, subTurn(next())}
	post := subTurn(next())
	post.startAt = demoCapture.Add(37*minute + 12500*time.Millisecond)
	x.turns = append(x.turns, post, turnSpec{tools: 2, closing: true}, subTurn(next()))

	// 15 Claude sessions before capture_since, 20 after; 119 turns between them.
	mix, err := newExactMix(35, int64(len(fan)), 1, []int64{0, 4, 8, 10, 9, 6, 3, 1})
	if err != nil {
		panic(err)
	}
	var pre, postS []*sessionSpec
	for i := 0; i < 35; i++ {
		s := &sessionSpec{agent: agentClaude}
		n := mix.draw(r)
		for j := 0; j < n; j++ {
			s.turns = append(s.turns, subTurn(next()))
		}
		if i < 15 {
			pre = append(pre, s)
		} else {
			postS = append(postS, s)
		}
	}

	// Collision (AC-32): a live turn (not the session's first) with >= 2 slots;
	// slot 1 re-reports slot 0's tool_call_id from the previous execution.
	var cands []slotRef
	for _, s := range postS {
		for ti := 1; ti < len(s.turns); ti++ {
			if len(s.turns[ti].subs) >= 2 {
				cands = append(cands, slotRef{s: s, turn: ti})
			}
		}
	}
	col := pick(r, cands)
	col.s.turns[col.turn].newExec = true
	col.s.turns[col.turn].subs[0].status = stCompleted
	col.s.turns[col.turn].subs[1] = subSpec{status: stCompleted, parent: -1, twinOf: 0}
	// Nesting: one backfilled turn where slot 1 was spawned by slot 0.
	cands = cands[:0]
	for _, s := range pre {
		for ti := range s.turns {
			if len(s.turns[ti].subs) >= 2 {
				cands = append(cands, slotRef{s: s, turn: ti})
			}
		}
	}
	nest := pick(r, cands)
	nest.s.turns[nest.turn].subs[0].status = stCompleted
	nest.s.turns[nest.turn].subs[1] = subSpec{status: stCompleted, parent: 0, twinOf: -1}
	reserved := func(ref slotRef) bool {
		return (ref.s == col.s && ref.turn == col.turn && ref.slot < 2) ||
			(ref.s == nest.s && ref.turn == nest.turn && ref.slot < 2)
	}

	// Statuses of the remaining Claude slots: 190 async, 53 completed, 1 absent.
	claude := append(append(append([]*sessionSpec{}, pre...), x), postS...)
	var free []slotRef
	for _, s := range claude {
		for ti := range s.turns {
			for si := range s.turns[ti].subs {
				ref := slotRef{s: s, turn: ti, slot: si, live: s != x && !containsSpec(pre, s) || (s == x && ti >= 3)}
				if !reserved(ref) {
					free = append(free, ref)
				}
			}
		}
	}
	statuses := make([]subStatus, 0, len(free))
	for i := 0; i < refAsync; i++ {
		statuses = append(statuses, stAsync)
	}
	for i := 0; i < refCompleted-4; i++ {
		statuses = append(statuses, stCompleted)
	}
	for i := 0; i < refAbsent; i++ {
		statuses = append(statuses, stAbsent)
	}
	if len(statuses) != len(free) {
		panic("storegen: reference status arithmetic")
	}
	shuffle(r, statuses)
	var completed, liveAsync []slotRef
	for i, ref := range free {
		sp := ref.spec()
		sp.status = statuses[i]
		switch sp.status {
		case stCompleted:
			completed = append(completed, ref)
		case stAbsent:
			sp.typeNull = true
		case stAsync:
			if ref.live {
				liveAsync = append(liveAsync, ref)
			}
		}
	}
	shuffle(r, completed)
	for i := 0; i < refCompletedNoMd; i++ {
		completed[i].spec().noModel = true
	}
	completed[refCompletedNoMd].spec().toolUseZero = true
	completed[refCompletedNoMd+1].spec().toolUseZero = true
	shuffle(r, liveAsync)
	for i := 0; i < 3; i++ {
		liveAsync[i].spec().unknownExec = true
	}
	// OpenCode rows: 'started'; two of the five report an empty subagent_type.
	var oc []slotRef
	for _, s := range []*sessionSpec{ocA, ocB} {
		for ti := range s.turns {
			for si := range s.turns[ti].subs {
				s.turns[ti].subs[si].status = stStarted
				oc = append(oc, slotRef{s: s, turn: ti, slot: si})
			}
		}
	}
	shuffle(r, oc)
	oc[0].spec().typeNull = true
	oc[1].spec().typeNull = true

	// Turns without subagents inside subagent sessions.
	for _, s := range append(append([]*sessionSpec{}, pre...), postS...) {
		if r.chance(1, 4) {
			s.turns = withZeros(s.turns, 1)
		}
	}
	// Per-turn filler, gaps and executions.
	for _, s := range append(append([]*sessionSpec{ocA, ocB, x}, pre...), postS...) {
		for ti := range s.turns {
			t := &s.turns[ti]
			if len(t.subs) > 0 {
				if r.chance(1, 5) {
					t.tools = 1
				}
				t.closing = r.chance(1, 4)
			}
			t.gap = r.dur(3*minute, 35*minute)
			if ti > 0 && r.chance(1, 3) {
				t.newExec = true
			}
		}
	}
	// One agent message whose metadata is the literal text 'null' (live side).
	nullText := "null"
	ns := pick(r, postS)
	nt := r.intn(len(ns.turns))
	if withNull {
		ns.turns[nt].openMeta = &nullText
	}

	// Sessions without any subagent row: before and after capture_since.
	zero := func(n int) *sessionSpec {
		s := &sessionSpec{agent: agentClaude}
		for i := 0; i < n; i++ {
			s.turns = append(s.turns, turnSpec{tools: 1, closing: true, gap: r.dur(3*minute, 35*minute)})
		}
		return s
	}
	z := make([]*sessionSpec, 8)
	for i := range z {
		z[i] = zero(r.between(1, 2))
	}
	z[7].turns[len(z[7].turns)-1].incomplete = true

	// States.
	for _, s := range append(append([]*sessionSpec{ocA, x}, pre...), z[0], z[1], z[2]) {
		s.state = "COMPLETED"
	}
	pre[r.intn(len(pre))].state = "CANCELLED"
	for _, s := range append(append([]*sessionSpec{}, postS...), z[3], z[4], z[5]) {
		s.state = "COMPLETED"
	}
	ocB.state = "WAITING_FOR_INPUT"
	z[6].state = "WAITING_FOR_INPUT"
	z[7].state = "RUNNING"

	// Time order.
	dp := &demoPlan{}
	z[0].start = demoStart
	first := pre[0]
	first.start = time.Date(2026, 8, 3, 15, 30, 0, 0, time.UTC) // re-anchored later
	middle := append(append([]*sessionSpec{}, pre[1:]...), ocA, z[1], z[2])
	shuffle(r, middle)
	spread(r, middle, time.Date(2026, 8, 3, 20, 0, 0, 0, time.UTC), time.Date(2026, 8, 7, 1, 30, 0, 0, time.UTC))
	x.start = time.Date(2026, 8, 7, 8, 41, 15, 500000000, time.UTC)
	late := append(append([]*sessionSpec{}, postS...), ocB, z[3], z[4])
	shuffle(r, late)
	for i := len(late) - 1; i >= 0; i-- { // the last one must hold subagents
		if late[i].agent == agentClaude && len(late[i].turns) > 0 && containsSpec(postS, late[i]) {
			late[i], late[len(late)-1] = late[len(late)-1], late[i]
			break
		}
	}
	last := late[len(late)-1]
	for i := range last.turns {
		last.turns[i].incomplete = false
	}
	last.state = "COMPLETED"
	spread(r, late[:len(late)-1], time.Date(2026, 8, 7, 13, 5, 0, 0, time.UTC), time.Date(2026, 8, 12, 2, 30, 0, 0, time.UTC))
	last.start = time.Date(2026, 8, 12, 9, 0, 0, 0, time.UTC) // re-anchored later
	z[5].start = time.Date(2026, 8, 12, 14, 12, 7, 500000000, time.UTC)
	z[6].start = time.Date(2026, 8, 12, 15, 3, 44, 0, time.UTC)
	z[7].start = time.Date(2026, 8, 12, 16, 41, 2, 0, time.UTC)

	dp.specs = append(dp.specs, z[0], first)
	dp.firstAnchor = 1
	dp.specs = append(dp.specs, middle...)
	dp.specs = append(dp.specs, x)
	dp.specs = append(dp.specs, late...)
	dp.lastAnchor = len(dp.specs) - 1
	dp.specs = append(dp.specs, z[5], z[6], z[7])

	// Steps and titles.
	titles := append([]string{}, taskTitles...)
	shuffle(r, titles)
	for i, s := range dp.specs {
		s.title = titles[i%len(titles)]
		s.step = stepFor(r, s.state)
	}
	return dp
}

func containsSpec(xs []*sessionSpec, s *sessionSpec) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// spread assigns start times evenly between from and to, with jitter.
func spread(r *rng, ss []*sessionSpec, from, to time.Time) {
	if len(ss) == 0 {
		return
	}
	step := to.Sub(from) / time.Duration(len(ss))
	for i, s := range ss {
		s.start = from.Add(step*time.Duration(i) + r.dur(0, step/3))
	}
}

// stepFor places a task on the board consistently with its session state.
func stepFor(r *rng, state string) int {
	switch state {
	case "RUNNING":
		return 1
	case "WAITING_FOR_INPUT":
		return 1 + r.intn(2) // In Progress or Review
	case "CANCELLED":
		return 0
	default:
		switch x := r.intn(10); {
		case x < 5:
			return 3 // Done
		case x < 9:
			return 2 // Review
		default:
			return 0 // Backlog
		}
	}
}

// Totals of the reference plan (outputs of planDemo with DemoOptions' seed,
// recorded here so DemoOptions documents them; the tests re-derive them).
const (
	demoSessions = 46
	demoTurns    = 149
	demoMessages = 670
	demoPageSize = 1024
)
