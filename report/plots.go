package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Plot renderers. Each takes what to draw, already decided by the chart
// builders in charts.go (which values are exact, lower bounds, unknown or
// small samples), and only lays it out.

// ---- fan-out distribution ---------------------------------------------------

// fanSlot is one bucket of the fan-out axis: k subagents (the last slot may
// pool k ≥ label's value).
type fanSlot struct {
	k            int64
	label        string // "3", or "≥40" for a pooled tail
	exact, lower int64
}

// fanoutPlot draws the exact distribution and the lower bounds as two
// panels over one continuous k axis and one count scale, and the unknown
// turns apart, in a box of their own.
func fanoutPlot(id, title, desc string, slots []fanSlot, nExact, nLower, nUnknown int64) template.HTML {
	maxV := float64(nUnknown)
	for _, sl := range slots {
		maxV = math.Max(maxV, math.Max(float64(sl.exact), float64(sl.lower)))
	}
	ticks := niceTicks(maxV)
	left := 34 + tickWidth(ticks)
	const unkW = 120.0
	// An empty panel keeps its title and says so, without an empty plot.
	hA, hB := 150.0, 150.0
	if nExact == 0 {
		hA = 40
	}
	if nLower == 0 {
		hB = 40
	}
	right := chartW - padR - unkW
	titleA := 16.0
	topA := titleA + 24
	botA := topA + hA
	titleB := botA + labelH + 22
	topB := titleB + 24
	botB := topB + hB
	h := botB + labelH + 30
	s := newSVG(id, title, desc, h)

	bw := (right - left) / float64(max(len(slots), 1))
	barW := math.Max(bw*0.72, 1)
	xs := make([]float64, len(slots))
	for i := range slots {
		xs[i] = left + float64(i)*bw + bw/2
	}
	panel := func(titleY, top, bot float64, head string, n int64, lower bool) {
		small := n > 0 && n < SmallSample
		if small {
			head += fmt.Sprintf(" · small sample (n < %d)", SmallSample)
		}
		s.text(left, titleY, "start", clipWidth(head, right-left), ` font-weight="bold"`)
		if n == 0 {
			what := "No complete turn: there is no exact distribution (not a distribution of zeros)."
			if lower {
				what = "No lower-bound turn."
			}
			s.line(left, bot, right, bot, colAxis)
			s.text(left+8, (top+bot)/2+4, "start", clipWidth(what, right-left-16), ` font-style="italic" fill="`+colMuted+`"`)
			return
		}
		y := s.yAxis(left, right, top, bot, maxV, ticks)
		color, series := colComplete, "exact"
		if lower {
			color, series = colLowerBound, "lower-bound"
		}
		fill := color
		extra := ""
		if small {
			fill = s.smallFill(color)
			extra = ` stroke="` + color + `" stroke-width="1"` + attr("small", "1")
		}
		labels := make([]string, len(slots))
		for i, sl := range slots {
			v := sl.exact
			lab := sl.label
			what := "exactly"
			if lower {
				v, lab, what = sl.lower, "≥"+strings.TrimPrefix(sl.label, "≥"), "at least"
			}
			if strings.HasPrefix(sl.label, "≥") {
				what = "at least"
			}
			if lower && sl.k == 0 && v == 0 {
				continue // a lower-bound turn has a row: "at least 0" is no slot
			}
			labels[i] = lab
			x := xs[i] - barW/2
			tip := fmt.Sprintf("%s turns with %s %s subagents", inum(v), what, strings.TrimPrefix(sl.label, "≥"))
			s.rect(x, y(float64(v)), barW, y(0)-y(float64(v)), fill, tip,
				` class="bar"`+attr("series", series, "k", fmt.Sprint(sl.k), "turns", fmt.Sprint(v))+extra)
			if lower && v > 0 {
				// "or more": a wedge at the column's top pointing right.
				yt := y(float64(v))
				fmt.Fprintf(&s.b, `<polygon class="atleast" points="%s,%s %s,%s %s,%s" fill="%s"/>`,
					f1(x+barW), f1(yt-4), f1(x+barW+6), f1(yt), f1(x+barW), f1(yt+4), colArrow)
			}
			if l := inum(v); len(slots) <= 16 && textWidth(l, fontPx) <= bw-2 {
				s.text(xs[i], y(float64(v))-4, "middle", l, ` fill="#333333"`)
			}
		}
		s.xLabels(xs, labels, bot+19, left-2, right)
	}
	panel(titleA, topA, botA, fmt.Sprintf("Exact fan-out: complete turns (n = %s)", inum(nExact)), nExact, false)
	panel(titleB, topB, botB, fmt.Sprintf("Lower bound: turns not proven complete, k or more subagents (n = %s)", inum(nLower)), nLower, true)

	// Unknown turns: their own box, on the same count scale, off the k axis.
	ux0 := right + 34
	s.text(ux0, titleA, "start", "Unknown", ` font-weight="bold"`)
	s.line(ux0, botA, chartW-padR, botA, colAxis)
	uw := 40.0
	ux := ux0 + (chartW-padR-ux0-uw)/2
	if nUnknown > 0 {
		scale := ticks[len(ticks)-1]
		if nExact == 0 { // the exact panel has no plot: the box gets its own
			scale = float64(nUnknown)
		}
		y := func(v float64) float64 { return botA - (botA-topA)*v/scale }
		s.rect(ux, y(float64(nUnknown)), uw, botA-y(float64(nUnknown)), s.unknownFill(), fmt.Sprintf("%s turns: fan-out unknown, not zero", inum(nUnknown)),
			` class="bar" stroke="`+colUnknown+`"`+attr("series", "unknown", "turns", fmt.Sprint(nUnknown)))
		s.text(ux+uw/2, y(float64(nUnknown))-4, "middle", inum(nUnknown), ` fill="#333333"`)
	} else {
		s.rect(ux, botA, uw, 0, "none", "no turn with unknown fan-out", ` class="bar"`+attr("series", "unknown", "turns", "0"))
		s.text(ux+uw/2, botA-6, "middle", "none")
	}
	s.text(ux+uw/2, botA+19, "middle", "k unknown", ` font-style="italic"`)

	s.text((left+right)/2, botB+labelH+20, "middle", "k: subagents per turn (exact above, at least k below)", ` font-weight="bold"`)
	s.yTitle(topA, botB, "turns")
	return s.html()
}

