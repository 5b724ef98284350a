package report

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// Chart is one figure of the report.
type Chart struct {
	ID      string
	Title   string
	Legend  []LegendItem
	SVG     template.HTML // empty when the chart cannot be drawn (Caption says why)
	Caption string        // what the chart shows, over which population
	Reading []Link        // the reading rules that apply
	Rules   []Link        // the installation's disclosures that apply
	Table   *Table        // the numbers, as a text alternative
	rules   []string      // rule names that apply (resolved into Rules)
	reading []string      // anchors of the reading rules (resolved into Reading)
}

// LegendItem is one key of a chart's legend: a swatch class and its words.
type LegendItem struct{ Swatch, Label string }

// Link points at an anchor of the page.
type Link struct{ Href, Label, Class string }

// Table is a chart's data as a table.
type Table struct {
	Head []string
	Rows [][]string
}

// Fact is one line of a definition list; Value may be store text.
type Fact struct{ Key, Value string }

// Banner is one installation's freshness line at the top of the page.
type Banner struct {
	Inst, Anchor string
	Level        string // ok, stale, failed, none
	Headline     string
	Facts        []Fact
	NotServed    []RunProblem
	NotServedAll int
}

// Section is one installation's part of the report.
type Section struct {
	*Installation
	Anchor            string
	DisclosuresAnchor string
	Facts             []Fact
	Note              string
	Charts            []Chart
	Turns             []TurnRow
}

// TurnRow is one line of an installation's top-turns table.
type TurnRow struct {
	TurnID, SessionID, Started, Figure, Completeness string
	Reasons                                          []Link // nil: recorded before the codes existed
}

// DisclosureItem is one disclosure, listed once, with the charts it
// applies to.
type DisclosureItem struct {
	Anchor string
	Disclosure
	AppliesTo []Link
}

// DisclosureGroup is one installation's disclosures.
type DisclosureGroup struct {
	Inst, Anchor string
	Items        []DisclosureItem
}

// Reading is one of the reading rules every chart refers to.
type Reading struct{ Anchor, Name, Text string }

// Page is the rendered report's model.
type Page struct {
	Title       string
	GeneratedAt string
	Banners     []Banner
	Reading     []Reading
	Sections    []Section
	Disclosures []DisclosureGroup
	Alarms      int
	Warnings    int
	Total       int
	Missing     []string
	Reasons     []Reading
}

// reasonGlossary lists the fan-out reason codes; the top-turns tables
// link to them.
var reasonGlossary = func() []Reading {
	var out []Reading
	for _, r := range models.CompletenessReasonList {
		out = append(out, Reading{Anchor: "reason-" + string(r.Code), Name: string(r.Code), Text: strings.ReplaceAll(r.Meaning, "`", "")})
	}
	return out
}()

// turnRows renders an installation's top turns: the figure (exact,
// "≥ n" or unknown) and each reason code linked to its meaning.
func turnRows(in *Installation) []TurnRow {
	var out []TurnRow
	for _, t := range in.TopTurns {
		r := TurnRow{TurnID: t.TurnID, SessionID: t.SessionID, Started: tsp(t.StartedAt), Completeness: t.Completeness}
		switch {
		case t.Fanout != nil:
			r.Figure = fmt.Sprint(*t.Fanout)
		case t.Completeness == string(models.FanoutUnknown):
			r.Figure = "unknown (not 0)"
		default:
			r.Figure = fmt.Sprintf("≥ %d", t.LowerBound)
		}
		if t.Reasons != nil {
			r.Reasons = []Link{}
			for _, c := range t.Reasons {
				r.Reasons = append(r.Reasons, Link{Href: "#reason-" + c, Label: c})
			}
		}
		out = append(out, r)
	}
	return out
}

