package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/kandev/kandev-extract/config"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// applyConfig takes the log format from the config unless the flag was set.
func (g *globals) applyConfig(cfg config.Config) {
	if !g.logFormatSet && cfg.LogFormat != "" {
		g.logFormat = cfg.LogFormat
	}
}

// onTerminal reports whether stderr is a terminal.
func (g *globals) onTerminal() bool {
	f, ok := g.stderr.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// showProgress reports whether a run draws its progress line: only on a
// terminal, only with text logs (never inside JSON output), never under
// --quiet.
func (g *globals) showProgress() bool {
	return g.onTerminal() && !g.jsonLogs() && !g.quiet
}

// sourceTables maps each warehouse table the pipeline reports progress for
// to the source table it reads, in the order a run reads them.
var sourceTables = func() []struct{ table, source string } {
	var out []struct{ table, source string }
	for _, name := range []string{models.TableFact, models.TableSession, models.TableTurn,
		models.TableTask, models.TableWorkflow, models.TableWorkflowStep} {
		out = append(out, struct{ table, source string }{name, models.MustTable(name).Source})
	}
	return out
}()

func sourceOf(table string) string {
	for _, t := range sourceTables {
		if t.table == table {
			return t.source
		}
	}
	return table
}

// phaseText names the pipeline's phases after the table scans.
var phaseText = map[string]string{
	pipeline.PhaseOpen:      "opening the source",
	pipeline.PhaseHealth:    "checking writer health",
	pipeline.PhaseDeletions: "comparing with the previous run (deletions)",
	pipeline.PhaseWrite:     "writing Parquet files",
	pipeline.PhasePublish:   "publishing the run",
	pipeline.PhaseRebuild:   "rebuilding warehouse.duckdb",
	pipeline.PhasePrune:     "applying retention",
}

// progress draws one line on the terminal (stderr): the installation, the
// phase — a table being read with its rows against the total the source
// gave cheaply, or a named step after the scans — the read rate, an ETA
// and the elapsed time. It is created only when showProgress says so.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	now   func() time.Time
	start time.Time

	names  []string                    // installations, in run order
	totals map[string]map[string]int64 // installation → warehouse table → rows (absent: unknown)

	inst       string
	phase      string // a pipeline phase, "read" while scanning, or "wait"/"start"
	table      string
	rows       int64 // rows of the table being read
	readRows   int64 // rows of the installation's tables already read
	scanStart  time.Time
	phaseStart time.Time
	waitFor    string // the lock's holder while waiting

	drawn    bool
	lastDraw time.Time
	stop     chan struct{}
	stopped  chan struct{}
}

// newProgress returns the progress line for a run of the installations,
// or nil when none is shown (the nil progress ignores every call).
func (g *globals) newProgress(names []string, totals map[string]map[string]int64) *progress {
	if !g.showProgress() {
		return nil
	}
	p := &progress{w: g.stderr, width: termWidth(g.stderr), now: time.Now, names: names, totals: totals,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	p.start = p.now()
	p.phase, p.phaseStart = "start", p.start
	g.bar.Store(p)
	go p.tick(g)
	return p
}

func (p *progress) tick(g *globals) {
	defer close(p.stopped)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			g.bar.CompareAndSwap(p, nil)
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// waiting says the run waits for another run's warehouse lock.
func (p *progress) waiting(holder string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.waitFor = "wait", holder
	p.draw()
}

// update is pipeline.Options.Progress: rows read so far of a table.
func (p *progress) update(installation, table string, rows int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	changed := false
	if installation != p.inst {
		p.enter(installation, now)
		changed = true
	}
	if p.phase != "read" || table != p.table {
		if p.phase == "read" {
			p.readRows += p.rows
		}
		if p.scanStart.IsZero() {
			p.scanStart = now
		}
		p.phase, p.table, p.rows, p.phaseStart = "read", table, 0, now
		changed = true
	}
	if rows > p.rows {
		p.rows = rows
	}
	// A table read to its total is drawn at once: a small table's scan
	// ends within the 100 ms, and its line would stay at 0/N.
	total, known := p.totals[p.inst][table]
	if changed || (known && rows == total) || now.Sub(p.lastDraw) >= 100*time.Millisecond {
		p.draw()
	}
}

// step is pipeline.Options.Phase: a named phase begins.
func (p *progress) step(installation, phase string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if installation != "" && installation != p.inst {
		p.enter(installation, now)
	}
	if p.phase == "read" {
		p.readRows += p.rows
		p.rows = 0
	}
	if installation == "" {
		p.inst = ""
	}
	p.phase, p.table, p.phaseStart = phase, "", now
	p.draw()
}

func (p *progress) enter(installation string, now time.Time) {
	p.inst, p.readRows, p.rows, p.table, p.scanStart = installation, 0, 0, "", time.Time{}
	p.phase, p.phaseStart = "start", now
}

// around runs write (a log record) with the line cleared, then redraws it.
func (p *progress) around(write func() (int, error)) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
	n, err := write()
	p.draw()
	return n, err
}

// done clears the line and stops drawing.
func (p *progress) done() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
	p.w = io.Discard
}

