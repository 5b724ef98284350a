package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units: the page scales each SVG to its
// width, text and shapes alike, so what does not overlap here does not
// overlap on the page. Legends are HTML beside the SVG, never in it.
const (
	chartW  = 760
	padR    = 12
	fontPx  = 12
	titleH  = 22 // a panel's title line
	labelH  = 24 // x-axis tick labels under a plot
	rowH    = 20 // one horizontal bar
	groupGp = 12 // between groups of horizontal bars
)

// SmallSample is the threshold below which an average or a distribution
// is drawn faded and hatched, with its n: fewer than SmallSample cards,
// turns or rows.
const SmallSample = 10

// Series colours (the screenshot test looks for the first three).
const (
	colComplete   = "#1f5fa8" // exact / complete / live / sessions
	colLowerBound = "#e07b00" // lower bound / backfill
	colContexts   = "#2a9d8f"
	colUnknown    = "#8c8c8c" // unknown (not zero): hatched
	colShortfall  = "#c62828"
	colExcess     = "#6a3d9a"
	colArrow      = "#8a4b00"
	colGrid       = "#e3e3e3"
	colAxis       = "#333333"
	colMuted      = "#555555"
)

// svg accumulates one chart's markup; patterns are defined at the end.
type svg struct {
	b        strings.Builder
	id       string
	w, h     float64
	patterns map[string]string // pattern id → definition
}

func newSVG(id, title, desc string, h float64) *svg {
	s := &svg{id: id, w: chartW, h: math.Ceil(h), patterns: map[string]string{}}
	fmt.Fprintf(&s.b, `<svg id="%s" class="chart" role="img" aria-labelledby="%s-t %s-d" viewBox="0 0 %d %d" width="%d" height="%d" font-size="%d">`,
		esc(id), esc(id), esc(id), int(s.w), int(s.h), int(s.w), int(s.h), fontPx)
	fmt.Fprintf(&s.b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
	return s
}

// hatch returns a fill of diagonal stripes of c over light (for unknown,
// no-run and small-sample marks), defining it once.
func (s *svg) hatch(kind, c, light string) string {
	pid := s.id + "-" + kind + "-" + strings.TrimPrefix(c, "#")
	if _, ok := s.patterns[pid]; !ok {
		s.patterns[pid] = `<pattern id="` + esc(pid) + `" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
			`<rect width="6" height="6" fill="` + light + `"/><rect width="3" height="6" fill="` + c + `"/></pattern>`
	}
	return "url(#" + pid + ")"
}

func (s *svg) unknownFill() string { return s.hatch("hatch", colUnknown, "#f0f0f0") }
func (s *svg) smallFill(c string) string {
	return s.hatch("small", c, "#ffffff")
}
func (s *svg) noRunFill() string { return s.hatch("norun", "#d4d4d4", "#fafafa") }

// rect draws a rectangle with a tooltip and optional attributes.
func (s *svg) rect(x, y, w, h float64, fill, tip string, attrs ...string) {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s>`, f1(x), f1(y), f1(w), f1(h), esc(fill), strings.Join(attrs, ""))
	if tip != "" {
		fmt.Fprintf(&s.b, `<title>%s</title>`, esc(tip))
	}
	s.b.WriteString(`</rect>`)
}

// text draws one label; class "lbl" marks what the overlap test measures.
func (s *svg) text(x, y float64, anchor, text string, extra ...string) {
	fmt.Fprintf(&s.b, `<text class="lbl" x="%s" y="%s" text-anchor="%s"%s>%s</text>`, f1(x), f1(y), anchor, strings.Join(extra, ""), esc(text))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, extra ...string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"%s/>`, f1(x1), f1(y1), f1(x2), f1(y2), esc(stroke), strings.Join(extra, ""))
}

func (s *svg) html() template.HTML {
	if len(s.patterns) > 0 {
		ids := make([]string, 0, len(s.patterns))
		for id := range s.patterns {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		s.b.WriteString(`<defs>`)
		for _, id := range ids {
			s.b.WriteString(s.patterns[id])
		}
		s.b.WriteString(`</defs>`)
	}
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String())
}

// yAxis draws horizontal grid lines and tick labels for [0, maxV] over
// [top, bottom] and returns the scale.
func (s *svg) yAxis(left, right, top, bottom, maxV float64, ticks []float64) func(float64) float64 {
	top2 := ticks[len(ticks)-1]
	y := func(v float64) float64 { return bottom - (bottom-top)*v/top2 }
	for _, t := range ticks {
		s.line(left, y(t), right, y(t), colGrid)
		s.text(left-6, y(t)+4, "end", tick(t))
	}
	s.line(left, bottom, right, bottom, colAxis)
	s.line(left, top, left, bottom, colAxis)
	return y
}

// yTitle draws a y-axis title rotated along the left edge.
func (s *svg) yTitle(top, bottom float64, t string) {
	mid := (top + bottom) / 2
	s.text(14, mid, "middle", clipWidth(t, bottom-top), ` font-weight="bold" transform="rotate(-90 14 `+f1(mid)+`)"`)
}

// tickWidth is the widest tick label of ticks.
func tickWidth(ticks []float64) float64 {
	w := 0.0
	for _, t := range ticks {
		w = math.Max(w, textWidth(tick(t), fontPx))
	}
	return w
}

// xLabels draws labels centred at xs on the baseline y, leaving out any
// that would touch a neighbour (the data table has every value) but
// always keeping the first and the last, and keeping each inside
// [minX, maxX]. It returns how many it drew.
func (s *svg) xLabels(xs []float64, labels []string, y, minX, maxX float64, extra ...string) int {
	type box struct {
		x, x0, x1 float64
		anchor    string
	}
	place := func(i int) box {
		w := textWidth(labels[i], fontPx)
		b := box{xs[i], xs[i] - w/2, xs[i] + w/2, "middle"}
		if b.x0 < minX {
			b = box{minX, minX, minX + w, "start"}
		}
		if b.x1 > maxX {
			b = box{maxX, maxX - w, maxX, "end"}
		}
		return b
	}
	last := -1
	for i := len(labels) - 1; i >= 0; i-- {
		if labels[i] != "" {
			last = i
			break
		}
	}
	if last < 0 {
		return 0
	}
	lb := place(last)
	lastRight := math.Inf(-1)
	drawn := 0
	for i, l := range labels {
		if l == "" || i == last {
			continue
		}
		b := place(i)
		if b.x0 < lastRight+8 || b.x1 > lb.x0-8 {
			continue
		}
		s.text(b.x, y, b.anchor, l, extra...)
		lastRight = b.x1
		drawn++
	}
	s.text(lb.x, y, lb.anchor, labels[last], extra...)
	return drawn + 1
}

// niceTicks returns 0 and up to ~5 round tick values covering max.
func niceTicks(maxV float64) []float64 {
	if maxV <= 0 || math.IsNaN(maxV) || math.IsInf(maxV, 0) {
		return []float64{0, 1}
	}
	raw := maxV / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if step < 1 && maxV >= 1 {
		step = 1
	}
	var out []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		out = append(out, v)
		if v >= maxV {
			break
		}
	}
	return out
}

