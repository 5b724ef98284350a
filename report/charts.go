package report

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Chart builders: what each chart shows, decided here from the warehouse's
// rows (which values are exact, lower bounds, unknown or small samples),
// then drawn by plots.go.

// Which disclosure rules apply to which chart; a rule no chart names
// applies to the installation as a whole (the Disclosures section says so).
var (
	boundaryRules = []string{"feature_absent", "no_capture_boundary", "key_unparseable", "capture_boundary",
		"second_precision_boundary", "capture_boundary_ambiguous_activity", "partial_key_pair", "backfill_provenance",
		"live_backfill_overlap", "rows_beyond_tool_calls", "writer_shortfall_turns", "messages_lower_bound", "unattributed_rows", "deletions", "stale_data"}
	cardRules = []string{"feature_absent", "no_capture_boundary", "key_unparseable", "capture_boundary", "second_precision_boundary",
		"capture_boundary_ambiguous_activity", "backfill_provenance", "rows_beyond_tool_calls", "writer_shortfall_turns", "messages_lower_bound", "unattributed_rows", "deletions", "stale_data"}
	usageRules  = []string{"feature_absent", "unmeasured_usage", "backfill_provenance", "live_backfill_overlap", "rejects", "deletions", "stale_data"}
	healthRules = []string{"feature_absent", "no_capture_boundary", "key_unparseable", "writer_health", "writer_shortfall_turns", "rows_beyond_tool_calls", "activation_key_changed", "stale_data"}
)

// fanoutCap is the last k with a slot of its own; larger fan-outs share a
// "≥ fanoutCap" slot, so slots stay wide enough to read.
const fanoutCap = 40