// ---- fan-out over time ------------------------------------------------------

// trendSlot is one period of a time axis.
type trendSlot struct {
	label                     string
	tip                       string
	partial, gap              bool // gap: after the data, up to the snapshot
	complete, lowerBound, unk int64
	avg                       *float64
}

// trendPlot draws turns per period stacked by completeness (every turn is
// counted once, so the stack is the period's total) and, below it, the
// average exact fan-out over the complete turns of each period.
func trendPlot(id, title, desc, grainWord string, slots []trendSlot) template.HTML {
	maxT, maxA := 0.0, 0.0
	for _, sl := range slots {
		maxT = math.Max(maxT, float64(sl.complete+sl.lowerBound+sl.unk))
		if sl.avg != nil {
			maxA = math.Max(maxA, *sl.avg)
		}
	}
	tT, tA := niceTicks(maxT), niceTicks(maxA)
	left := 34 + math.Max(tickWidth(tT), tickWidth(tA))
	right := chartW - float64(padR)
	const plotH = 140.0
	title1 := 16.0
	top1 := title1 + 14
	bot1 := top1 + plotH
	title2 := bot1 + 26
	top2 := title2 + 14
	bot2 := top2 + 110
	h := bot2 + labelH + 30
	s := newSVG(id, title, desc, h)
	// Periods share the axis evenly; the gap after the data (a marker, not
	// a period) is a narrow slot at the right.
	n, gapW := len(slots), 0.0
	if n > 0 && slots[n-1].gap {
		n--
		gapW = 34
	}
	bw := (right - left - gapW) / float64(max(n, 1))
	barW := math.Max(bw*0.72, 1)
	xs := make([]float64, len(slots))
	x0s := make([]float64, len(slots))
	ws := make([]float64, len(slots))
	for i := range slots {
		x0s[i], ws[i] = left+float64(i)*bw, bw
		if slots[i].gap {
			ws[i] = gapW
		}
		xs[i] = x0s[i] + ws[i]/2
	}
	s.text(left, title1, "start", clipWidth("Turns per "+grainWord+" by completeness (stacked: each turn once)", right-left), ` font-weight="bold"`)
	y := s.yAxis(left, right, top1, bot1, maxT, tT)
	for i, sl := range slots {
		x := xs[i] - barW/2
		if sl.gap {
			s.rect(x0s[i], top1, ws[i], bot1-top1, s.noRunFill(), sl.tip, ` class="gap"`)
			continue
		}
		acc := 0.0
		for _, p := range []struct {
			v      int64
			series string
			fill   string
		}{{sl.complete, "complete", colComplete}, {sl.lowerBound, "lower-bound", colLowerBound}, {sl.unk, "unknown", s.unknownFill()}} {
			if p.v == 0 {
				continue
			}
			s.rect(x, y(acc+float64(p.v)), barW, y(acc)-y(acc+float64(p.v)), p.fill, fmt.Sprintf("%s: %s %s turns", sl.tip, inum(p.v), strings.ReplaceAll(p.series, "-", " ")),
				` class="bar"`+attr("series", p.series, "period", sl.label, "turns", fmt.Sprint(p.v)))
			acc += float64(p.v)
		}
		if sl.partial {
			s.rect(left+float64(i)*bw+0.5, top1, bw-1, bot1-top1, "none", sl.tip+": partial period", ` class="partial" stroke="#777777" stroke-dasharray="3 2"`)
		}
	}
	s.text(left, title2, "start", clipWidth("Average exact fan-out per "+grainWord+", over its complete turns only (n = the blue part above)", right-left), ` font-weight="bold"`)
	ya := s.yAxis(left, right, top2, bot2, maxA, tA)
	var path []string
	flush := func() {
		if len(path) > 1 {
			fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(path, " "), colComplete)
		}
		path = path[:0]
	}
	for i, sl := range slots {
		if sl.gap {
			flush()
			s.rect(x0s[i], top2, ws[i], bot2-top2, s.noRunFill(), sl.tip, ` class="gap"`)
			continue
		}
		if sl.avg == nil {
			flush()
			continue
		}
		path = append(path, f1(xs[i])+","+f1(ya(*sl.avg)))
	}
	flush()
	if maxA == 0 && !hasAvg(slots) {
		s.text(left+8, (top2+bot2)/2+4, "start", clipWidth("No complete turn in any "+grainWord+": no exact average (unknown, not zero).", right-left-16), ` font-style="italic" fill="`+colMuted+`"`)
	}
	for i, sl := range slots {
		if sl.gap || sl.avg == nil {
			continue
		}
		tip := fmt.Sprintf("%s: average %s over %s complete turns", sl.tip, num(*sl.avg), inum(sl.complete))
		if sl.complete < SmallSample {
			fmt.Fprintf(&s.b, `<circle class="point" cx="%s" cy="%s" r="4" fill="#ffffff" stroke="%s" stroke-dasharray="2 1.5"%s><title>%s</title></circle>`,
				f1(xs[i]), f1(ya(*sl.avg)), colComplete, attr("small", "1", "n", fmt.Sprint(sl.complete)), esc(tip+" (small sample)"))
			continue
		}
		fmt.Fprintf(&s.b, `<circle class="point" cx="%s" cy="%s" r="3.5" fill="%s"%s><title>%s</title></circle>`,
			f1(xs[i]), f1(ya(*sl.avg)), colComplete, attr("n", fmt.Sprint(sl.complete)), esc(tip))
	}
	labels := make([]string, len(slots))
	for i, sl := range slots {
		labels[i] = sl.label
	}
	s.xLabels(xs, labels, bot2+19, left-2, right)
	s.text((left+right)/2, bot2+labelH+20, "middle", grainWord+" starting (UTC)", ` font-weight="bold"`)
	s.yTitle(top1, bot1, "turns")
	s.yTitle(top2, bot2, "fan-out")
	return s.html()
}