// num formats a count or an average: integers with thousands separators,
// others with two decimals (none from 100 up).
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "?"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return group(strconv.FormatInt(int64(v), 10))
	}
	if math.Abs(v) >= 100 {
		return group(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// numOf formats a count or an average followed by its noun, singular for
// exactly one ("1 session", "1.50 sessions").
func numOf(v float64, one, many string) string {
	if s := num(v); s != "1" {
		return s + " " + many
	}
	return "1 " + one
}

// tick formats an axis tick compactly: 2,500, 250k, 1.25M.
func tick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return num(v)
}

func inum(v int64) string { return group(strconv.FormatInt(v, 10)) }

// group inserts thousands separators into an integer's digits.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// clipWidth shortens t until its estimated width fits w.
func clipWidth(t string, w float64) string {
	if textWidth(t, fontPx) <= w {
		return t
	}
	r := []rune(t)
	for n := len(r) - 1; n > 1; n-- {
		c := string(r[:n]) + "…"
		if textWidth(c, fontPx) <= w {
			return c
		}
	}
	return "…"
}

// clipMiddle shortens t until its estimated width fits w by cutting out
// its middle, so names that differ only at their end stay apart.
func clipMiddle(t string, w float64) string {
	if textWidth(t, fontPx) <= w {
		return t
	}
	r := []rune(t)
	for n := len(r) - 1; n > 2; n-- {
		head := (n + 1) / 2
		c := string(r[:head]) + "…" + string(r[len(r)-(n-head):])
		if textWidth(c, fontPx) <= w {
			return c
		}
	}
	return clipWidth(t, w)
}

// attr formats data attributes for the tests and for readers of the markup.
func attr(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(` data-` + kv[i] + `="` + esc(kv[i+1]) + `"`)
	}
	return b.String()
}