func fanoutChart(in *Installation, id string, missing bool) Chart {
	if missing {
		return Chart{ID: id, Title: "Fan-out distribution: turns by subagents per turn", reading: []string{"read-exact"}, rules: boundaryRules,
			Caption: "This warehouse has no fanout_by_turn view: run kandev-extract again (the fan-out is not shown, which is not a fan-out of zero)."}
	}
	exact, lower := map[int64]int64{}, map[int64]int64{}
	var nExact, nLower, nUnknown, lowerBackfillOnly, lowerMixed, exactBackfill int64
	other := map[string]int64{}
	maxK := int64(0)
	for _, b := range in.Fanout {
		switch {
		case b.Completeness == "complete" && b.K != nil:
			exact[*b.K] += b.Turns
			nExact += b.Turns
			exactBackfill += b.BackfillOnly + b.Mixed
			maxK = max(maxK, *b.K)
		case b.Completeness == "lower_bound" && b.K != nil:
			lower[*b.K] += b.Turns
			nLower += b.Turns
			lowerBackfillOnly += b.BackfillOnly
			lowerMixed += b.Mixed
			maxK = max(maxK, *b.K)
		case b.Completeness == "unknown":
			nUnknown += b.Turns
		default:
			other[b.Completeness] += b.Turns
		}
	}
	last := min(maxK, fanoutCap)
	slots := make([]fanSlot, 0, last+1)
	for k := int64(0); k <= last; k++ {
		slots = append(slots, fanSlot{k: k, label: fmt.Sprint(k)})
	}
	pooled := maxK > fanoutCap
	if pooled {
		slots[last].label = fmt.Sprintf("≥%d", fanoutCap)
	}
	for k, v := range exact {
		slots[min(k, last)].exact += v
	}
	for k, v := range lower {
		slots[min(k, last)].lower += v
	}
	title := "Fan-out distribution: turns by subagents per turn"
	var d strings.Builder
	fmt.Fprintf(&d, "Exact distribution over %d complete turns:", nExact)
	for _, sl := range slots {
		fmt.Fprintf(&d, " %s: %d;", sl.label, sl.exact)
	}
	fmt.Fprintf(&d, " Lower bounds over %d turns, at least k subagents:", nLower)
	for _, sl := range slots {
		if sl.lower > 0 {
			fmt.Fprintf(&d, " ≥%s: %d;", strings.TrimPrefix(sl.label, "≥"), sl.lower)
		}
	}
	fmt.Fprintf(&d, " Unknown fan-out (not zero): %d turns.", nUnknown)
	var caption string
	if nExact > 0 {
		caption = fmt.Sprintf("Top: the exact distribution, over the %s complete turns only (proven complete: started at or after capture_since, no writer shortfall, no more rows than tool calls); every k from 0 to the largest has its slot, and an empty slot is a true zero. ", inum(nExact))
	} else {
		caption = "Top: no turn is proven complete, so there is no exact distribution — not a distribution of zeros. "
	}
	if nLower > 0 {
		caption += fmt.Sprintf("Bottom: the %s lower-bound turns (subagents known from rows or messages, but completeness not proven: started before capture_since, or with a writer shortfall or more rows than tool calls), each at its lower bound k — the least it had (fanout_lower_bound: the distinct tool calls of its rows and messages, where the fanout_distribution view counts rows): it may belong at that k or further right, so these are never added to the exact columns. ", inum(nLower))
	} else {
		caption += "Bottom: no lower-bound turn. "
	}
	if nUnknown > 0 {
		caption += fmt.Sprintf("Right: the %s turns whose fan-out is unknown (no row and no message: no evidence), counted apart and never as 0.", inum(nUnknown))
	} else {
		caption += "Right: no turn has an unknown fan-out."
	}
	if lowerBackfillOnly+lowerMixed > 0 {
		caption += fmt.Sprintf(" Of the lower-bound turns, %s have backfill rows only and %s both backfill and live rows (backfill is not like-for-like with live).", inum(lowerBackfillOnly), inum(lowerMixed))
	}
	if pooled {
		caption += fmt.Sprintf(" The last slot pools every turn with %d or more subagents (the largest is %d).", fanoutCap, maxK)
	}
	for _, c := range sortedKeys(other) {
		caption += fmt.Sprintf(" %s turns with completeness %q are not drawn.", inum(other[c]), c)
	}
	if nExact > 0 && nExact < SmallSample || nLower > 0 && nLower < SmallSample {
		caption += fmt.Sprintf(" Hatched columns: fewer than %d turns in the panel, a small sample.", SmallSample)
	}
	tab := &Table{Head: []string{"k (subagents)", "complete turns (exactly k)", "lower-bound turns (at least k)"}}
	for _, sl := range slots {
		tab.Rows = append(tab.Rows, []string{sl.label, inum(sl.exact), inum(sl.lower)})
	}
	tab.Rows = append(tab.Rows, []string{"unknown (not 0)", "", inum(nUnknown) + " turns, fan-out unknown"})
	return Chart{ID: id, Title: title, Caption: caption, Table: tab,
		Legend: []LegendItem{{"sw-exact", "exact: complete turns with exactly k subagents"},
			{"sw-lower", "lower bound: k or more (▸ may belong further right)"},
			{"sw-unknown", "unknown fan-out: counted apart, not 0"}, {"sw-small", "small sample (n < 10)"}},
		reading: []string{"read-exact", "read-lower", "read-unknown", "read-small", "read-backfill"},
		rules:   boundaryRules,
		SVG:     fanoutPlot(id+"-svg", title+" — installation "+in.ID, d.String(), slots, nExact, nLower, nUnknown)}
}

