package report_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
	"github.com/kandev/kandev-extract/report"
)

// The bidi installation's store carries these (U+202E right-to-left
// override, U+2066 left-to-right isolate); the fresh store's path carries
// bidiPath, so the error of the run that cannot find it does too.
const (
	bidiType = "ab\u202Ecd"
	bidiStep = "Rev\u2066iew"
	bidiPath = "kandev\u202Egnp.db"
)

var (
	charts = []string{"fanout", "trend", "contexts", "usage", "tokens", "health"}
	insts  = []string{"bidi", "fresh", "old", "up"}
)

type fixture struct {
	wh, db        string
	failedRun     string
	freshStoreErr string
}

// warehouse builds a warehouse with four installations: "up" (live and
// backfill rows, lower-bound and unknown turns) extracted twice, "fresh"
// (live only) whose latest attempt then fails because its store is gone,
// "old" (a Kandev build without the subagent table: everything unknown)
// and "bidi" (fresh's store with bidi controls in a subagent type and a
// workflow step name).
func warehouse(t *testing.T) fixture {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	fresh := filepath.Join(t.TempDir(), bidiPath)
	copyFile(t, testkit.Fixture(t, "fresh-activated.db"), fresh)
	bidi := testkit.CopyFixture(t, "fresh-activated.db")
	testkit.SQLiteExec(t, bidi,
		fmt.Sprintf(`UPDATE task_session_subagents SET subagent_type = %s WHERE subagent_type = 'Plan'`, sqlText(bidiType)),
		fmt.Sprintf(`UPDATE workflow_steps SET name = %s WHERE name = 'Review'`, sqlText(bidiStep)))
	fx := testkit.Fixture
	run := func(ins ...pipeline.Installation) pipeline.Result {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: ins, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		mem.AssertSize(t, 0)
		return res
	}
	for _, res := range []pipeline.Result{
		run(pipeline.Installation{Name: "up", Source: fx(t, "upgraded-backfill.db")}, pipeline.Installation{Name: "fresh", Source: fresh},
			pipeline.Installation{Name: "old", Source: fx(t, "pre-feature.db")}, pipeline.Installation{Name: "bidi", Source: bidi}),
		run(pipeline.Installation{Name: "up", Source: fx(t, "upgraded-backfill.db")}),
	} {
		for _, o := range res.Outcomes {
			if o.Err != nil {
				t.Fatalf("%s: %v", o.Installation, o.Err)
			}
		}
	}
	// The latest attempt of fresh fails: its store is gone.
	if err := os.Rename(fresh, fresh+".gone"); err != nil {
		t.Fatal(err)
	}
	res := run(pipeline.Installation{Name: "fresh", Source: fresh})
	if len(res.Outcomes) != 1 || res.Outcomes[0].Err == nil {
		t.Fatalf("the run on a missing store did not fail: %v", res.Outcomes)
	}
	f := fixture{wh: wh, db: filepath.Join(wh, load.DatabaseFile), failedRun: res.Outcomes[0].RunID}
	f.freshStoreErr = testkit.One(t, testkit.Duck(t, wh), `SELECT latest_attempt_error FROM current_runs WHERE installation_id = 'fresh'`)
	return f
}

func sqlText(s string) string {
	var parts []string
	for _, r := range s {
		parts = append(parts, fmt.Sprintf("char(%d)", r))
	}
	return strings.Join(parts, " || ")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func render(t *testing.T, db string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.Write(context.Background(), db, &buf, time.Now()); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func figure(page, id string) string {
	i := strings.Index(page, `<figure id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</figure>")
	return page[i : i+j]
}

var (
	barRe   = regexp.MustCompile(`<rect [^>]*class="bar"[^>]*>`)
	dataRe  = regexp.MustCompile(`data-([a-z]+)="([^"]*)"`)
	hrefRe  = regexp.MustCompile(`href="#([^"]+)"`)
	idRe    = regexp.MustCompile(` id="([^"]+)"`)
	bidiRun = regexp.MustCompile("[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]")
)

// bars returns the data attributes of every bar of a figure.
func bars(fig string) []map[string]string {
	var out []map[string]string
	for _, r := range barRe.FindAllString(fig, -1) {
		m := map[string]string{}
		for _, kv := range dataRe.FindAllStringSubmatch(r, -1) {
			m[kv[1]] = html.UnescapeString(kv[2])
		}
		out = append(out, m)
	}
	return out
}

// sumBy sums a data attribute of the bars of a series, by another.
func sumBy(bs []map[string]string, series, by, what string) map[string]int64 {
	out := map[string]int64{}
	for _, b := range bs {
		if b["series"] != series {
			continue
		}
		n, _ := strconv.ParseInt(b[what], 10, 64)
		out[b[by]] += n
	}
	return out
}

func rowsMap(t *testing.T, db *sql.DB, q string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range testkit.RowsOf(t, db, q) {
		k, v, _ := strings.Cut(r, "|")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", q, r)
		}
		out[k] = n
	}
	return out
}

func sameMap(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: drawn %v, warehouse %v", what, got, want)
	}
}