// readingRules are the rules of reading, stated once; charts link to them.
var readingRules = []Reading{
	{"read-exact", "Exact", "A fan-out is exact only where the warehouse proves it complete: the activity started at or after capture_since (outside the ambiguous second of a second-precise key), with no writer shortfall, no more rows than tool calls (a tool call recorded by two executions, or a row without one: the rows cannot say how many invocations they are) and no unplaced row in its session. There a 0 is a true zero, and the empty slots of a distribution are real zeros."},
	{"read-lower", "Lower bound (≥, ▸)", "Where subagent rows or subagent-task messages exist but completeness is not proven (before capture_since, or a writer shortfall), the fan-out is at least what is known — the distinct tool calls of rows and messages together: it could be more. Lower bounds are drawn apart from exact values, with a ▸ wedge pointing to \"or more\", and never added to them."},
	{"read-unknown", "Unknown is not zero", "With no evidence at all (no row and no message, before capture_since, or a store with no boundary or no subagent table) a fan-out is unknown. It is counted apart, hatched grey, and never drawn as 0."},
	{"read-small", fmt.Sprintf("Small samples (n < %d)", SmallSample), fmt.Sprintf("Every average and distribution shows its n (the turns, cards or rows it is over). Below %d it is drawn hatched, or as a hollow point: read it as an anecdote, not a rate.", SmallSample)},
	{"read-backfill", "Backfill is not live", "Backfill rows were recovered once from message metadata, without execution identity and with only what survived there; they are kept apart from live rows."},
	{"read-measured", "Measured rows only", "Usage the agent did not report stays NULL: averages are over the rows that reported the metric (their n is shown), never with 0 filled in."},
	{"read-period", "Periods and the data's time range", "Periods are UTC (weeks start on Monday). A period the data only partly covers is outlined dashed; periods after the last turn are not listed (hatched up to the snapshot): no data there is not zero activity."},
	{"read-norun", "No run is not healthy", "Writer health is known only for periods with a run that could compare messages with subagent rows; a period without a run is no evidence either way."},
}

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
	p := Page{Title: "Kandev subagent warehouse report", GeneratedAt: d.GeneratedAt.UTC().Format("2006-01-02 15:04:05 UTC"),
		Reading: readingRules, Missing: d.Missing, Reasons: reasonGlossary}
	ids := map[string]int{}
	unique := func(s string) string {
		ids[s]++
		if n := ids[s]; n > 1 {
			return fmt.Sprintf("%s-%d", s, n)
		}
		return s
	}
	missing := func(v string) bool { return slices.Contains(d.Missing, v) }
	for _, in := range d.Installations {
		base := unique("i-" + slug(in.ID))
		sec := Section{Installation: in, Anchor: base}
		p.Banners = append(p.Banners, banner(in, "#"+base, d.GeneratedAt))
		g := DisclosureGroup{Inst: in.ID, Anchor: unique(base + "-disclosures")}
		sec.DisclosuresAnchor = g.Anchor
		for _, x := range in.Disclosures {
			g.Items = append(g.Items, DisclosureItem{Anchor: unique("d-" + strings.TrimPrefix(base, "i-") + "-" + slug(x.Rule)), Disclosure: x})
			p.Total++
			switch x.Severity {
			case "alarm":
				p.Alarms++
			case "warning":
				p.Warnings++
			}
		}
		if in.Served {
			sec.Facts = facts(in)
			sec.Turns = turnRows(in)
			// Every id of the page is unique, whatever the installation
			// names (slug maps every other character to '-').
			sec.Charts = []Chart{
				fanoutChart(in, unique(base+"-fanout"), missing("fanout_by_turn")),
				trendChart(in, unique(base+"-trend"), missing("fanout_by_period")),
				contextsChart(in, unique(base+"-contexts"), missing("contexts_per_card")),
				usageCountChart(in, unique(base+"-usage")),
				usageTokensChart(in, unique(base+"-tokens")),
				healthChart(in, unique(base+"-health"), missing("writer_health_by_period")),
			}
			for i := range sec.Charts {
				c := &sec.Charts[i]
				for _, a := range c.reading {
					for _, r := range readingRules {
						if r.Anchor == a {
							c.Reading = append(c.Reading, Link{Href: "#" + a, Label: r.Name})
						}
					}
				}
				for _, r := range c.rules {
					for j := range g.Items {
						it := &g.Items[j]
						if it.Rule != r {
							continue
						}
						c.Rules = append(c.Rules, Link{Href: "#" + it.Anchor, Label: it.Rule, Class: it.Severity})
						it.AppliesTo = append(it.AppliesTo, Link{Href: "#" + c.ID, Label: c.Title})
					}
				}
			}
		} else {
			sec.Note = "This installation has runs but none is served: nothing of it is in the current views, so it has no charts. See the runs above."
		}
		p.Sections = append(p.Sections, sec)
		p.Disclosures = append(p.Disclosures, g)
	}
	return page.Execute(w, p)
}

