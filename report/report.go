package report

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"time"
)

// Chart is one figure of the report.
type Chart struct {
	ID      string
	Title   string
	SVG     template.HTML
	Caption string   // what the chart shows and how to read it
	Rules   []string // disclosure texts that apply, each prefixed with its rule
}

// Section is one installation's part of the report.
type Section struct {
	*Installation
	Charts []Chart
}

// Page is the rendered report's model.
type Page struct {
	Title       string
	GeneratedAt string
	Sections    []Section
}

// Which disclosure rules caption which chart.
var (
	boundaryRules = []string{"feature_absent", "no_capture_boundary", "key_unparseable", "capture_boundary",
		"second_precision_boundary", "partial_key_pair", "backfill_provenance"}
	usageRules  = []string{"feature_absent", "unmeasured_usage", "backfill_provenance"}
	healthRules = []string{"feature_absent", "no_capture_boundary", "key_unparseable", "writer_health"}
)

// Write loads the warehouse at dbPath (read-only) and writes the report.
func Write(ctx context.Context, dbPath string, w io.Writer, now time.Time) error {
	d, err := Load(ctx, dbPath)
	if err != nil {
		return err
	}
	d.GeneratedAt = now
	return Render(w, d)
}

// Render writes the HTML page for d.
func Render(w io.Writer, d *Data) error {
	p := Page{Title: "Kandev subagent warehouse report", GeneratedAt: d.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC")}
	for _, in := range d.Installations {
		p.Sections = append(p.Sections, Section{Installation: in, Charts: charts(in)})
	}
	return page.Execute(w, p)
}

func charts(in *Installation) []Chart {
	pre := "i-" + slug(in.ID) + "-"
	return []Chart{fanoutChart(in, pre+"fanout"), stepsChart(in, pre+"contexts"), usageCountChart(in, pre+"usage"),
		usageTokensChart(in, pre+"tokens"), healthChart(in, pre+"health")}
}

func rules(in *Installation, names []string) []string {
	var out []string
	for _, n := range names {
		for _, d := range in.Disclosures {
			if d.Rule == n {
				out = append(out, d.Rule+": "+d.Text)
			}
		}
	}
	return out
}

func fanoutChart(in *Installation, id string) Chart {
	ss := []series{{name: "complete (exact)", color: colComplete}, {name: "lower bound", color: colLowerBound},
		{name: "unknown (not zero)", color: colUnknown, pattern: true}}
	idx := map[string]int{"complete": 0, "lower_bound": 1, "unknown": 2}
	byN := map[int64][]float64{}
	var tot [3]int64
	var backfillTurns int64
	for _, b := range in.Fanout {
		if byN[b.Subagents] == nil {
			byN[b.Subagents] = make([]float64, 3)
		}
		j, ok := idx[b.Completeness]
		if !ok {
			continue
		}
		byN[b.Subagents][j] += float64(b.Turns)
		tot[j] += b.Turns
		backfillTurns += b.BackfillOnly + b.Mixed
	}
	ns := make([]int64, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	cats := make([]string, len(ns))
	vals := make([][]float64, len(ns))
	for i, n := range ns {
		cats[i] = strconv.FormatInt(n, 10)
		vals[i] = byN[n]
	}
	title := "Fan-out distribution: turns by number of subagents observed (" + in.ID + ")"
	desc := fmt.Sprintf("Stacked columns. %d turns are complete (exact fan-out), %d are a lower bound and %d are unknown.", tot[0], tot[1], tot[2])
	caption := fmt.Sprintf("Turns by subagents observed per turn, stacked by completeness. Only the %d complete turns (started at or after capture_since) form an exact distribution, where a 0 is a true zero. "+
		"The %d lower-bound turns may have had more subagents than observed; the %d unknown turns (hatched) had no row observed before the boundary: their fan-out is unknown, not zero. "+
		"%d turns include backfill rows, which are not like-for-like with live rows.", tot[0], tot[1], tot[2], backfillTurns)
	return Chart{ID: id, Title: title, Caption: caption, Rules: rules(in, boundaryRules),
		SVG: stackedColumns(id+"-svg", title, desc, "subagents observed per turn", "turns", cats, ss, vals)}
}

func stepsChart(in *Installation, id string) Chart {
	ss := []series{{name: "sessions/card", color: colComplete}, {name: "contexts/card (complete cards)", color: colContexts},
		{name: "contexts/card observed (lower bound)", color: colLowerBound}}
	cats := make([]string, len(in.Steps))
	bars := make([][]hbar, len(in.Steps))
	var cards, complete, live, backfill int64
	for i, s := range in.Steps {
		cats[i] = s.Name
		spc, obs := s.SessionsPerCard, s.ContextsObserved
		b := []hbar{{value: &spc, label: num(spc)}, {note: "no complete card: unknown"}, {value: &obs, label: num(obs)}}
		if s.ContextsComplete != nil {
			b[1] = hbar{value: s.ContextsComplete, label: fmt.Sprintf("%s (%d of %d cards)", num(*s.ContextsComplete), s.CardsComplete, s.Cards)}
		}
		bars[i] = b
		cards += s.Cards
		complete += s.CardsComplete
		live += s.SubagentsLive
		backfill += s.Backfill
	}
	title := "Contexts per card by workflow step (" + in.ID + ")"
	desc := fmt.Sprintf("Grouped horizontal bars for %d steps: sessions per card, contexts per card over complete cards, and observed contexts per card.", len(in.Steps))
	caption := fmt.Sprintf("Per workflow step (each card's current step): sessions per card counts task_sessions rows only, exactly as before subagents were recorded; "+
		"contexts = sessions + subagent contexts. The exact average is over the %d of %d cards whose every session has complete fan-out; where no card is complete it is shown as unknown, not zero. "+
		"The observed average is a lower bound over all cards. Subagent contexts: %d live, %d backfill.", complete, cards, live, backfill)
	return Chart{ID: id, Title: title, Caption: caption, Rules: rules(in, boundaryRules),
		SVG: groupedBars(id+"-svg", title, desc, "average per card", cats, ss, bars)}
}

// usageTypes groups usage rows by subagent type (live, backfill).
func usageTypes(in *Installation) ([]string, map[string][2]*UsageRow) {
	m := map[string][2]*UsageRow{}
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
	}
	return types, m
}

func usageCountChart(in *Installation, id string) Chart {
	ss := []series{{name: "live", color: colComplete}, {name: "backfill", color: colLowerBound}}
	types, m := usageTypes(in)
	bars := make([][]hbar, len(types))
	var measured, unmeasured int64
	for i, t := range types {
		bars[i] = make([]hbar, 2)
		for j, u := range m[t] {
			if u == nil {
				bars[i][j] = hbar{note: "no " + ss[j].name + " rows"}
				continue
			}
			v := float64(u.Subagents)
			bars[i][j] = hbar{value: &v, label: fmt.Sprintf("%d (%d measured, %d unmeasured)", u.Subagents, u.Measured, u.Unmeasured)}
			measured += u.Measured
			unmeasured += u.Unmeasured
		}
	}
	title := "Subagent invocations by type and source (" + in.ID + ")"
	desc := fmt.Sprintf("Horizontal bars for %d subagent types, live and backfill apart.", len(types))
	caption := fmt.Sprintf("Subagent invocations per subagent type, live and backfill apart (backfill rows were recovered from message metadata and are not like-for-like). "+
		"%d rows reported usage and %d reported none (e.g. async dispatches): those are counted here but never as zero usage.", measured, unmeasured)
	return Chart{ID: id, Title: title, Caption: caption, Rules: rules(in, usageRules),
		SVG: groupedBars(id+"-svg", title, desc, "subagent invocations", types, ss, bars)}
}

func usageTokensChart(in *Installation, id string) Chart {
	ss := []series{{name: "live", color: colComplete}, {name: "backfill", color: colLowerBound}}
	types, m := usageTypes(in)
	bars := make([][]hbar, len(types))
	for i, t := range types {
		bars[i] = make([]hbar, 2)
		for j, u := range m[t] {
			switch {
			case u == nil:
				bars[i][j] = hbar{note: "no " + ss[j].name + " rows"}
			case u.AvgTokens == nil:
				bars[i][j] = hbar{note: fmt.Sprintf("no row reported tokens (%d rows): unknown, not 0", u.Subagents)}
			default:
				bars[i][j] = hbar{value: u.AvgTokens, label: fmt.Sprintf("%s (n=%d of %d)", num(*u.AvgTokens), u.WithTokens, u.Subagents)}
			}
		}
	}
	title := "Average total tokens per subagent, over measured rows only (" + in.ID + ")"
	desc := fmt.Sprintf("Horizontal bars for %d subagent types: the average of total_tokens over the rows that reported it, live and backfill apart.", len(types))
	caption := "Average total_tokens per invocation, over the rows that reported tokens only (n = those rows, of all rows of the type). " +
		"Unreported usage stays NULL and is excluded, never averaged in as 0; a type with no reporting row shows no bar."
	return Chart{ID: id, Title: title, Caption: caption, Rules: rules(in, usageRules),
		SVG: groupedBars(id+"-svg", title, desc, "average total tokens (measured rows)", types, ss, bars)}
}

func healthChart(in *Installation, id string) Chart {
	ss := []series{{name: "shortfall (alarm)", color: colShortfall}, {name: "excess (attributed)", color: colExcess}}
	pts := make([]point, len(in.Health))
	notRun := 0
	for i, h := range in.Health {
		p := point{at: h.At, values: make([]*float64, 2)}
		if h.Shortfall != nil {
			v := float64(*h.Shortfall)
			p.values[0] = &v
		}
		if h.Excess != nil {
			v := float64(*h.Excess)
			p.values[1] = &v
		}
		if !h.Evaluated {
			p.note = "not run: " + h.Status
			notRun++
		}
		pts[i] = p
	}
	last := "none"
	if n := len(in.Health); n > 0 {
		last = in.Health[n-1].Status
	}
	title := "Writer health over time: shortfall and excess per run (" + in.ID + ")"
	desc := fmt.Sprintf("Line chart over %d runs; latest status %s.", len(pts), last)
	caption := fmt.Sprintf("Per run, subagent-task messages since capture_since without a subagent row (shortfall, the alarm) and rows without a message (excess, attributed). "+
		"The two are separate set differences and never netted. Runs where the comparison was not run (%d here, e.g. capture_since absent) are marked, not drawn as zero. Latest status: %s.", notRun, last)
	return Chart{ID: id, Title: title, Caption: caption, Rules: rules(in, healthRules),
		SVG: timeSeries(id+"-svg", title, desc, "distinct keys", ss, pts)}
}

func slug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b)
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999 UTC")
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"ts":  func(t time.Time) string { return fmtTime(&t) },
	"tsp": fmtTime,
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:980px;padding:1rem 1.5rem;color:#1a1a1a;background:#ffffff;line-height:1.4}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;border-bottom:2px solid #1f5fa8;padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.05rem;margin:.2rem 0}
figure{margin:1.2rem 0;padding:.8rem;border:1px solid #d0d0d0;border-radius:6px;background:#ffffff}
svg.chart{width:100%;height:auto;display:block}
figcaption{font-size:.9rem;color:#333333;margin-top:.5rem}
.rules{margin:.4rem 0 0 1rem;padding:0;font-size:.85rem;color:#4a4a4a}
.meta{font-size:.9rem;color:#444444}
.warning{color:#8a4b00}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;font-size:.9rem}dt{font-weight:bold}dd{margin:0}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p class="meta">Generated {{.GeneratedAt}} from the warehouse's current views (the latest committed run of each installation; writer health over every retained run).
Every chart is captioned with the disclosures that apply: an <em>unknown</em> is never drawn as zero, and backfill rows are kept apart from live rows.</p>
</header>
<main>
{{range .Sections}}
<section id="inst-{{.ID}}" aria-labelledby="inst-{{.ID}}-h">
<h2 id="inst-{{.ID}}-h">Installation {{.ID}}</h2>
<dl>
<dt>Activation state</dt><dd>{{.ActivationState}}</dd>
<dt>capture_since</dt><dd>{{tsp .CaptureSince}}</dd>
<dt>Snapshot</dt><dd>{{ts .SnapshotAt}} (run {{.RunID}})</dd>
<dt>Subagent rows</dt><dd>{{if .HasSubagentTable}}{{.Subagents}} ({{.SubagentsLive}} live, {{.SubagentsBackfill}} backfill){{else}}unknown: the store has no subagent table (not zero){{end}}</dd>
</dl>
<details class="disclosures" open>
<summary>Disclosures for this installation ({{len .Disclosures}})</summary>
<ul>{{range .Disclosures}}<li class="{{.Severity}}"><strong>{{.Rule}}</strong> ({{.Severity}}): {{.Text}}</li>{{end}}</ul>
</details>
{{range .Charts}}
<figure id="{{.ID}}" class="figure">
<h3>{{.Title}}</h3>
{{.SVG}}
<figcaption>{{.Caption}}{{if .Rules}}
<ul class="rules">{{range .Rules}}<li>{{.}}</li>{{end}}</ul>{{end}}</figcaption>
</figure>
{{end}}
</section>
{{else}}
<p>The warehouse has no installation.</p>
{{end}}
</main>
</body>
</html>
`))