// TestReportContent checks the page against the warehouse: every number a
// chart draws is the warehouse's, exact and lower-bound turns apart,
// unknown counted apart and never as zero, like-for-like averages with
// their n, small samples marked, disclosures once, the failed latest
// attempt in the banner, store text unable to reorder the page.
func TestReportContent(t *testing.T) {
	fx := warehouse(t)
	page := render(t, fx.db)
	db := testkit.Duck(t, fx.wh)

	// Each installation's top turns by fan-out, with the reason codes
	// behind each figure, each code linked to its meaning.
	for _, in := range insts {
		fig := figure(page, "i-"+in+"-turns")
		want := testkit.RowsOf(t, db, `SELECT turn_id, CASE WHEN fanout IS NOT NULL THEN fanout::VARCHAR WHEN fanout_completeness = 'unknown' THEN 'unknown (not 0)'
				ELSE '≥ ' || fanout_lower_bound END, fanout_completeness, array_to_string(completeness_reasons, ' ')
			FROM (SELECT *, row_number() OVER (ORDER BY coalesce(fanout, fanout_lower_bound) DESC, subagents_observed DESC, turn_id) AS rank
				FROM fanout_by_turn WHERE installation_id = ?) WHERE rank <= 15`, in)
		var got []string
		for _, row := range regexp.MustCompile(`(?s)<tr><td><bdi>([^<]*)</bdi></td><td><bdi>[^<]*</bdi></td><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td><td>(.*?)</td></tr>`).FindAllStringSubmatch(fig, -1) {
			var codes []string
			for _, l := range regexp.MustCompile(`<a class="reason" href="#reason-([a-z_]+)">([a-z_]+)</a>`).FindAllStringSubmatch(row[4], -1) {
				if l[1] != l[2] || !strings.Contains(page, `<dt id="reason-`+l[1]+`">`) {
					t.Errorf("%s: reason link %v has no target", in, l)
				}
				codes = append(codes, l[1])
			}
			got = append(got, strings.Join([]string{row[1], html.UnescapeString(row[2]), row[3], strings.Join(codes, " ")}, "|"))
		}
		slices.Sort(got)
		testkit.EqualSets(t, in+" top turns", got, want)
		if len(want) == 0 {
			t.Errorf("%s: no turns to show", in)
		}
	}

	// Self-contained: no script, no URL of any kind, a CSP that forbids loads.
	for _, bad := range []string{"<script", "://", "<link", "@import", "url(http"} {
		if strings.Contains(page, bad) {
			t.Errorf("report contains %q: not self-contained", bad)
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`) {
		t.Error("no Content-Security-Policy forbidding external loads")
	}
	if len(page) > 600_000 {
		t.Errorf("report is %d bytes: keep it small", len(page))
	}
	// Every chart of every installation: titled SVG with a description,
	// an HTML legend, a caption, and its numbers as a table.
	for _, in := range insts {
		for _, c := range charts {
			id := "i-" + in + "-" + c
			fig := figure(page, id)
			if fig == "" {
				t.Errorf("figure %s missing", id)
				continue
			}
			if in == "old" && (c == "usage" || c == "tokens") { // no subagent table: nothing to draw, and it says why
				if strings.Contains(fig, "<svg") || !strings.Contains(fig, "unknown, not zero") {
					t.Errorf("figure %s draws a store without a subagent table, or does not say its usage is unknown", id)
				}
				continue
			}
			for _, want := range []string{`<svg id="` + id + `-svg" class="chart" role="img" aria-labelledby="` + id + `-svg-t ` + id + `-svg-d"`,
				`<title id="` + id + `-svg-t">`, `<desc id="` + id + `-svg-d">`, `<ul class="legend"`, "<figcaption>", "<table>"} {
				if !strings.Contains(fig, want) {
					t.Errorf("figure %s lacks %s", id, want)
				}
			}
		}
	}
	// Every internal link resolves.
	ids := map[string]bool{}
	for _, m := range idRe.FindAllStringSubmatch(page, -1) {
		ids[m[1]] = true
	}
	for _, m := range hrefRe.FindAllStringSubmatch(page, -1) {
		if !ids[m[1]] {
			t.Errorf("link to #%s, which the page does not have", m[1])
		}
	}

	// Fan-out: the exact series is the complete turns of fanout_by_turn,
	// k by k, on a continuous axis (empty slots present); the ≥k series
	// the lower-bound turns; unknown turns apart.
	// The lower bound of a turn: fanout_lower_bound where the warehouse
	// has it (rows and messages together), else the rows observed.
	lowerK := "subagents_observed"
	if testkit.One(t, db, `SELECT count(*) FROM duckdb_columns() WHERE table_name = 'fanout_by_turn' AND column_name = 'fanout_lower_bound'`) == "1" {
		lowerK = "coalesce(fanout_lower_bound, subagents_observed)"
	}
	for _, in := range insts {
		bs := bars(figure(page, "i-"+in+"-fanout"))
		exact := sumBy(bs, "exact", "k", "turns")
		wantExact := rowsMap(t, db, `SELECT fanout, count(*) FROM fanout_by_turn WHERE installation_id = '`+in+`' AND fanout_completeness = 'complete' GROUP BY ALL`)
		lower := sumBy(bs, "lower-bound", "k", "turns")
		wantLower := rowsMap(t, db, `SELECT `+lowerK+`, count(*) FROM fanout_by_turn WHERE installation_id = '`+in+`' AND fanout_completeness = 'lower_bound' GROUP BY ALL`)
		maxK := int64(0)
		for _, m := range []map[string]int64{wantExact, wantLower} {
			for k := range m {
				n, _ := strconv.ParseInt(k, 10, 64)
				maxK = max(maxK, n)
			}
		}
		// Every k from 0 to the largest has its slot: empty buckets are
		// zero-height bars (a lower bound starts at 1: a turn with
		// evidence had at least one).
		for k := int64(0); k <= maxK; k++ {
			if _, ok := wantExact[fmt.Sprint(k)]; !ok && len(wantExact) > 0 {
				wantExact[fmt.Sprint(k)] = 0
			}
			if _, ok := wantLower[fmt.Sprint(k)]; !ok && len(wantLower) > 0 && k > 0 {
				wantLower[fmt.Sprint(k)] = 0
			}
		}
		sameMap(t, in+" exact fan-out", exact, wantExact)
		sameMap(t, in+" lower-bound fan-out", lower, wantLower)
		sameMap(t, in+" unknown fan-out", sumBy(bs, "unknown", "series", "turns"),
			map[string]int64{"unknown": rowsMap(t, db, `SELECT 'unknown', count(*) FROM fanout_by_turn WHERE installation_id = '`+in+`' AND fanout_completeness = 'unknown'`)["unknown"]})
	}
	if got := sumBy(bars(figure(page, "i-up-fanout")), "lower-bound", "series", "turns")["lower-bound"]; got == 0 {
		t.Error("up has no lower-bound turn drawn: the checks above prove little")
	}
	if fig := figure(page, "i-up-fanout"); !strings.Contains(fig, `class="atleast"`) || !strings.Contains(fig, ">≥1<") {
		t.Error("up's lower bounds are not marked as 'at least k'")
	}
	if !strings.Contains(figure(page, "i-fresh-fanout"), `data-series="exact" data-k="7" data-turns="0"`) {
		t.Error("fresh's empty bucket k=7 is not a zero-height slot")
	}
	if fig := figure(page, "i-old-fanout"); strings.Contains(fig, `data-series="exact"`) || !strings.Contains(fig, "No complete turn") {
		t.Error("old has no complete turn, yet its exact distribution is drawn (unknown as zero)")
	}

	// Fan-out over time: each week's stack is fanout_by_period's counts,
	// and the data's time range is stated.
	for _, in := range insts {
		bs := bars(figure(page, "i-"+in+"-trend"))
		for series, col := range map[string]string{"complete": "turns_complete", "lower-bound": "turns_lower_bound", "unknown": "turns_unknown"} {
			want := rowsMap(t, db, `SELECT strftime(period_start, '%Y-%m-%d'), `+col+` FROM fanout_by_period WHERE installation_id = '`+in+`' AND grain = 'week' AND `+col+` > 0`)
			sameMap(t, in+" trend "+series, sumBy(bs, series, "period", "turns"), want)
		}
		last := testkit.One(t, db, `SELECT strftime(last_turn_started_at AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M UTC') FROM data_time_range WHERE installation_id = '`+in+`'`)
		if !strings.Contains(figure(page, "i-"+in+"-trend"), "to "+last) {
			t.Errorf("%s trend does not state the data's range (last turn %s)", in, last)
		}
	}

	// Contexts per card: averages side by side are over the same cards,
	// each with its n.
	allComplete := map[string]bool{}
	for _, r := range testkit.RowsOf(t, db, `SELECT installation_id, bool_and(contexts_completeness = 'complete') FROM contexts_per_card GROUP BY ALL`) {
		f := strings.Split(r, "|")
		allComplete[f[0]] = f[1] == "true"
	}
	for _, r := range testkit.RowsOf(t, db, `SELECT installation_id, coalesce(workflow_step_name, workflow_step_id, '(no step)'),
			count(*) FILTER (WHERE contexts_completeness = 'complete'),
			printf('%.4f', avg(sessions) FILTER (WHERE contexts_completeness = 'complete')),
			printf('%.4f', avg(contexts) FILTER (WHERE contexts_completeness = 'complete')),
			count(*), printf('%.4f', avg(sessions)), printf('%.4f', avg(contexts_observed))
		FROM contexts_per_card GROUP BY installation_id, workflow_step_id, workflow_step_name`) {
		f := strings.Split(r, "|")
		got := map[string]string{}
		for _, b := range bars(figure(page, "i-"+f[0]+"-contexts")) {
			if b["cat"] == shown(f[1]) {
				got[b["series"]] = trim(b["value"]) + "/" + b["n"]
			}
		}
		want := map[string]string{}
		if f[2] != "0" {
			want["sessions-complete"], want["contexts-complete"] = trim(f[3])+"/"+f[2], trim(f[4])+"/"+f[2]
		}
		if !allComplete[f[0]] { // else the all-cards panel would repeat the exact one
			want["sessions-all"], want["contexts-observed"] = trim(f[6])+"/"+f[5], trim(f[7])+"/"+f[5]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("contexts %s %s: drawn %v, warehouse %v", f[0], f[1], got, want)
		}
	}

	// Small samples: an average over fewer than 10 is marked, others not.
	tokens := bars(figure(page, "i-fresh-tokens"))
	for _, b := range tokens {
		n, _ := strconv.Atoi(b["n"])
		if (b["small"] == "1") != (n < report.SmallSample) {
			t.Errorf("fresh tokens %s %s: n=%d, small mark %q", b["cat"], b["series"], n, b["small"])
		}
	}
	if !strings.Contains(figure(page, "i-fresh-tokens"), `data-cat="test-runner" data-value=`) || !strings.Contains(page, `data-cat="test-runner"`) {
		t.Error("fresh tokens chart lacks test-runner")
	}
	smallMarks := 0
	for _, in := range insts {
		for _, c := range []string{"contexts", "tokens"} {
			smallMarks += strings.Count(figure(page, "i-"+in+"-"+c), `data-small="1"`)
		}
	}
	if smallMarks == 0 {
		t.Error("no small-sample mark although fixtures have n < 10 (fresh test-runner tokens: n=8)")
	}
	if !strings.Contains(figure(page, "i-fresh-tokens"), "no live row reported tokens (3 rows): unknown, not 0") {
		t.Error("the fresh rows without a type and without tokens are not shown as unknown")
	}

	// Disclosures: each exactly once, in the Disclosures section, and the
	// charts link to the ones that apply.
	section := page[strings.Index(page, `<section id="disclosures"`):]
	texts := map[string]int{} // bidi's store is a copy of fresh's: the same texts, each once per installation
	for _, r := range testkit.RowsOf(t, db, `SELECT text FROM disclosures`) {
		texts[r]++
	}
	for _, r := range testkit.RowsOf(t, db, `SELECT installation_id || '|' || rule || '|' || text FROM disclosures`) {
		f := strings.SplitN(r, "|", 3)
		text := html.EscapeString(shown(f[2]))
		if f[1] == "stale_data" { // its text says the data's age when queried
			text = text[:strings.Index(text, " h old")]
			text = text[:strings.LastIndex(text, "(")]
		}
		want := texts[f[2]]
		if f[1] == "stale_data" {
			want = 1
		}
		if n := strings.Count(page, text); n != want {
			t.Errorf("%s disclosure %s appears %d times, want %d", f[0], f[1], n, want)
		}
		if !strings.Contains(section, text) {
			t.Errorf("%s disclosure %s is not in the Disclosures section", f[0], f[1])
		}
	}
	for _, c := range []struct{ fig, rule string }{
		{"i-up-fanout", "backfill_provenance"}, {"i-up-usage", "backfill_provenance"}, {"i-old-fanout", "feature_absent"},
		{"i-old-health", "feature_absent"}, {"i-fresh-fanout", "stale_data"},
	} {
		if !strings.Contains(figure(page, c.fig), `href="#d-`+strings.Split(c.fig, "-")[1]+`-`+c.rule+`"`) {
			t.Errorf("figure %s does not link to its %s disclosure", c.fig, c.rule)
		}
	}
	if n := strings.Count(page, "<figcaption>"); n != len(insts)*(len(charts)+1) { // +1: the top turns
		t.Errorf("%d captions", n)
	}

	// Freshness: fresh's latest attempt failed (its store is gone), with
	// the error and the run not served; bidi's data is current but its
	// writer, healthy, wrote its newest subagent row months ago (the
	// fixture's), which 'kandev-extract health' calls stale; up's writer
	// is not healthy and old has no subagent table: their writer health
	// says so, and their data is current.
	banner := page[strings.Index(page, `<section id="freshness"`):strings.Index(page, `</section>`)]
	for _, in := range insts {
		level := "ok"
		switch in {
		case "fresh":
			level = "failed"
		case "bidi":
			level = "stale"
		}
		if !regexp.MustCompile(`data-level="` + level + `">\s*<strong><span class="level">[a-z]+</span><a href="#i-` + in + `">`).MatchString(banner) {
			t.Errorf("%s banner is not %s", in, level)
		}
	}
	bidiLast := testkit.One(t, db, `SELECT strftime(last_observed_at, '%Y-%m-%d %H:%M:%S') FROM writer_health WHERE installation_id = 'bidi' AND status = 'healthy'`)
	if bidiLast == "" || !strings.Contains(banner, `<a href="#i-bidi">Installation <bdi>bidi</bdi></a>: Nothing new from the writer: the snapshot is `) ||
		!strings.Contains(banner, "nothing shows Kandev&#39;s subagent writer still works") {
		t.Errorf("bidi's banner does not say its healthy writer (newest row %s) has written nothing lately", bidiLast)
	}
	if !strings.Contains(banner, "The latest attempt did not become current") || !strings.Contains(banner, fx.failedRun) ||
		!strings.Contains(banner, html.EscapeString(shown(fx.freshStoreErr))) {
		t.Errorf("the banner lacks fresh's failed attempt %s: %s", fx.failedRun, fx.freshStoreErr)
	}
	if !strings.Contains(banner, `<ul class="notserved"><li>run <bdi>`+fx.failedRun+`</bdi>: <bdi>failed</bdi>`) {
		t.Error("the failed run is not listed as not served")
	}

	// Store text: no bidi control reaches the page; each is shown as
	// its code point, isolated in <bdi> in HTML.
	if m := bidiRun.FindString(page); m != "" {
		t.Errorf("the page contains a bidi control U+%04X", []rune(m)[0])
	}
	for _, want := range []string{"<bdi>ab⟦U+202E⟧cd</bdi>", ">ab⟦U+202E⟧cd</text>", "Rev⟦U+2066⟧iew", "kandev⟦U+202E⟧gnp.db"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// shown is store text as the page shows it: bidi controls as code points.
func shown(s string) string {
	return bidiRun.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf("⟦U+%04X⟧", []rune(m)[0]) })
}

func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// ---- Chromium -----------------------------------------------------------------

// chromium finds Debian's chromium; skips locally, fails under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing under CI=true (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is missing (apt-get install chromium); skipped locally, fails under CI=true")
	return ""
}

// headless runs chromium on a local file with the given mode flags and
// returns stdout and the console messages it logged.
func headless(t *testing.T, bin, file string, mode ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--hide-scrollbars"}, mode...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", mode, err, errb.String())
	}
	var console []string
	for _, line := range strings.Split(errb.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return out.String(), console
}

