package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/kandev/kandev-extract/config"
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

// progress shows rows per table and elapsed time on a terminal; it is
// silent when stderr is not a terminal (cron, systemd, pipes).
type progress struct {
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	start time.Time
}

func (g *globals) progress() *progress {
	p := &progress{start: time.Now()}
	if g.onTerminal() {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(g.stderr),
			progressbar.OptionSpinnerType(14),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("rows"),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) update(installation, table string, rows int64) {
	if p == nil || p.bar == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.Describe(fmt.Sprintf("%s: %s", installation, table))
	p.bar.Set64(rows)
}

func (p *progress) done() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
	}
}