func hasAvg(slots []trendSlot) bool {
	for _, sl := range slots {
		if sl.avg != nil {
			return true
		}
	}
	return false
}

// ---- horizontal bars --------------------------------------------------------

// hbar is one bar of a horizontal chart; a nil value is drawn as a note
// ("no complete card: unknown"), never as a zero-length bar.
type hbar struct {
	series string // data-series, and the legend's words
	color  string
	value  *float64
	label  string // after the bar
	note   string // instead of the bar when value is nil
	n      int64  // the bar's sample (cards, rows); 0 = not a sample
	avg    bool   // the value is an average over n: small samples are marked
	lower  bool   // a lower bound: drawn with a "could be more" wedge
}

type hgroup struct {
	cat  string
	bars []hbar
}

type hpanel struct {
	title  string
	groups []hgroup
}

// hbarsPlot draws panels of grouped horizontal bars on one shared scale.
func hbarsPlot(id, title, desc, xLabel string, panels []hpanel) template.HTML {
	maxV, catW, labW := 0.0, 0.0, 0.0
	for _, p := range panels {
		for _, g := range p.groups {
			catW = math.Max(catW, textWidth(g.cat, fontPx))
			for _, b := range g.bars {
				if b.value != nil {
					maxV = math.Max(maxV, *b.value)
					labW = math.Max(labW, textWidth(b.label, fontPx))
				}
			}
		}
	}
	ticks := niceTicks(maxV)
	left := math.Min(catW, 230) + 16
	right := chartW - padR - math.Min(labW+14, 300)
	if right-left < 200 {
		right = left + 200
	}
	h := 8.0
	for _, p := range panels {
		h += titleH + 6
		for _, g := range p.groups {
			h += float64(len(g.bars))*rowH + groupGp
		}
	}
	h += labelH + 26
	s := newSVG(id, title, desc, h)
	top2 := ticks[len(ticks)-1]
	x := func(v float64) float64 { return left + (right-left)*v/top2 }
	// Grid first (under the bars), then each panel's bars and labels.
	y := 8.0
	var plotBot float64
	for _, p := range panels {
		y += titleH + 6
		top := y
		for _, g := range p.groups {
			y += float64(len(g.bars))*rowH + groupGp
		}
		for _, t := range ticks {
			s.line(x(t), top-2, x(t), y-groupGp/2, colGrid)
		}
		s.line(left, top-2, left, y-groupGp/2, colAxis)
		plotBot = y - groupGp/2
	}
	y = 8.0
	for _, p := range panels {
		s.text(8, y+15, "start", clipWidth(p.title, chartW-16), ` font-weight="bold"`)
		y += titleH + 6
		for _, g := range p.groups {
			gh := float64(len(g.bars)) * rowH
			s.text(left-8, y+gh/2+4, "end", clipMiddle(g.cat, left-12))
			for j, b := range g.bars {
				by := y + float64(j)*rowH
				if b.value == nil {
					s.text(left+6, by+rowH*0.7, "start", clipWidth(b.note, chartW-padR-left-8), ` font-style="italic" fill="`+colMuted+`"`)
					continue
				}
				w := math.Max(x(*b.value)-left, 0.5)
				fill, extra := b.color, ""
				small := b.avg && b.n < SmallSample
				if small {
					fill = s.smallFill(b.color)
					extra = ` stroke="` + b.color + `" stroke-width="1"` + attr("small", "1")
				}
				tip := g.cat + ", " + b.series + ": " + b.label
				s.rect(left, by+3, w, rowH-6, fill, tip, ` class="bar"`+attr("series", b.series, "cat", g.cat, "value", strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", *b.value), "0"), "."), "n", fmt.Sprint(b.n))+extra)
				lx := left + w + 6
				if b.lower {
					fmt.Fprintf(&s.b, `<polygon class="atleast" points="%s,%s %s,%s %s,%s" fill="%s"/>`,
						f1(left+w+1), f1(by+4), f1(left+w+7), f1(by+rowH/2), f1(left+w+1), f1(by+rowH-4), colArrow)
					lx += 7
				}
				s.text(lx, by+rowH*0.7, "start", clipWidth(b.label, chartW-padR-lx))
			}
			y += gh + groupGp
		}
	}
	s.line(left, plotBot, right, plotBot, colAxis)
	xs := make([]float64, len(ticks))
	labels := make([]string, len(ticks))
	for i, t := range ticks {
		xs[i], labels[i] = x(t), tick(t)
	}
	s.xLabels(xs, labels, plotBot+17, left-20, chartW-padR)
	s.text((left+right)/2, plotBot+labelH+18, "middle", clipWidth(xLabel, chartW-16), ` font-weight="bold"`)
	return s.html()
}

// ---- writer health over time ------------------------------------------------

// healthSlot is one period of writer health.
type healthSlot struct {
	label, tip        string
	runs, evaluations int64
	status            string
	shortfall, excess *int64
}

// healthPlot draws, per period, the worst shortfall (the alarm) and the
// excess at its last run as points; a period without a run is a hatched
// band (no evidence, not healthy), one whose runs could not compare is a
// grey band (not evaluated, not zero).
func healthPlot(id, title, desc, grainWord string, slots []healthSlot) template.HTML {
	maxV := 0.0
	evaluated := 0
	for _, sl := range slots {
		for _, v := range []*int64{sl.shortfall, sl.excess} {
			if v != nil {
				maxV = math.Max(maxV, float64(*v))
			}
		}
		if sl.shortfall != nil || sl.excess != nil {
			evaluated++
		}
	}
	ticks := niceTicks(maxV)
	left := 34 + tickWidth(ticks)
	right := chartW - float64(padR)
	top, bot := 14.0, 14.0+170
	h := bot + labelH + 30
	s := newSVG(id, title, desc, h)
	y := s.yAxis(left, right, top, bot, maxV, ticks)
	bw := (right - left) / float64(max(len(slots), 1))
	xs := make([]float64, len(slots))
	for i := range slots {
		xs[i] = left + float64(i)*bw + bw/2
	}
	for i, sl := range slots {
		x0 := left + float64(i)*bw
		switch {
		case sl.runs == 0:
			s.rect(x0, top, bw, bot-top, s.noRunFill(), sl.tip+": no run (no evidence either way)", ` class="norun"`)
		case sl.shortfall == nil && sl.excess == nil:
			s.rect(x0, top, bw, bot-top, s.unknownFill(), sl.tip+": not evaluated ("+sl.status+")", ` class="noteval" opacity="0.8"`)
		}
	}
	for _, se := range []struct {
		name, color string
		r           float64
		get         func(healthSlot) *int64
	}{
		{"shortfall", colShortfall, 5.5, func(h healthSlot) *int64 { return h.shortfall }},
		{"excess", colExcess, 3, func(h healthSlot) *int64 { return h.excess }},
	} {
		var path []string
		flush := func() {
			if len(path) > 1 {
				fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.Join(path, " "), se.color)
			}
			path = path[:0]
		}
		for i, sl := range slots {
			v := se.get(sl)
			if v == nil {
				flush()
				continue
			}
			path = append(path, f1(xs[i])+","+f1(y(float64(*v))))
		}
		flush()
		// The shortfall is a ring, the excess a dot: both stay visible
		// when they are equal.
		paint := `fill="` + se.color + `"`
		if se.name == "shortfall" {
			paint = `fill="#ffffff" stroke="` + se.color + `" stroke-width="2"`
		}
		for i, sl := range slots {
			if v := se.get(sl); v != nil {
				fmt.Fprintf(&s.b, `<circle class="point" cx="%s" cy="%s" r="%s" %s%s><title>%s</title></circle>`,
					f1(xs[i]), f1(y(float64(*v))), f1(se.r), paint, attr("series", se.name, "period", sl.label, "value", fmt.Sprint(*v)),
					esc(fmt.Sprintf("%s: %s %s (status %s, %d runs)", sl.tip, se.name, inum(*v), sl.status, sl.runs)))
			}
		}
	}
	if evaluated == 0 {
		msg := "No run could evaluate writer health"
		for i := len(slots) - 1; i >= 0; i-- {
			if slots[i].status != "" {
				msg += " (latest status: " + slots[i].status + ")"
				break
			}
		}
		s.text((left+right)/2, (top+bot)/2, "middle", clipWidth(msg+": not zero, not healthy", right-left-8), ` font-style="italic" fill="`+colMuted+`"`)
	}
	labels := make([]string, len(slots))
	for i, sl := range slots {
		labels[i] = sl.label
	}
	s.xLabels(xs, labels, bot+19, left-2, right)
	s.text((left+right)/2, bot+labelH+20, "middle", grainWord+" (UTC)", ` font-weight="bold"`)
	s.yTitle(top, bot, "distinct keys")
	return s.html()
}