// probeJS measures the laid-out page: every pair of chart labels that
// overlap, labels outside their chart, legends touching a chart; the bars'
// sums per figure and series; and whether text reads left to right where
// store text with bidi controls sits in it.
const probeJS = `
(function () {
  const res = {charts: 0, texts: 0, overlaps: [], outside: [], legend: [], sums: {}, order: {}, control: null, bidiChars: 0};
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const fig of document.querySelectorAll('figure')) {
    const svg = fig.querySelector('svg.chart');
    if (!svg) continue;
    res.charts++;
    const sb = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].map(t => ({s: t.textContent, r: t.getBoundingClientRect()}));
    res.texts += texts.length;
    for (const a of texts) {
      if (a.r.left < sb.left - 0.5 || a.r.right > sb.right + 0.5 || a.r.top < sb.top - 0.5 || a.r.bottom > sb.bottom + 0.5) res.outside.push(fig.id + ': ' + a.s);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      if (hit(texts[i].r, texts[j].r)) res.overlaps.push(fig.id + ': "' + texts[i].s + '" / "' + texts[j].s + '"');
    }
    const lg = fig.querySelector('ul.legend');
    if (lg) {
      const lr = lg.getBoundingClientRect();
      if (hit(lr, sb)) res.legend.push(fig.id + ': the legend overlaps the chart');
      for (const a of texts) if (hit(lr, a.r)) res.legend.push(fig.id + ': the legend overlaps "' + a.s + '"');
    }
    for (const r of svg.querySelectorAll('rect.bar[data-series]')) {
      const k = fig.id + '/' + r.dataset.series;
      res.sums[k] = (res.sums[k] || 0) + Number(r.dataset.turns || 0);
    }
  }
  // Left to right: the x of each non-space character of sub, in order.
  const ltr = (root, sub) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const i = n.data.indexOf(sub);
      if (i < 0) continue;
      const xs = [];
      for (let k = 0; k < sub.length; k++) {
        if (sub[k] === ' ') continue;
        const rg = document.createRange(); rg.setStart(n, i + k); rg.setEnd(n, i + k + 1);
        xs.push(rg.getBoundingClientRect().left);
      }
      return xs.every((x, k) => k === 0 || x > xs[k - 1]);
    }
    return null;
  };
  const svgLTR = (sub) => {
    for (const t of document.querySelectorAll('svg text')) {
      const i = t.textContent.indexOf(sub);
      if (i < 0) continue;
      const xs = [];
      for (let k = 0; k < sub.length; k++) if (sub[k] !== ' ') xs.push(t.getStartPositionOfChar(i + k).x);
      return xs.every((x, k) => k === 0 || x > xs[k - 1]);
    }
    return null;
  };
  for (const [name, sel, sub] of PROBES) {
    const el = document.querySelector(sel);
    res.order[name] = el ? ltr(el, sub) : null;
  }
  res.order['svg label'] = svgLTR(SVGPROBE);
  const c = document.getElementById('bidi-control');
  if (c) res.control = ltr(c, 'no such file');
  const all = document.body.innerText + [...document.querySelectorAll('svg text')].map(t => t.textContent).join('');
  res.bidiChars = (all.match(/[\u202A-\u202E\u2066-\u2069]/g) || []).length - (c ? 1 : 0);
  const pre = document.createElement('pre');
  pre.id = 'probe-result';
  pre.textContent = JSON.stringify(res);
  document.body.appendChild(pre);
})();
`