// pickGrain is the first grain of order with at most limit periods.
func pickGrain(counts map[string]int, order []string, limit int) string {
	for _, g := range order {
		if counts[g] > 0 && counts[g] <= limit {
			return g
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		if counts[order[i]] > 0 {
			return order[i]
		}
	}
	return ""
}

func periodLabel(grain string, t time.Time) string {
	if grain == "month" {
		return t.UTC().Format("2006-01")
	}
	return t.UTC().Format("2006-01-02")
}

func day(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func trendChart(in *Installation, id string, missing bool) Chart {
	title := "Fan-out over time"
	c := Chart{ID: id, Title: title, reading: []string{"read-exact", "read-lower", "read-unknown", "read-small", "read-period"}, rules: boundaryRules,
		Legend: []LegendItem{{"sw-exact", "complete turns (their count is the n of the average)"}, {"sw-lowerflat", "lower-bound turns"},
			{"sw-unknown", "unknown-fan-out turns"}, {"sw-partial", "partial period"}, {"sw-gap", "after the last turn, up to the snapshot: no data"},
			{"sw-point", "average exact fan-out"}, {"sw-hollow", "average over fewer than 10 complete turns"}}}
	if missing {
		c.Caption = "This warehouse has no fanout_by_period view (it was built by an older kandev-extract): run kandev-extract again for the trend."
		return c
	}
	counts := map[string]int{}
	for _, p := range in.Periods {
		counts[p.Grain]++
	}
	grain := pickGrain(counts, []string{"week", "month"}, 60)
	if grain == "" {
		c.Caption = "No turn in the current data: there is no trend to draw (not a trend of zeros)."
		c.Legend = nil
		return c
	}
	var slots []trendSlot
	var lastEnd time.Time
	tab := &Table{Head: []string{grain + " starting", "partial", "turns", "complete", "lower bound", "unknown", "avg exact fan-out (complete turns)"}}
	partials := 0
	for _, p := range in.Periods {
		if p.Grain != grain {
			continue
		}
		lab := periodLabel(grain, p.Start)
		slots = append(slots, trendSlot{label: lab, tip: grain + " of " + lab, partial: p.Partial, complete: p.Complete, lowerBound: p.LowerBound, unk: p.Unk, avg: p.AvgComplete})
		lastEnd = p.End
		avg := "none (no complete turn)"
		if p.AvgComplete != nil {
			avg = num(*p.AvgComplete)
			if p.Complete < SmallSample {
				avg += fmt.Sprintf(" (n=%d, small sample)", p.Complete)
			}
		}
		part := ""
		if p.Partial {
			part = "partial"
			partials++
		}
		tab.Rows = append(tab.Rows, []string{lab, part, inum(p.Turns), inum(p.Complete), inum(p.LowerBound), inum(p.Unk), avg})
	}
	rng := ""
	if r := in.Range; r != nil {
		rng = fmt.Sprintf(" The data covers turns started from %s to %s (%s turns); its snapshot was taken %s.", day(r.FirstTurn), day(r.LastTurn), inum(r.Turns), day(&r.SnapshotAt))
		if r.SnapshotAt.After(lastEnd) && r.LastTurn != nil {
			slots = append(slots, trendSlot{label: "→ " + r.SnapshotAt.UTC().Format("2006-01-02"), gap: true,
				tip: fmt.Sprintf("no turn in the data from %s up to the snapshot %s", day(r.LastTurn), day(&r.SnapshotAt))})
			rng += fmt.Sprintf(" Hatched at the right: no turn started in the %s between the last one and the snapshot, so no %s after it is listed: no data there, not a measured drop to zero.",
				span(r.SnapshotAt.Sub(*r.LastTurn)), grain)
		}
	}
	c.Caption = fmt.Sprintf("Per UTC %s (weeks start on Monday), by the %s each turn started in.", grain, grain) + rng +
		fmt.Sprintf(" A dashed outline marks a partial %s (the data begins inside it, or the snapshot was taken before it ended: its counts cover part of it only); here %s.", grain, plural(partials, grain)) +
		" The average is over complete turns only; a hollow point is an average over fewer than 10 of them, and a period without a complete turn has no point (unknown, not zero)."
	c.Table = tab
	desc := fmt.Sprintf("Turns per %s by completeness over %d %ss, and the average exact fan-out per %s.%s", grain, len(tab.Rows), grain, grain, rng)
	c.SVG = trendPlot(id+"-svg", title+" — installation "+in.ID, desc, grain, slots)
	return c
}

func contextsChart(in *Installation, id string, missing bool) Chart {
	title := "Contexts per card by workflow step"
	c := Chart{ID: id, Title: title, reading: []string{"read-exact", "read-lower", "read-unknown", "read-small", "read-backfill"}, rules: cardRules,
		Legend: []LegendItem{{"sw-exact", "sessions per card"}, {"sw-contexts", "contexts per card, exact"}, {"sw-lowerflat", "contexts per card observed: a lower bound (▸ could be more)"},
			{"sw-small", "average over fewer than 10 cards"}}}
	if missing {
		c.Caption = "This warehouse has no contexts_per_card view: run kandev-extract again."
		return c
	}
	var complete, all []hgroup
	var cards, nComplete, nLower, nUnknown, live, backfill int64
	tab := &Table{Head: []string{"step", "cards", "complete cards", "sessions/card (complete)", "contexts/card (complete, exact)", "sessions/card (all)", "contexts/card observed (all, lower bound)", "lower-bound cards", "unknown cards"}}
	for _, st := range in.Cards {
		cards += st.Cards
		nComplete += st.Complete
		nLower += st.LowerBound
		nUnknown += st.Unknown
		live += st.SubagentsLive
		backfill += st.SubagentsBackfill
		g := hgroup{cat: st.Name}
		sc, cc := "unknown", "unknown"
		if st.ContextsComplete != nil {
			sc, cc = num(*st.SessionsComplete), num(*st.ContextsComplete)
			g.bars = []hbar{
				{series: "sessions-complete", color: colComplete, value: st.SessionsComplete, label: fmt.Sprintf("%s · n=%s", numOf(*st.SessionsComplete, "session", "sessions"), inum(st.Complete)), n: st.Complete, avg: true},
				{series: "contexts-complete", color: colContexts, value: st.ContextsComplete, label: fmt.Sprintf("%s · n=%s", numOf(*st.ContextsComplete, "context", "contexts"), inum(st.Complete)), n: st.Complete, avg: true},
			}
		} else {
			g.bars = []hbar{{note: fmt.Sprintf("no complete card (of %s): exact contexts per card unknown, not 0", inum(st.Cards))}}
		}
		complete = append(complete, g)
		sa, ca := st.SessionsAll, st.ContextsObservedAll
		all = append(all, hgroup{cat: st.Name, bars: []hbar{
			{series: "sessions-all", color: colComplete, value: &sa, label: fmt.Sprintf("%s · n=%s", numOf(sa, "session", "sessions"), inum(st.Cards)), n: st.Cards, avg: true},
			{series: "contexts-observed", color: colLowerBound, value: &ca, label: fmt.Sprintf("≥ %s · n=%s", numOf(ca, "context", "contexts"), inum(st.Cards)), n: st.Cards, avg: true, lower: true},
		}})
		tab.Rows = append(tab.Rows, []string{st.Name, inum(st.Cards), inum(st.Complete), sc, cc, num(sa), "≥ " + num(ca), inum(st.LowerBound), inum(st.Unknown)})
	}
	if len(in.Cards) == 0 {
		c.Caption = "No card in the current data."
		c.Legend = nil
		return c
	}
	panels := []hpanel{
		{title: fmt.Sprintf("Complete cards only (%s of %s): sessions and contexts per card over the same cards, exact", inum(nComplete), inum(cards)), groups: complete},
	}
	if nLower+nUnknown == 0 {
		c.Caption = fmt.Sprintf("Per workflow step (each card's current step), over the same cards: all %s cards have complete fan-out, so contexts per card is exact for every step. "+
			"n on each bar is its number of cards; hatched bars average fewer than %d. "+
			"Sessions per card counts task_sessions rows only, as before subagents were recorded; contexts = sessions + subagent contexts (%s live, %s backfill).",
			inum(cards), SmallSample, inum(live), inum(backfill))
		c.Legend = c.Legend[:2:2]
		c.Legend = append(c.Legend, LegendItem{"sw-small", "average over fewer than 10 cards"})
	} else {
		panels = append(panels, hpanel{title: fmt.Sprintf("All %s cards: contexts observed are a lower bound (%s cards lower bound, %s unknown)", inum(cards), inum(nLower), inum(nUnknown)), groups: all})
	}
	if nLower+nUnknown > 0 {
		c.Caption = fmt.Sprintf("Per workflow step (each card's current step). Each panel compares averages over the same cards: the top one over the %s cards whose every session has complete fan-out, where contexts per card is exact; "+
			"the bottom one over all %s cards, where contexts per card is only a lower bound, because %s cards have lower-bound and %s unknown subagent counts. n on each bar is its number of cards; hatched bars average fewer than %d. "+
			"Sessions per card counts task_sessions rows only, as before subagents were recorded; contexts = sessions + subagent contexts (%s live, %s backfill).",
			inum(nComplete), inum(cards), inum(nLower), inum(nUnknown), SmallSample, inum(live), inum(backfill))
	}
	c.Table = tab
	desc := fmt.Sprintf("Horizontal bars for %d workflow steps in two panels: over the %d complete cards (exact) and over all %d cards (contexts a lower bound).", len(in.Cards), nComplete, cards)
	for _, st := range in.Cards {
		if st.ContextsComplete != nil {
			desc += fmt.Sprintf(" %s: %s contexts per complete card (n=%d);", st.Name, num(*st.ContextsComplete), st.Complete)
		} else {
			desc += fmt.Sprintf(" %s: no complete card;", st.Name)
		}
	}
	c.SVG = hbarsPlot(id+"-svg", title+" — installation "+in.ID, desc, "average per card", panels)
	return c
}

// maxTypes is how many subagent types get a row of their own; the rest
// share one.
const maxTypes = 20

// usageTypes groups usage rows by subagent type (live, backfill), most
// invocations first, the tail beyond maxTypes pooled into one row.
func usageTypes(in *Installation) ([]string, map[string][2]*UsageRow, bool) {
	m := map[string][2]*UsageRow{}
	total := map[string]int64{}
	var types []string
	for i := range in.Usage {
		u := &in.Usage[i]
		pair, ok := m[u.Type]
		if !ok {
			types = append(types, u.Type)
		}
		switch u.Source {
		case "live":
			pair[0] = u
		case "backfill":
			pair[1] = u
		default:
			continue
		}
		m[u.Type] = pair
		total[u.Type] += u.Subagents
	}
	sort.SliceStable(types, func(a, b int) bool { return total[types[a]] > total[types[b]] })
	if len(types) <= maxTypes {
		return types, m, false
	}
	rest := types[maxTypes-1:]
	name := fmt.Sprintf("(%d other types)", len(rest))
	var pooled [2]*UsageRow
	for j := range 2 {
		var sum float64
		var p UsageRow
		for _, t := range rest {
			u := m[t][j]
			if u == nil {
				continue
			}
			p.Subagents += u.Subagents
			p.Measured += u.Measured
			p.Unmeasured += u.Unmeasured
			p.WithTokens += u.WithTokens
			if u.AvgTokens != nil {
				sum += *u.AvgTokens * float64(u.WithTokens)
			}
		}
		if p.Subagents > 0 {
			if p.WithTokens > 0 {
				avg := sum / float64(p.WithTokens)
				p.AvgTokens = &avg
			}
			pooled[j] = &p
		}
	}
	m[name] = pooled
	return append(types[:maxTypes-1:maxTypes-1], name), m, true
}

var sources = [2]struct{ name, color string }{{"live", colComplete}, {"backfill", colLowerBound}}

func usageCountChart(in *Installation, id string) Chart {
	title := "Subagent invocations by type and source"
	types, m, pooled := usageTypes(in)
	c := Chart{ID: id, Title: title, reading: []string{"read-measured", "read-backfill"}, rules: usageRules,
		Legend: []LegendItem{{"sw-exact", "live rows"}, {"sw-lowerflat", "backfill rows (recovered from message metadata; not like-for-like)"}}}
	if len(types) == 0 {
		c.Caption = "No subagent row in the current data."
		if !in.HasSubagentTable {
			c.Caption = "The store has no subagent table: invocations are unknown, not zero."
		}
		c.Legend = nil
		return c
	}
	groups := make([]hgroup, len(types))
	var measured, unmeasured int64
	tab := &Table{Head: []string{"subagent type", "source", "invocations", "with usage", "without usage"}}
	for i, t := range types {
		groups[i].cat = t
		for j, u := range m[t] {
			if u == nil {
				groups[i].bars = append(groups[i].bars, hbar{note: "no " + sources[j].name + " rows"})
				continue
			}
			v := float64(u.Subagents)
			groups[i].bars = append(groups[i].bars, hbar{series: sources[j].name, color: sources[j].color, value: &v,
				label: fmt.Sprintf("%s (%s with usage)", inum(u.Subagents), inum(u.Measured)), n: u.Subagents})
			measured += u.Measured
			unmeasured += u.Unmeasured
			tab.Rows = append(tab.Rows, []string{t, sources[j].name, inum(u.Subagents), inum(u.Measured), inum(u.Unmeasured)})
		}
	}
	c.Caption = fmt.Sprintf("Invocations per subagent type, live and backfill apart (backfill rows were recovered from message metadata and are not like-for-like). "+
		"%s rows reported usage and %s reported none (e.g. async dispatches): they are counted here, but never as zero usage.", inum(measured), inum(unmeasured))
	if pooled {
		c.Caption += fmt.Sprintf(" The %d most invoked types have a row each; the rest share the last one.", maxTypes-1)
	}
	c.Table = tab
	c.SVG = hbarsPlot(id+"-svg", title+" — installation "+in.ID, fmt.Sprintf("Horizontal bars for %d subagent types, live and backfill apart.", len(types)), "subagent invocations",
		[]hpanel{{title: "Invocations (counts, not samples)", groups: groups}})
	return c
}

func usageTokensChart(in *Installation, id string) Chart {
	title := "Average total tokens per invocation, over measured rows only"
	types, m, _ := usageTypes(in)
	c := Chart{ID: id, Title: title, reading: []string{"read-measured", "read-small", "read-backfill"}, rules: usageRules,
		Legend: []LegendItem{{"sw-exact", "live rows"}, {"sw-lowerflat", "backfill rows"}, {"sw-small", "average over fewer than 10 rows"}}}
	if len(types) == 0 {
		c.Caption = "No subagent row in the current data: no average (not zero)."
		if !in.HasSubagentTable {
			c.Caption = "The store has no subagent table: usage is unknown, not zero."
		}
		c.Legend = nil
		return c
	}
	groups := make([]hgroup, len(types))
	tab := &Table{Head: []string{"subagent type", "source", "average total tokens", "rows with tokens (n)", "rows"}}
	small := 0
	for i, t := range types {
		groups[i].cat = t
		for j, u := range m[t] {
			b := hbar{series: sources[j].name, color: sources[j].color}
			switch {
			case u == nil:
				b.note = "no " + sources[j].name + " rows"
			case u.AvgTokens == nil:
				b.note = fmt.Sprintf("no %s row reported tokens (%s rows): unknown, not 0", sources[j].name, inum(u.Subagents))
				tab.Rows = append(tab.Rows, []string{t, sources[j].name, "unknown", "0", inum(u.Subagents)})
			default:
				b.value, b.n, b.avg = u.AvgTokens, u.WithTokens, true
				b.label = fmt.Sprintf("%s · n=%s of %s", num(*u.AvgTokens), inum(u.WithTokens), inum(u.Subagents))
				if u.WithTokens < SmallSample {
					b.label += " (small)"
					small++
				}
				tab.Rows = append(tab.Rows, []string{t, sources[j].name, num(*u.AvgTokens), inum(u.WithTokens), inum(u.Subagents)})
			}
			groups[i].bars = append(groups[i].bars, b)
		}
	}
	c.Caption = fmt.Sprintf("Average total_tokens per invocation, over the rows that reported tokens only (n = those rows, of all rows of the type and source). "+
		"Unreported usage stays NULL and is never averaged in as 0; a type and source with no reporting row shows a note, not a bar. %d averages are over fewer than %d rows (hatched).", small, SmallSample)
	c.Table = tab
	c.SVG = hbarsPlot(id+"-svg", title+" — installation "+in.ID, fmt.Sprintf("Horizontal bars for %d subagent types: the average of total_tokens over the rows that reported it, live and backfill apart, each with its n.", len(types)),
		"average total tokens (measured rows)", []hpanel{{title: "Average over the rows that reported tokens (n shown)", groups: groups}})
	return c
}

func healthChart(in *Installation, id string, missing bool) Chart {
	title := "Writer health over time"
	c := Chart{ID: id, Title: title, reading: []string{"read-unknown", "read-norun"}, rules: healthRules,
		Legend: []LegendItem{{"sw-short", "worst shortfall of the period (the alarm when > 0)"}, {"sw-excess", "excess at the period's last run (attributed, not an alarm)"},
			{"sw-gap", "no run in the period: no evidence"}, {"sw-unknown", "runs that could not evaluate: not zero"}}}
	if missing {
		c.Caption = "This warehouse has no writer_health_by_period view (it was built by an older kandev-extract): run kandev-extract again."
		return c
	}
	counts := map[string]int{}
	for _, h := range in.Health {
		counts[h.Grain]++
	}
	grain := pickGrain(counts, []string{"day", "week", "month"}, 62)
	if grain == "" {
		c.Caption = "No retained run has a writer-health record."
		c.Legend = nil
		return c
	}
	var slots []healthSlot
	tab := &Table{Head: []string{grain, "runs", "evaluations", "last status", "worst shortfall", "last excess"}}
	noRun, notEval, last := 0, 0, ""
	opt := func(v *int64) string {
		if v == nil {
			return "not evaluated"
		}
		return inum(*v)
	}
	for _, h := range in.Health {
		if h.Grain != grain {
			continue
		}
		lab := periodLabel(grain, h.Start)
		sl := healthSlot{label: lab, tip: grain + " of " + lab, runs: h.Runs, evaluations: h.Evaluations, status: h.LastStatus}
		if h.Evaluations > 0 {
			sl.shortfall, sl.excess = h.MaxShortfall, h.Excess
		}
		switch {
		case h.Runs == 0:
			noRun++
		case h.Evaluations == 0:
			notEval++
		}
		if h.LastStatus != "" {
			last = h.LastStatus
		}
		slots = append(slots, sl)
		status := h.LastStatus
		if h.Runs == 0 {
			status = "no run"
		}
		tab.Rows = append(tab.Rows, []string{lab, inum(h.Runs), inum(h.Evaluations), status, opt(sl.shortfall), opt(sl.excess)})
	}
	c.Caption = fmt.Sprintf("Per UTC %s, from the first to the last retained run: the worst shortfall of the period's runs (subagent-task messages since capture_since without a subagent row: the alarm) "+
		"and the excess at its last run (rows without a message: attributed). The two are separate set differences, never netted. "+
		"%s had no run (hatched: no evidence either way, not a healthy writer); %s had runs that could not compare (grey, e.g. capture_since absent: not zero). Latest status: %s.",
		grain, plural(noRun, grain), plural(notEval, grain), orNone(last))
	c.Table = tab
	c.SVG = healthPlot(id+"-svg", title+" — installation "+in.ID, fmt.Sprintf("Points per %s over %d %ss; %d without a run, %d not evaluated; latest status %s.", grain, len(slots), grain, noRun, notEval, orNone(last)), grain, slots)
	return c
}

// span says how long d is in days (or hours under two days).
func span(d time.Duration) string {
	if h := d.Hours(); h < 48 {
		return fmt.Sprintf("%.0f hours", h)
	}
	return fmt.Sprintf("%.0f days", d.Hours()/24)
}

// plural is "1 week" or "3 weeks".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
