package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Chart geometry (SVG user units; the page scales the SVG to its width).
const (
	chartW  = 720
	padL    = 150 // room for category labels on horizontal charts
	padR    = 24
	padT    = 34 // legend
	padB    = 52 // x-axis ticks and label
	barGap  = 0.2
	fontPx  = 12
	rowH    = 22 // height of one bar in horizontal charts
	vChartH = 300
)

// Series colours (also asserted by the screenshot test).
const (
	colComplete   = "#1f5fa8" // complete / live / sessions
	colLowerBound = "#e07b00" // lower bound / backfill
	colUnknown    = "#8c8c8c" // unknown (not zero)
	colContexts   = "#2a9d8f"
	colShortfall  = "#c62828"
	colExcess     = "#6a3d9a"
)

type series struct {
	name, color string
	pattern     bool // hatched: for "unknown", so it never reads as a value
}

// svg accumulates one chart's markup.
type svg struct {
	b    strings.Builder
	w, h float64
}

func newSVG(id, title, desc string, h float64) *svg {
	s := &svg{w: chartW, h: h}
	fmt.Fprintf(&s.b, `<svg id="%s" class="chart" role="img" aria-labelledby="%s-t %s-d" viewBox="0 0 %d %d" width="%d" height="%d" font-size="%d">`,
		esc(id), esc(id), esc(id), int(s.w), int(h), int(s.w), int(h), fontPx)
	fmt.Fprintf(&s.b, `<title id="%s-t">%s</title><desc id="%s-d">%s</desc>`, esc(id), esc(title), esc(id), esc(desc))
	s.b.WriteString(`<defs><pattern id="` + esc(id) + `-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#f0f0f0"/><rect width="3" height="6" fill="` + colUnknown + `"/></pattern></defs>`)
	return s
}

func (s *svg) fill(id string, se series) string {
	if se.pattern {
		return "url(#" + id + "-hatch)"
	}
	return se.color
}

func (s *svg) rect(x, y, w, h float64, fill, label string) {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	fmt.Fprintf(&s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="#ffffff" stroke-width="0.5"><title>%s</title></rect>`,
		f1(x), f1(y), f1(w), f1(h), esc(fill), esc(label))
}

func (s *svg) text(x, y float64, anchor, text string, extra ...string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`, f1(x), f1(y), anchor, strings.Join(extra, ""), esc(text))
}