type probeResult struct {
	Charts   int              `json:"charts"`
	Texts    int              `json:"texts"`
	Overlaps []string         `json:"overlaps"`
	Outside  []string         `json:"outside"`
	Legend   []string         `json:"legend"`
	Sums     map[string]int64 `json:"sums"`
	Order    map[string]*bool `json:"order"`
	Control  *bool            `json:"control"`
	Bidi     int              `json:"bidiChars"`
}

// probe loads a copy of the report with probeJS appended (and a CSP that
// lets it run; the report itself runs no script) at the given window
// width, and returns what it measured.
func probe(t *testing.T, bin, page string, width int, probes [][3]string, svgProbe string) probeResult {
	t.Helper()
	if probes == nil {
		probes = [][3]string{}
	}
	js := strings.Replace(probeJS, "PROBES", mustJSON(t, probes), 1)
	js = strings.Replace(js, "SVGPROBE", mustJSON(t, svgProbe), 1)
	p := strings.Replace(page, `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`,
		`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'unsafe-inline'"`, 1)
	// The harness must be able to see a reordering (an unisolated
	// override), two labels on top of each other and one outside its chart.
	control := "<p id=\"bidi-control\">x\u202Eno such file</p>" +
		`<figure id="layout-control"><svg class="chart" viewBox="0 0 200 40" width="200" height="40" font-size="12">` +
		`<text x="10" y="20">overlapping</text><text x="14" y="22">labels</text><text x="190" y="20">outside</text></svg></figure>`
	p = strings.Replace(p, "</body>", control+"<script>"+js+"</script></body>", 1)
	file := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(file, []byte(p), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := headless(t, bin, file, fmt.Sprintf("--window-size=%d,2000", width), "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages while probing:\n%s", strings.Join(console, "\n"))
	}
	m := regexp.MustCompile(`(?s)<pre id="probe-result">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe left no result:\n%.2000s", dom)
	}
	var r probeResult
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &r); err != nil {
		t.Fatal(err)
	}
	if r.Control == nil || *r.Control {
		t.Fatalf("the harness does not see an override reorder text (control %v)", r.Control)
	}
	var own []string
	r.Overlaps, own = split(r.Overlaps, "layout-control: ")
	if len(own) != 1 {
		t.Fatalf("the harness does not see two labels overlap: %v", own)
	}
	r.Outside, own = split(r.Outside, "layout-control: ")
	if len(own) != 1 || own[0] != "layout-control: outside" {
		t.Fatalf("the harness does not see a label outside its chart: %v", own)
	}
	r.Charts--
	if r.Charts == 0 || r.Texts == 0 {
		t.Fatalf("the probe measured %d charts, %d labels", r.Charts, r.Texts)
	}
	return r
}

// split separates the entries with a prefix from the others.
func split(l []string, prefix string) (others, with []string) {
	for _, s := range l {
		if strings.HasPrefix(s, prefix) {
			with = append(with, s)
		} else {
			others = append(others, s)
		}
	}
	return others, with
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// layoutClean fails on any overlap the probe found.
func layoutClean(t *testing.T, what string, r probeResult) {
	t.Helper()
	for _, l := range [][]string{r.Overlaps, r.Outside, r.Legend} {
		for i, s := range l {
			if i == 10 {
				t.Errorf("%s: … %d more", what, len(l)-10)
				break
			}
			t.Errorf("%s: %s", what, s)
		}
	}
	t.Logf("%s: %d charts, %d labels, no overlap", what, r.Charts, r.Texts)
}

// TestReportInChromium loads the report in headless Chromium: no console
// message (a blocked load or any error would log one); laid out, no label
// overlaps another or the legend; the drawn series sum to the warehouse's
// counts; store text with bidi controls does not reorder what surrounds
// it; a screenshot with the charts' colours in it.
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()

	// The harness sees console errors: a page that tries an external load
	// must be caught, or the clean result below would prove nothing.
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte(`<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'"><title>bad</title></head>`+
		`<body><img src="https://example.invalid/x.png" alt="x"></body></html>`), 0o644)
	if _, console := headless(t, bin, bad, "--dump-dom"); len(console) == 0 {
		t.Fatal("the harness did not see the console error of a blocked external load")
	}

	fx := warehouse(t)
	page := render(t, fx.db)
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := headless(t, bin, file, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages while loading the report:\n%s", strings.Join(console, "\n"))
	}
	if !strings.Contains(dom, "<title>Kandev subagent warehouse report</title>") {
		t.Fatalf("the DOM is not the report:\n%.500s", dom)
	}
	for _, in := range insts {
		for _, c := range charts {
			if in == "old" && (c == "usage" || c == "tokens") {
				continue
			}
			if id := "i-" + in + "-" + c; !strings.Contains(figure(dom, id), `<svg id="`+id+`-svg"`) {
				t.Errorf("figure %s not rendered", id)
			}
		}
	}

	db := testkit.Duck(t, fx.wh)
	probes := [][3]string{
		{"banner error", `#freshness .fresh-failed dl`, "no such file"},
		{"banner path", `#freshness .fresh-failed dl`, "gnp.db"},
		{"table cell", `#i-bidi-usage table`, "⟦U+202E⟧cd"},
	}
	for _, width := range []int{1400, 760} {
		r := probe(t, bin, page, width, probes, "ab⟦U+202E⟧cd")
		layoutClean(t, fmt.Sprintf("fixtures at %dpx", width), r)
		for name, ok := range r.Order {
			if ok == nil || !*ok {
				t.Errorf("at %dpx, %s: text around store text with a bidi control does not read left to right (%v)", width, name, ok)
			}
		}
		if r.Bidi != 0 {
			t.Errorf("%d bidi controls in the rendered text", r.Bidi)
		}
		// The laid-out bars sum to the warehouse's turns, per completeness.
		for _, in := range insts {
			for series, c := range map[string]string{"exact": "complete", "lower-bound": "lower_bound", "unknown": "unknown"} {
				want, _ := strconv.ParseInt(testkit.One(t, db, `SELECT count(*) FROM fanout_by_turn WHERE installation_id = '`+in+`' AND fanout_completeness = '`+c+`'`), 10, 64)
				if got := r.Sums["i-"+in+"-fanout/"+series]; got != want {
					t.Errorf("at %dpx, %s fan-out %s bars sum to %d turns, fanout_by_turn has %d", width, in, series, got, want)
				}
			}
		}
	}

	png1 := filepath.Join(dir, "report.png")
	_, console = headless(t, bin, file, "--window-size=1000,5000", "--screenshot="+png1)
	if len(console) > 0 {
		t.Errorf("console messages while taking the screenshot:\n%s", strings.Join(console, "\n"))
	}
	keep(t, png1, "report.png")
	keep(t, file, "report.html")
	checkScreenshot(t, png1, 1000, 5000, map[string]color.RGBA{
		"complete/live": rgb(0x1f, 0x5f, 0xa8), "lower bound/backfill": rgb(0xe0, 0x7b, 0x00), "contexts": rgb(0x2a, 0x9d, 0x8f)})
}

