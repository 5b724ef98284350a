package report_test

import (
	"bytes"
	"context"
	"database/sql"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
	"github.com/kandev/kandev-extract/report"
)

var repoRoot = testkit.RepoRoot

// warehouse builds a warehouse with three installations: "up" (live and
// backfill rows) extracted twice so writer health has a history, "fresh"
// (live only), and "old" (a Kandev build without the subagent table:
// everything unknown, writer health not run).
func warehouse(t *testing.T) string {
	t.Helper()
	wh := filepath.Join(t.TempDir(), "warehouse")
	fx := func(n string) string { return filepath.Join(repoRoot(t), "testdata", "kandev", n) }
	plan := [][]pipeline.Installation{
		{{Name: "up", Source: fx("upgraded-backfill.db")}, {Name: "fresh", Source: fx("fresh-activated.db")}, {Name: "old", Source: fx("pre-feature.db")}},
		{{Name: "up", Source: fx("upgraded-backfill.db")}},
	}
	for i, ins := range plan {
		now := time.Date(2026, 9, 1+i, 2, 0, 0, 0, time.UTC)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		res, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, Installations: ins, Allocator: mem,
			Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Outcomes {
			if o.Err != nil {
				t.Fatalf("%s: %v", o.Installation, o.Err)
			}
		}
		mem.AssertSize(t, 0)
	}
	return wh
}