// writerQuiet reports whether a healthy writer's newest subagent row is
// older than WriterStaleAfter at now.
func writerQuiet(w *WriterState, now time.Time) bool {
	return w != nil && models.QuietWriter(models.HealthStatus(w.Status), w.LastObserved, now, WriterStaleAfter)
}

func hours(h float64) string {
	if h < 48 {
		return fmt.Sprintf("%.1f h", h)
	}
	return fmt.Sprintf("%.1f days (%.0f h)", h/24, h)
}

// WriterStaleAfter is how old the newest subagent row of a healthy writer
// may be, when the report is generated, before its banner says that
// nothing shows the writer still works: the default of 'kandev-extract
// health' (load.DefaultStaleAfter), which reports such a writer stale.
const WriterStaleAfter = 36 * time.Hour

// banner says how fresh an installation's data is: its age, whether the
// latest attempt failed (the data is then older than the last attempt),
// the runs that are not served, and, for current data, whether its
// healthy writer has produced anything lately (as of now).
func banner(in *Installation, anchor string, now time.Time) Banner {
	b := Banner{Inst: in.ID, Anchor: anchor, NotServed: in.NotServed, NotServedAll: in.NotServedTotal}
	f := in.Fresh
	switch {
	case !in.Served:
		b.Level, b.Headline = "failed", "No served run: nothing of this installation is in the report"
		return b
	case f == nil:
		b.Level, b.Headline = "stale", "Freshness unknown: this warehouse has no current_runs view"
		b.Facts = append(b.Facts, Fact{"Snapshot", ts(in.SnapshotAt)})
		return b
	}
	age := "unknown"
	if f.AgeHours != nil {
		age = hours(*f.AgeHours)
	}
	switch {
	case f.LatestFailed:
		b.Level, b.Headline = "failed", "The latest attempt did not become current: the data shown is from an earlier run (snapshot "+age+" old)"
	case f.Stale:
		b.Level, b.Headline = "stale", "Stale data: the snapshot is "+age+" old, older than the staleness threshold"
	case writerQuiet(in.Writer, now):
		b.Level, b.Headline = "stale", "Nothing new from the writer: the snapshot is "+age+" old, but the newest subagent row is "+hours(now.Sub(*in.Writer.LastObserved).Hours())+
			" old, older than "+hours(WriterStaleAfter.Hours())+": nothing shows Kandev's subagent writer still works (is Kandev in use?); writer health counts only what was written"
	default:
		b.Level, b.Headline = "ok", "The snapshot is "+age+" old and the latest attempt is the one shown"
	}
	b.Facts = append(b.Facts, Fact{"Data", fmt.Sprintf("run %s, snapshot %s (%s old when this report was generated)", f.RunID, ts(f.SnapshotAt), age)})
	if f.LatestRunID != "" {
		v := fmt.Sprintf("run %s, %s", f.LatestRunID, orNone(f.LatestStatus))
		if f.LatestFinishedAt != nil {
			v += ", finished " + ts(*f.LatestFinishedAt)
		}
		b.Facts = append(b.Facts, Fact{"Latest attempt", v})
	}
	if f.LatestFailed && f.LatestError != "" {
		b.Facts = append(b.Facts, Fact{"Its error", f.LatestError})
		// The list of runs not served names it without repeating the error.
		b.NotServed = append([]RunProblem(nil), b.NotServed...)
		for i := range b.NotServed {
			if b.NotServed[i].RunID == f.LatestRunID {
				b.NotServed[i].Why = "the latest attempt: its error is above"
			}
		}
	}
	return b
}