// keep copies a screenshot or a page into $REPORT_SCREENSHOT_DIR, to look at.
func keep(t *testing.T, path, name string) {
	if d := os.Getenv("REPORT_SCREENSHOT_DIR"); d != "" {
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestReportLayoutAtScale renders a report with the shape of a 100k-row
// store and more (long store names, a fan-out tail, 30 subagent types, a
// year of health with missed runs, a failed latest attempt) and checks in
// Chromium that no label overlaps another, leaves its chart or touches a
// legend. With $REPORT_LARGE_WAREHOUSE (warehouse directories separated
// like PATH, e.g. one extracted from 'kandev-extract gen-store --scale
// 0.1', the 100k-row store) it checks those warehouses' reports too.
func TestReportLayoutAtScale(t *testing.T) {
	bin := chromium(t)
	var buf bytes.Buffer
	if err := report.Render(&buf, largeData()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`data-k="40"`, ">≥40<", `data-small="1"`, `class="gap"`, `class="norun"`, `class="partial"`, "(the latest 5 below)", "(12 other types)",
		`data-level="failed">` + "\n" + `<strong><span class="level">failed</span><a href="#i-ghost">Installation <bdi>ghost</bdi></a>: No served run`,
		"store /srv/kandev.db: no such file", "This installation has runs but none is served",
		`data-level="stale">` + "\n" + `<strong><span class="level">stale</span><a href="#i-aged">Installation <bdi>aged</bdi></a>: Stale data: the snapshot is 3.3 days (80 h) old`} {
		if !strings.Contains(page, want) {
			t.Errorf("the large report lacks %s", want)
		}
	}
	r := probe(t, bin, page, 1400, nil, "\x00")
	layoutClean(t, "large report at 1400px", r)
	if want := int64(24_000); r.Sums["i-large-fanout/exact"] != want {
		t.Errorf("large exact series sums to %d, want %d", r.Sums["i-large-fanout/exact"], want)
	}
	layoutClean(t, "large report at 700px", probe(t, bin, page, 700, nil, "\x00"))
	file := filepath.Join(t.TempDir(), "large.html")
	os.WriteFile(file, []byte(page), 0o644)
	keep(t, file, "large.html")
	png1 := filepath.Join(t.TempDir(), "large.png")
	headless(t, bin, file, "--window-size=1400,3000", "--screenshot="+png1)
	keep(t, png1, "large.png")
	checkScreenshot(t, png1, 1400, 3000, map[string]color.RGBA{
		"complete/live": rgb(0x1f, 0x5f, 0xa8), "lower bound/backfill": rgb(0xe0, 0x7b, 0x00), "failed banner": rgb(0xc6, 0x28, 0x28)})

	for _, wh := range filepath.SplitList(os.Getenv("REPORT_LARGE_WAREHOUSE")) {
		page := render(t, filepath.Join(wh, load.DatabaseFile))
		layoutClean(t, wh, probe(t, bin, page, 1400, nil, "\x00"))
	}
}

// largeData is a report's data at the scale of the 100k-row benchmark
// store (its fan-out, weeks and steps), made harder: longer names, more
// types, a fan-out tail beyond the last slot, a year of writer health.
func largeData() *report.Data {
	now := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	k := func(v int64) *int64 { return &v }
	in := &report.Installation{ID: "large", Served: true, RunID: "20261130T210519Z-8761fc", SnapshotAt: now, ActivationState: "activated",
		CaptureSince:     func() *time.Time { t := time.Date(2026, 2, 24, 7, 12, 0, 123456000, time.UTC); return &t }(),
		HasSubagentTable: true, Subagents: 100_000, SubagentsLive: 60_004, SubagentsBackfill: 39_996}
	age := 50.0
	in.Fresh = &report.Freshness{RunID: in.RunID, SnapshotAt: now.Add(-50 * time.Hour), AgeHours: &age, LatestRunID: "20261201T020000Z-aaaaaa", LatestStatus: "failed",
		LatestError:  "store /var/lib/kandev/a/very/long/path/that/goes/on/and/on/kandev.db: no such file (give --source the path of Kandev's kandev.db, usually ~/.kandev/data/kandev.db)",
		LatestFailed: true, Stale: true}
	for j := 0; j < 7; j++ {
		in.NotServed = append(in.NotServed, report.RunProblem{RunID: fmt.Sprintf("20261%d01T020000Z-bbbbb%d", j, j), Status: "failed", Why: "store: no such file"})
	}
	in.NotServed, in.NotServedTotal = in.NotServed[:5], 7
	first, last := time.Date(2025, 11, 3, 8, 12, 0, 0, time.UTC), time.Date(2026, 8, 11, 10, 28, 0, 0, time.UTC)
	in.Range = &report.TimeRange{SnapshotAt: now, FirstTurn: &first, LastTurn: &last, Turns: 40_000, FirstSubagent: &first, LastSubagent: &last}
	// Fan-out: the 100k store's distribution, with k=7 empty, and a tail to 60.
	exact := map[int64]int64{0: 4800, 1: 3858, 2: 3426, 3: 3548, 4: 4136, 5: 3588, 6: 493, 8: 101}
	lower := map[int64]int64{1: 2575, 2: 2284, 3: 2365, 4: 2751, 5: 2398, 6: 326, 8: 101}
	for kk := int64(9); kk <= 60; kk += 3 {
		exact[kk] = 3
		lower[kk] = 2
	}
	var sum int64
	for _, v := range exact {
		sum += v
	}
	exact[0] += 24_000 - sum
	for kk, v := range exact {
		in.Fanout = append(in.Fanout, report.FanoutBucket{Completeness: "complete", K: k(kk), Turns: v})
	}
	for kk, v := range lower {
		in.Fanout = append(in.Fanout, report.FanoutBucket{Completeness: "lower_bound", K: k(kk), Turns: v, BackfillOnly: v})
	}
	in.Fanout = append(in.Fanout, report.FanoutBucket{Completeness: "unknown", Turns: 3200})
	sort.Slice(in.Fanout, func(a, b int) bool { return fmt.Sprint(in.Fanout[a]) < fmt.Sprint(in.Fanout[b]) })
	// 41 weeks, the capture boundary in week 16, some weeks with few
	// complete turns.
	for w := 0; w < 41; w++ {
		start := time.Date(2025, 11, 3, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*w)
		p := report.FanoutPeriod{Grain: "week", Start: start, End: start.AddDate(0, 0, 7), Partial: w == 0, Turns: 975}
		switch {
		case w < 16:
			p.LowerBound, p.Unk = 780, 195
		case w == 16:
			p.Complete, p.LowerBound, p.Unk = 6, 800, 169
		default:
			p.Complete = 975
		}
		if w == 30 {
			p.Complete, p.Turns = 4, 4
		}
		if p.Complete > 0 {
			p.AvgComplete = f(2.4 + float64(w%5)/10)
		}
		in.Periods = append(in.Periods, p)
	}
	steps := []string{"Backlog", "In Progress", "Review by the architecture board and the security team", "Done", "Blocked (waiting for an external dependency)",
		"QA", "Staging", "Released to production", "Archived after a very long retention period", "Icebox", "Triage", "Spec"}
	for j, s := range steps {
		c := int64(1000 - 80*j)
		comp := c * 6 / 10
		if j == 9 {
			comp = 3
		}
		in.Cards = append(in.Cards, report.CardStep{Name: s, Cards: c, Complete: comp, LowerBound: c - comp - 5, Unknown: 5,
			SessionsAll: 1.5, ContextsObservedAll: 10.9 + float64(j)/10, SessionsComplete: f(1.4), ContextsComplete: f(11.1 + float64(j)/7), SubagentsLive: 6000, SubagentsBackfill: 4000})
	}
	for j := 0; j < 30; j++ {
		name := fmt.Sprintf("subagent-type-%02d", j)
		if j%7 == 0 {
			name = fmt.Sprintf("a-rather-long-custom-subagent-type-name-%02d-with-suffix", j)
		}
		n := int64(12_000 - 350*j)
		with := n / 4
		if j == 3 {
			with = 7
		}
		in.Usage = append(in.Usage, report.UsageRow{Type: name, Source: "live", Subagents: n, Measured: with, Unmeasured: n - with, WithTokens: with, AvgTokens: f(1_234_567.8 - float64(j)*1000)},
			report.UsageRow{Type: name, Source: "backfill", Subagents: n / 2, Measured: n / 8, Unmeasured: n/2 - n/8, WithTokens: n / 8, AvgTokens: f(987_654.3)})
	}
	in.Usage = append(in.Usage, report.UsageRow{Type: "(type not reported)", Source: "live", Subagents: 1336, Unmeasured: 1336})
	for d := 0; d < 300; d++ {
		start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, d)
		if d%7 != 0 {
			continue
		}
		h := report.HealthPeriod{Grain: "week", Start: start, End: start.AddDate(0, 0, 7), Runs: 7, Evaluations: 7, LastStatus: "healthy", MaxShortfall: i(0), LastShortfall: i(0), Excess: i(int64(d * 10))}
		switch {
		case d/7 == 5 || d/7 == 6:
			h = report.HealthPeriod{Grain: "week", Start: start, End: start.AddDate(0, 0, 7)}
		case d/7 == 9:
			h.Evaluations, h.LastStatus, h.MaxShortfall, h.LastShortfall, h.Excess = 0, "no_capture_boundary", nil, nil, nil
		case d/7 > 30:
			h.LastStatus, h.MaxShortfall = "shortfall", i(int64(12_000+d))
		}
		in.Health = append(in.Health, h)
	}
	in.Disclosures = []report.Disclosure{
		{Rule: "capture_boundary", Severity: "info", Text: "Subagent capture is complete from 2026-02-24T07:12:00.123456789Z: fan-out of activity that started at or after it is exact."},
		{Rule: "backfill_provenance", Severity: "warning", Text: "39996 of 100000 rows came from the backfill and are not like-for-like with the 60004 live rows."},
		{Rule: "stale_data", Severity: "warning", Text: "The latest attempt did not become current."},
		{Rule: "writer_health", Severity: "alarm", Text: "Writer health: shortfall."},
	}
	// An installation whose every run failed: in the banner, without charts.
	ghost := &report.Installation{ID: "ghost", NotServedTotal: 1,
		NotServed: []report.RunProblem{{RunID: "20261130T020000Z-cccccc", Status: "failed", Why: "store /srv/kandev.db: no such file"}}}
	// An installation whose data is older than the staleness threshold,
	// and empty.
	aged := 80.0
	empty := &report.Installation{ID: "aged", Served: true, RunID: "20261127T020000Z-dddddd", SnapshotAt: now.Add(-80 * time.Hour), ActivationState: "not_activated",
		Fresh: &report.Freshness{RunID: "20261127T020000Z-dddddd", SnapshotAt: now.Add(-80 * time.Hour), AgeHours: &aged, LatestRunID: "20261127T020000Z-dddddd", LatestStatus: "committed", Stale: true}}
	return &report.Data{GeneratedAt: now, Installations: []*report.Installation{ghost, in, empty}}
}

// checkScreenshot asserts the PNG's size, that a good part of it is not
// blank, and that the given colours were painted.
func checkScreenshot(t *testing.T, path string, w, h int, want map[string]color.RGBA) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("screenshot %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	counts := map[string]int{}
	nonWhite := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}
			if c.R < 245 || c.G < 245 || c.B < 245 {
				nonWhite++
			}
			for name, wc := range want {
				if near(c, wc) {
					counts[name]++
				}
			}
		}
	}
	if frac := float64(nonWhite) / float64(b.Dx()*b.Dy()); frac < 0.03 {
		t.Errorf("screenshot is %.1f%% non-blank: the page did not render", 100*frac)
	}
	for name := range want {
		if counts[name] < 300 {
			t.Errorf("screenshot has %d pixels of the %s colour: not painted", counts[name], name)
		}
	}
	t.Logf("screenshot %s: %d non-blank pixels; colour pixels %v", filepath.Base(path), nonWhite, counts)
}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{r, g, b, 255} }

func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= 6 && d(a.G, b.G) <= 6 && d(a.B, b.B) <= 6
}