func (p *progress) draw() {
	now := p.now()
	line := p.render(now)
	io.WriteString(p.w, "\r\x1b[K"+line)
	p.drawn, p.lastDraw = true, now
}

// render is the line for the current state at now. Rates and the ETA are
// shown only when they can be computed honestly: never negative, never a
// division by zero, never from a total the source did not give. When the
// line is wider than the terminal, the rate goes first, then the elapsed
// times; what is left is clipped.
func (p *progress) render(now time.Time) string {
	var head strings.Builder
	if p.inst != "" {
		head.WriteString(termSafe(p.inst))
		if len(p.names) > 1 {
			for i, n := range p.names {
				if n == p.inst {
					fmt.Fprintf(&head, " (%d/%d)", i+1, len(p.names))
				}
			}
		}
		head.WriteString(": ")
	}
	var rate, eta, took string
	switch p.phase {
	case "start":
		head.WriteString("starting")
	case "wait":
		head.WriteString("waiting for the warehouse lock")
		if p.waitFor != "" {
			head.WriteString(" (held by " + termSafe(p.waitFor) + ")")
		}
	case "read":
		head.WriteString("reading " + sourceOf(p.table) + " " + count(p.rows))
		if t, ok := p.totals[p.inst][p.table]; ok && t >= p.rows && t > 0 {
			head.WriteString("/" + count(t))
		}
		head.WriteString(" rows")
		read := p.readRows + p.rows
		if secs := now.Sub(p.scanStart).Seconds(); secs >= 0.5 && read > 0 {
			r := float64(read) / secs
			rate = " · " + rateText(r) + " rows/s"
			if left, ok := p.remaining(); ok && left > 0 {
				eta = " · ETA " + etaText(time.Duration(float64(left)/r*float64(time.Second)))
			}
		}
	default:
		if t, ok := phaseText[p.phase]; ok {
			head.WriteString(t)
		} else {
			head.WriteString(termSafe(p.phase))
		}
		if d := now.Sub(p.phaseStart); d >= time.Second {
			took = " · " + short(d)
		}
	}
	total := " [" + short(now.Sub(p.start)) + "]"
	fits := func(parts ...string) (string, bool) {
		l := []rune(strings.Join(parts, ""))
		return string(l), p.width <= 2 || len(l) <= p.width-1
	}
	for _, parts := range [][]string{
		{head.String(), rate, eta, took, total},
		{head.String(), eta, took, total},
		{head.String(), eta},
	} {
		if line, ok := fits(parts...); ok {
			return line
		}
	}
	line := []rune(head.String() + eta)
	if p.width > 2 && len(line) > p.width-1 {
		line = append(line[:p.width-2], '…')
	}
	return string(line)
}

// etaText is a remaining time: whole seconds (never "0s": "<1s").
func etaText(d time.Duration) string {
	if d < time.Second {
		return "<1s"
	}
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	}
	return short(d)
}

// remaining is the rows left to read in the installation's tables, when
// every table's total is known.
func (p *progress) remaining() (int64, bool) {
	totals := p.totals[p.inst]
	if totals == nil {
		return 0, false
	}
	var all int64
	for _, t := range sourceTables {
		n, ok := totals[t.table]
		if !ok {
			return 0, false
		}
		all += n
	}
	left := all - p.readRows - p.rows
	return left, left >= 0
}

// count writes n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func rateText(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// short is a duration for humans: 0.4s, 12s, 3m05s, 1h02m.
func short(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