func one(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s string
	if err := db.QueryRow(q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

var (
	figureRe = regexp.MustCompile(`<figure id="(i-[a-z]+-[a-z]+)" class="figure">`)
	svgRe    = regexp.MustCompile(`(?s)<svg id="(i-[a-z]+-[a-z]+)-svg" class="chart" role="img" aria-labelledby="[^"]+"[^>]*>\s*<title id="[^"]+">([^<]+)</title><desc`)
)

// TestReportContent checks the page itself: self-contained, every chart
// present with its title and caption, and values read from the warehouse
// drawn as they are (unknown is never drawn as zero).
func TestReportContent(t *testing.T) {
	wh := warehouse(t)
	dbPath := filepath.Join(wh, load.DatabaseFile)
	var buf bytes.Buffer
	if err := report.Write(context.Background(), dbPath, &buf, time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	// Self-contained: no script, no URL of any kind, a CSP that forbids loads.
	for _, bad := range []string{"<script", "://", "<link", "@import", "url(http"} {
		if strings.Contains(page, bad) {
			t.Errorf("report contains %q: not self-contained", bad)
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`) {
		t.Error("no Content-Security-Policy forbidding external loads")
	}
	if len(page) > 400_000 {
		t.Errorf("report is %d bytes: keep it small", len(page))
	}
	var figs []string
	for _, m := range figureRe.FindAllStringSubmatch(page, -1) {
		figs = append(figs, m[1])
	}
	var want []string
	for _, inst := range []string{"fresh", "old", "up"} {
		for _, c := range []string{"fanout", "contexts", "usage", "tokens", "health"} {
			want = append(want, "i-"+inst+"-"+c)
		}
	}
	if strings.Join(figs, ",") != strings.Join(want, ",") {
		t.Errorf("figures = %v, want %v", figs, want)
	}
	if n := len(svgRe.FindAllString(page, -1)); n != len(want) {
		t.Errorf("%d titled chart SVGs, want %d", n, len(want))
	}
	if n := strings.Count(page, "<figcaption>"); n != len(want) {
		t.Errorf("%d captions, want %d", n, len(want))
	}

	db, err := sql.Open("duckdb", dbPath+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Fan-out bars carry the warehouse's counts; unknown turns are their own
	// (hatched) series, never folded into a zero.
	unknown := one(t, db, `SELECT count(*) FROM fanout_by_turn WHERE installation_id = 'up' AND fanout_completeness = 'unknown' AND subagents_observed = 0`)
	complete0 := one(t, db, `SELECT count(*) FROM fanout_by_turn WHERE installation_id = 'up' AND fanout_completeness = 'complete' AND subagents_observed = 0`)
	for _, bar := range []string{
		"<title>0, unknown (not zero): " + unknown + "</title>",
		"<title>0, complete (exact): " + complete0 + "</title>",
		`fill="url(#i-up-fanout-svg-hatch)"`,
	} {
		if !strings.Contains(page, bar) {
			t.Errorf("up fan-out chart lacks %s", bar)
		}
	}
	if unknown == "0" {
		t.Error("fixture has no unknown turn at 0: the check above proves nothing")
	}
	// Average tokens over measured rows only, with n; a type with no
	// reporting row gets a note, not a zero bar.
	avg := one(t, db, `SELECT printf('%.0f', avg_total_tokens) || ' (n=' || rows_with_tokens || ' of ' || subagents || ')' FROM subagent_usage
		WHERE installation_id = 'fresh' AND subagent_type = 'Explore' AND source = 'live'`)
	if !strings.Contains(page, "<title>Explore, live: "+avg+"</title>") {
		t.Errorf("fresh tokens chart lacks Explore live %s", avg)
	}
	if !strings.Contains(page, "no row reported tokens (3 rows): unknown, not 0") {
		t.Error("the fresh rows without a type and without tokens are not shown as unknown")
	}
	// Writer health: two evaluated runs of up, and old's "not run" marked.
	if n := strings.Count(page, "<title>shortfall (alarm) at "); n != 3 { // up twice, fresh once
		t.Errorf("%d shortfall points, want 3", n)
	}
	if !strings.Contains(page, "not run: feature_absent") {
		t.Error("old's writer health is not marked as not run")
	}
	// Captions carry the disclosures that apply, with the warehouse's texts.
	backfill := one(t, db, `SELECT text FROM disclosures WHERE installation_id = 'up' AND rule = 'backfill_provenance'`)
	absent := one(t, db, `SELECT text FROM disclosures WHERE installation_id = 'old' AND rule = 'feature_absent'`)
	for _, c := range []struct{ fig, text string }{
		{"i-up-fanout", "backfill_provenance: " + backfill},
		{"i-up-usage", "backfill_provenance: " + backfill},
		{"i-old-fanout", "feature_absent: " + absent},
		{"i-old-health", "feature_absent: " + absent},
		{"i-up-fanout", "their fan-out is unknown, not zero"},
		{"i-fresh-tokens", "never averaged in as 0"},
	} {
		if !strings.Contains(figure(page, c.fig), htmlEscape(c.text)) {
			t.Errorf("figure %s caption lacks %q", c.fig, c.text)
		}
	}
}

func figure(page, id string) string {
	i := strings.Index(page, `<figure id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</figure>")
	return page[i : i+j]
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}

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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

// TestReportInChromium loads the report in headless Chromium: no console
// message (a blocked load or any error would log one), every chart in the
// rendered DOM, and a screenshot with the charts' colours in it.
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

	wh := warehouse(t)
	file := filepath.Join(dir, "report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Write(context.Background(), filepath.Join(wh, load.DatabaseFile), f, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dom, console := headless(t, bin, file, "--dump-dom")
	if len(console) > 0 {
		t.Errorf("console messages while loading the report:\n%s", strings.Join(console, "\n"))
	}
	if !strings.Contains(dom, "<title>Kandev subagent warehouse report</title>") {
		t.Fatalf("the DOM is not the report:\n%.500s", dom)
	}
	for _, inst := range []string{"fresh", "old", "up"} {
		for _, c := range []string{"fanout", "contexts", "usage", "tokens", "health"} {
			id := "i-" + inst + "-" + c
			fig := figure(dom, id)
			if fig == "" {
				t.Errorf("figure %s not in the rendered DOM", id)
				continue
			}
			if !strings.Contains(fig, `<svg id="`+id+`-svg"`) || !strings.Contains(fig, "<figcaption>") || !strings.Contains(fig, "<title id=\""+id+"-svg-t\">") {
				t.Errorf("figure %s lacks its SVG, title or caption", id)
			}
		}
	}
	if n := strings.Count(figure(dom, "i-up-fanout"), "<rect "); n < 8 {
		t.Errorf("up fan-out chart has %d rects", n)
	}

	png1 := filepath.Join(dir, "report.png")
	_, console = headless(t, bin, file, "--window-size=1000,2600", "--screenshot="+png1)
	if len(console) > 0 {
		t.Errorf("console messages while taking the screenshot:\n%s", strings.Join(console, "\n"))
	}
	if os.Getenv("REPORT_SCREENSHOT") != "" { // keep it to look at
		b, _ := os.ReadFile(png1)
		os.WriteFile(os.Getenv("REPORT_SCREENSHOT"), b, 0o644)
	}
	checkScreenshot(t, png1, 1000, 2600)
}

// checkScreenshot asserts the PNG's size, that a good part of it is not
// blank, and that the series colours of the charts were painted.
func checkScreenshot(t *testing.T, path string, w, h int) {
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
	want := map[string]color.RGBA{
		"complete/live": rgb(0x1f, 0x5f, 0xa8), "lower bound/backfill": rgb(0xe0, 0x7b, 0x00), "contexts": rgb(0x2a, 0x9d, 0x8f),
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
		if counts[name] < 500 {
			t.Errorf("screenshot has %d pixels of the %s series colour: charts not painted", counts[name], name)
		}
	}
	t.Logf("screenshot: %d non-blank pixels; series pixels %v", nonWhite, counts)
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