// facts are the summary lines at the top of an installation's section.
func facts(in *Installation) []Fact {
	out := []Fact{
		{"Activation state", in.ActivationState},
		{"capture_since", tsp(in.CaptureSince)},
		{"Snapshot", ts(in.SnapshotAt) + " (run " + in.RunID + ")"},
	}
	if in.HasSubagentTable {
		out = append(out, Fact{"Subagent rows", fmt.Sprintf("%s (%s live, %s backfill)", inum(in.Subagents), inum(in.SubagentsLive), inum(in.SubagentsBackfill))})
	} else {
		out = append(out, Fact{"Subagent rows", "unknown: the store has no subagent table (not zero)"})
	}
	if r := in.Range; r != nil {
		out = append(out, Fact{"Time range of the data", fmt.Sprintf("turns started %s to %s (%s turns); subagent rows observed %s to %s; nothing after the snapshot %s can be in it",
			day(r.FirstTurn), day(r.LastTurn), inum(r.Turns), day(r.FirstSubagent), day(r.LastSubagent), day(&r.SnapshotAt))})
	}
	return out
}

// slug makes a name safe for an id: every character but ASCII letters and
// digits becomes '_', so '-' only ever separates the parts of an id and
// ids derived from two installations cannot collide (two names with the
// same slug are told apart by a numeric suffix).
func slug(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func tsp(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format("2006-01-02 15:04:05.999999 UTC")
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"st":  storeHTML,
	"tsp": func(t *time.Time) string { return tsp(t) },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1000px;padding:1rem 1.5rem;color:#1a1a1a;background:#ffffff;line-height:1.4}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.3rem;border-bottom:2px solid #1f5fa8;padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.05rem;margin:.2rem 0 .4rem}
a{color:#174a85}
figure{margin:1.2rem 0;padding:.8rem;border:1px solid #d0d0d0;border-radius:6px;background:#ffffff}
svg.chart{width:100%;height:auto;display:block;overflow:hidden}
figcaption{font-size:.9rem;color:#333333;margin-top:.5rem}
.applies{font-size:.85rem;color:#444444;margin:.3rem 0 0}
.applies a{margin-right:.4rem}
.meta{font-size:.9rem;color:#444444}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem;font-size:.9rem;margin:.4rem 0}dt{font-weight:bold}dd{margin:0}
ul.legend{list-style:none;margin:0 0 .4rem;padding:0;display:flex;flex-wrap:wrap;gap:.2rem 1.1rem;font-size:.85rem}
ul.legend li{display:flex;align-items:center}
.sw{display:inline-block;width:14px;height:14px;margin-right:.35rem;flex:none;box-sizing:border-box;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.sw-exact{background:#1f5fa8}.sw-contexts{background:#2a9d8f}.sw-lowerflat{background:#e07b00}
.sw-lower{background:#e07b00;border-right:5px solid #8a4b00}
.sw-unknown{background:repeating-linear-gradient(45deg,#8c8c8c 0 2px,#f0f0f0 2px 4px)}
.sw-small{background:repeating-linear-gradient(45deg,#1f5fa8 0 2px,#ffffff 2px 4px);border:1px solid #1f5fa8}
.sw-partial{border:1.5px dashed #777777}
.sw-gap{background:repeating-linear-gradient(45deg,#d4d4d4 0 2px,#fafafa 2px 4px)}
.sw-point{background:#1f5fa8;border-radius:50%;width:9px;height:9px;margin:0 .6rem 0 .2rem}
.sw-hollow{border:1.5px dashed #1f5fa8;border-radius:50%;width:10px;height:10px;margin:0 .55rem 0 .15rem}
.sw-short{border:2px solid #c62828;border-radius:50%;width:12px;height:12px}.sw-excess{background:#6a3d9a;border-radius:50%;width:8px;height:8px}
#freshness .fresh{border-left:6px solid #2e7d32;background:#f1f8f1;padding:.5rem .8rem;margin:.5rem 0;border-radius:4px}
#freshness .fresh-stale{border-color:#b26a00;background:#fff6e5}
#freshness .fresh-failed{border-color:#c62828;background:#fdecec}
#freshness .fresh strong{display:block}
#freshness ul{margin:.2rem 0 0 1.1rem;padding:0;font-size:.9rem}
.level{font-weight:bold;text-transform:uppercase;font-size:.8rem;margin-right:.4rem}
details.data{font-size:.85rem;margin-top:.4rem}
details.data table{border-collapse:collapse;margin-top:.3rem}
details.data th,details.data td{border:1px solid #d0d0d0;padding:.15rem .4rem;text-align:left;vertical-align:top}
.reading dt{margin-top:.2rem}
.disclosures li{margin:.3rem 0}.disclosures .alarm strong{color:#a01818}.disclosures .warning strong{color:#8a4b00}
.applies-to{font-size:.85rem;color:#444444}
.missing{color:#8a4b00}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p class="meta">Generated {{.GeneratedAt}} from the warehouse's current views: the latest served run of each installation (writer health over every retained run).
{{.Total}} disclosures apply ({{.Alarms}} alarms, {{.Warnings}} warnings): they are listed once, under <a href="#disclosures">Disclosures</a>, and each chart links to the ones that apply to it. How to read the charts: <a href="#reading">Reading rules</a>.</p>
{{if .Missing}}<p class="missing">This warehouse was built by an older kandev-extract and lacks {{range $i, $m := .Missing}}{{if $i}}, {{end}}{{$m}}{{end}}: the parts that need them say so. Run kandev-extract again.</p>{{end}}
<section id="freshness" aria-labelledby="freshness-h">
<h2 id="freshness-h">Freshness</h2>
{{range .Banners}}<div class="fresh fresh-{{.Level}}" role="{{if eq .Level "ok"}}status{{else}}alert{{end}}" data-level="{{.Level}}">
<strong><span class="level">{{if eq .Level "ok"}}current{{else if eq .Level "stale"}}stale{{else}}failed{{end}}</span><a href="{{.Anchor}}">Installation {{st .Inst}}</a>: {{.Headline}}</strong>
{{if .Facts}}<dl>{{range .Facts}}<dt>{{.Key}}</dt><dd>{{st .Value}}</dd>{{end}}</dl>{{end}}
{{if .NotServed}}<p>{{.NotServedAll}} run(s) of this installation are not served{{if gt .NotServedAll (len .NotServed)}} (the latest {{len .NotServed}} below){{end}}:</p>
<ul class="notserved">{{range .NotServed}}<li>run {{st .RunID}}: {{st .Status}}{{with .FinishedAt}}, finished {{tsp .}}{{end}}{{if .Why}} — {{st .Why}}{{end}}</li>{{end}}</ul>{{end}}
</div>
{{end}}
</section>
<nav aria-label="Contents"><p class="meta">Installations: {{range $i, $s := .Sections}}{{if $i}} · {{end}}<a href="#{{$s.Anchor}}">{{st $s.ID}}</a>{{end}}</p></nav>
</header>
<main>
{{range .Sections}}
<section id="{{.Anchor}}" aria-labelledby="{{.Anchor}}-h">
<h2 id="{{.Anchor}}-h">Installation {{st .ID}}</h2>
{{if .Facts}}<dl>{{range .Facts}}<dt>{{.Key}}</dt><dd>{{st .Value}}</dd>{{end}}</dl>{{end}}
{{if .Note}}<p class="missing">{{.Note}}</p>{{end}}
<p class="meta">Disclosures for this installation: <a href="#{{.DisclosuresAnchor}}">{{len .Disclosures}}, listed under Disclosures</a>.</p>
{{range .Charts}}
<figure id="{{.ID}}" class="figure" aria-labelledby="{{.ID}}-h">
<h3 id="{{.ID}}-h">{{.Title}}</h3>
{{if .SVG}}{{if .Legend}}<ul class="legend" aria-label="Legend">{{range .Legend}}<li><span class="sw {{.Swatch}}" aria-hidden="true"></span>{{.Label}}</li>{{end}}</ul>{{end}}
{{.SVG}}{{end}}
<figcaption>{{.Caption}}
<p class="applies">Reading rules: {{range .Reading}}<a href="{{.Href}}">{{.Label}}</a>{{end}}{{if .Rules}} · Disclosures that apply: {{range .Rules}}<a class="rule {{.Class}}" href="{{.Href}}">{{.Label}}</a>{{end}}{{end}}</p></figcaption>
{{with .Table}}<details class="data"><summary>The numbers (table)</summary><table><thead><tr>{{range .Head}}<th scope="col">{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td>{{st .}}</td>{{end}}</tr>{{end}}</tbody></table></details>{{end}}
</figure>
{{end}}
{{if .Turns}}<figure id="{{.Anchor}}-turns" class="figure" aria-labelledby="{{.Anchor}}-turns-h">
<h3 id="{{.Anchor}}-turns-h">Top turns by fan-out, and why each figure is what it is</h3>
<table class="turns"><thead><tr><th scope="col">turn</th><th scope="col">session</th><th scope="col">started (UTC)</th><th scope="col">fan-out</th><th scope="col">completeness</th><th scope="col">reasons</th></tr></thead>
<tbody>{{range .Turns}}<tr><td>{{st .TurnID}}</td><td>{{st .SessionID}}</td><td>{{.Started}}</td><td>{{.Figure}}</td><td>{{.Completeness}}</td><td>{{if .Reasons}}{{range $i, $l := .Reasons}}{{if $i}}, {{end}}<a class="reason" href="{{$l.Href}}">{{$l.Label}}</a>{{end}}{{else if eq .Completeness "complete"}}— (every rule of complete holds){{else}}not recorded (an older run){{end}}</td></tr>{{end}}</tbody></table>
<figcaption>The turns with the largest known fan-out: exact where complete, "≥ n" where only a lower bound is known. Each reason links to its meaning under <a href="#reasons">Reason codes</a>; <code>kandev-extract inspect turn ID</code> shows the evidence (ids and counts).</figcaption>
</figure>{{end}}
</section>
{{else}}
<p>The warehouse has no installation.</p>
{{end}}
<section id="reading" aria-labelledby="reading-h">
<h2 id="reading-h">Reading rules</h2>
<dl class="reading">{{range .Reading}}<dt id="{{.Anchor}}">{{.Name}}</dt><dd>{{.Text}}</dd>{{end}}</dl>
</section>
<section id="reasons" aria-labelledby="reasons-h">
<h2 id="reasons-h">Reason codes</h2>
<p>Why a turn's fan-out is a lower bound or unknown: every rule that applied, in this order. A complete turn has none.</p>
<dl class="reading">{{range .Reasons}}<dt id="{{.Anchor}}">{{.Name}}</dt><dd>{{.Text}}</dd>{{end}}</dl>
</section>
<section id="disclosures" class="disclosures" aria-labelledby="disclosures-h">
<h2 id="disclosures-h">Disclosures</h2>
<p class="meta">From the warehouse's disclosures view, each once; the charts they apply to link here.</p>
{{range .Disclosures}}<h3 id="{{.Anchor}}">Installation {{st .Inst}}</h3>
{{if .Items}}<ul>{{range .Items}}<li id="{{.Anchor}}" class="disclosure {{.Severity}}" data-rule="{{.Rule}}"><strong>{{st .Rule}}</strong> ({{.Severity}}): <span class="text">{{st .Text}}</span>
<span class="applies-to">Applies to: {{range $i, $l := .AppliesTo}}{{if $i}}, {{end}}<a href="{{$l.Href}}">{{$l.Label}}</a>{{else}}the installation as a whole{{end}}.</span></li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
{{end}}
</section>
</main>
</body>
</html>
`))