func (s *svg) line(x1, y1, x2, y2 float64, stroke string, extra ...string) {
	fmt.Fprintf(&s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"%s/>`, f1(x1), f1(y1), f1(x2), f1(y2), esc(stroke), strings.Join(extra, ""))
}

func (s *svg) legend(id string, ss []series) {
	x := 56.0
	for _, se := range ss {
		s.rect(x, 10, 12, 12, s.fill(id, se), se.name)
		s.text(x+16, 20, "start", se.name)
		x += 24 + float64(len(se.name))*6.6
	}
}

func (s *svg) html() template.HTML {
	s.b.WriteString(`</svg>`)
	return template.HTML(s.b.String())
}

// stackedColumns draws vertical stacked bars: one column per category,
// values[i][j] for category i and series j.
func stackedColumns(id, title, desc, xLabel, yLabel string, cats []string, ss []series, values [][]float64) template.HTML {
	s := newSVG(id, title, desc, vChartH)
	s.legend(id, ss)
	left, top, bottom := 56.0, float64(padT), vChartH-float64(padB)
	right := s.w - padR
	maxV := 0.0
	for _, row := range values {
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		maxV = math.Max(maxV, sum)
	}
	ticks := niceTicks(maxV)
	top2 := ticks[len(ticks)-1]
	y := func(v float64) float64 { return bottom - (bottom-top)*v/top2 }
	for _, t := range ticks {
		s.line(left, y(t), right, y(t), "#e0e0e0")
		s.text(left-6, y(t)+4, "end", num(t))
	}
	s.line(left, bottom, right, bottom, "#333333")
	s.line(left, top, left, bottom, "#333333")
	bw := (right - left) / float64(max(len(cats), 1))
	for i, c := range cats {
		x := left + float64(i)*bw + bw*barGap/2
		acc := 0.0
		for j, se := range ss {
			v := values[i][j]
			if v <= 0 {
				continue
			}
			s.rect(x, y(acc+v), bw*(1-barGap), y(acc)-y(acc+v), s.fill(id, se), fmt.Sprintf("%s, %s: %s", c, se.name, num(v)))
			acc += v
		}
		s.text(x+bw*(1-barGap)/2, bottom+16, "middle", c)
		if acc > 0 {
			s.text(x+bw*(1-barGap)/2, y(acc)-4, "middle", num(acc), ` fill="#333333"`)
		}
	}
	s.text((left+right)/2, vChartH-10, "middle", xLabel, ` font-weight="bold"`)
	s.text(14, (top+bottom)/2, "middle", yLabel, ` font-weight="bold" transform="rotate(-90 14 `+f1((top+bottom)/2)+`)"`)
	return s.html()
}

// hbar is one bar of a grouped horizontal chart; a nil value is drawn as a
// note ("no measured rows"), never as a zero-length bar.
type hbar struct {
	value *float64
	label string // shown after the bar
	note  string // shown instead of the bar when value is nil
}

// groupedBars draws horizontal bars: one group per category, one bar per
// series in the group.
func groupedBars(id, title, desc, xLabel string, cats []string, ss []series, bars [][]hbar) template.HTML {
	groupH := float64(len(ss))*rowH + 14
	h := float64(padT) + groupH*float64(max(len(cats), 1)) + float64(padB)
	s := newSVG(id, title, desc, h)
	s.legend(id, ss)
	left, top, right := float64(padL), float64(padT), s.w-padR-230
	bottom := h - float64(padB)
	maxV := 0.0
	for _, g := range bars {
		for _, b := range g {
			if b.value != nil {
				maxV = math.Max(maxV, *b.value)
			}
		}
	}
	ticks := niceTicks(maxV)
	top2 := ticks[len(ticks)-1]
	x := func(v float64) float64 { return left + (right-left)*v/top2 }
	for _, t := range ticks {
		s.line(x(t), top, x(t), bottom, "#e0e0e0")
		s.text(x(t), bottom+16, "middle", num(t))
	}
	s.line(left, top, left, bottom, "#333333")
	s.line(left, bottom, right, bottom, "#333333")
	for i, c := range cats {
		gy := top + float64(i)*groupH + 7
		s.text(left-8, gy+float64(len(ss))*rowH/2+4, "end", clip(c, 22))
		for j, se := range ss {
			b := bars[i][j]
			by := gy + float64(j)*rowH
			if b.value == nil {
				s.text(left+6, by+rowH*0.7, "start", b.note, ` font-style="italic" fill="#555555"`)
				continue
			}
			w := x(*b.value) - left
			s.rect(left, by+2, math.Max(w, 0.5), rowH-4, s.fill(id, se), fmt.Sprintf("%s, %s: %s", c, se.name, b.label))
			s.text(left+w+6, by+rowH*0.7, "start", b.label)
		}
	}
	s.text((left+right)/2, h-10, "middle", xLabel, ` font-weight="bold"`)
	return s.html()
}

// point is one instant of a time series; nil means not measured.
type point struct {
	at     time.Time
	values []*float64
	note   string // shown at a point where nothing was measured
}

// timeSeries draws lines with markers over time. Points whose values are
// nil are drawn as a labelled dashed mark, never as a zero.
func timeSeries(id, title, desc, yLabel string, ss []series, pts []point) template.HTML {
	s := newSVG(id, title, desc, vChartH)
	s.legend(id, ss)
	left, top, bottom, right := 56.0, float64(padT)+8, vChartH-float64(padB), s.w-padR-40
	maxV := 0.0
	for _, p := range pts {
		for _, v := range p.values {
			if v != nil {
				maxV = math.Max(maxV, *v)
			}
		}
	}
	ticks := niceTicks(maxV)
	top2 := ticks[len(ticks)-1]
	y := func(v float64) float64 { return bottom - (bottom-top)*v/top2 }
	var t0, t1 time.Time
	for i, p := range pts {
		if i == 0 || p.at.Before(t0) {
			t0 = p.at
		}
		if i == 0 || p.at.After(t1) {
			t1 = p.at
		}
	}
	x := func(t time.Time) float64 {
		if !t1.After(t0) {
			return (left + right) / 2
		}
		return left + 20 + (right-left-40)*float64(t.Sub(t0))/float64(t1.Sub(t0))
	}
	for _, t := range ticks {
		s.line(left, y(t), right, y(t), "#e0e0e0")
		s.text(left-6, y(t)+4, "end", num(t))
	}
	s.line(left, bottom, right, bottom, "#333333")
	s.line(left, top, left, bottom, "#333333")
	seen := map[string]bool{}
	for _, p := range pts {
		label := p.at.UTC().Format("2006-01-02 15:04")
		if !seen[label] {
			seen[label] = true
			s.text(x(p.at), bottom+16, "middle", label)
		}
	}
	for j, se := range ss {
		var path []string
		for _, p := range pts {
			if v := p.values[j]; v != nil {
				path = append(path, f1(x(p.at))+","+f1(y(*v)))
			}
		}
		if len(path) > 1 {
			fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(path, " "), se.color)
		}
		for _, p := range pts {
			if v := p.values[j]; v != nil {
				fmt.Fprintf(&s.b, `<circle cx="%s" cy="%s" r="%d" fill="%s"><title>%s</title></circle>`, f1(x(p.at)), f1(y(*v)), 6-2*j, se.color,
					esc(fmt.Sprintf("%s at %s: %s", se.name, p.at.UTC().Format(time.RFC3339), num(*v))))
			}
		}
	}
	for _, p := range pts {
		if p.note != "" {
			s.line(x(p.at), top, x(p.at), bottom, colUnknown, ` stroke-dasharray="4 3"`)
			s.text(x(p.at)+4, top+12, "start", p.note, ` font-style="italic" fill="#555555"`)
		}
	}
	s.text((left+right)/2, vChartH-10, "middle", "evaluated at (UTC)", ` font-weight="bold"`)
	s.text(14, (top+bottom)/2, "middle", yLabel, ` font-weight="bold" transform="rotate(-90 14 `+f1((top+bottom)/2)+`)"`)
	return s.html()
}

// niceTicks returns 0 and up to ~5 round tick values covering max.
func niceTicks(maxV float64) []float64 {
	if maxV <= 0 {
		return []float64{0, 1}
	}
	raw := maxV / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if step < 1 && maxV >= 1 {
		step = 1
	}
	var out []float64
	for v := 0.0; ; v += step {
		out = append(out, v)
		if v >= maxV {
			break
		}
	}
	return out
}

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
