package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A nightly schedule on an unchanged store: n runs into one warehouse with
// --retention n, so the k-th run rebuilds warehouse.duckdb with k retained
// runs (each committed run's files verified by SHA-256; the first run
// builds in full, later ones update the previous build with their own
// files), then one more run with --retention 1. Every run re-reads the
// whole store (and compares its ids with the previous run's files for
// deletions).

type nightlyResult struct {
	Size      size
	Retention int
	Runs      []nightlyRun
}

type nightlyRun struct {
	Retained  int // committed runs in the warehouse when it was rebuilt
	Retention int
	Stats     runStats
	Warehouse int64 // bytes of warehouse.duckdb after the run
}

func benchNightly(ctx context.Context, c config, sz size, store string, n int) (nightlyResult, error) {
	r := nightlyResult{Size: sz, Retention: n}
	wh := filepath.Join(c.dir, "wh-nightly-"+sz.Name)
	if err := os.RemoveAll(wh); err != nil {
		return r, err
	}
	defer func() {
		if !c.keep {
			os.RemoveAll(wh)
		}
	}()
	for i := 1; i <= n+1; i++ {
		keep := n
		if i == n+1 {
			keep = 1
		}
		rs, err := runExtractor(ctx, c, store, wh, false, "--retention", strconv.Itoa(keep))
		if err != nil {
			return r, err
		}
		retained := min(i, n)
		if i == n+1 {
			retained = n + 1 // built with the new run among n+1 committed ones; n expire
		}
		nr := nightlyRun{Retained: retained, Retention: keep, Stats: rs}
		if st, err := os.Stat(filepath.Join(wh, "warehouse.duckdb")); err == nil {
			nr.Warehouse = st.Size()
		}
		r.Runs = append(r.Runs, nr)
		logf("nightly %s: run %d (retention %d): %s wall, %s CPU, DuckDB rebuild %s (%s), peak RSS %s, warehouse.duckdb %s",
			sz.Name, i, keep, sec(rs.Wall), sec(rs.CPU()), sec(rs.Stages["duckdb"]), rs.Rebuild, human(rs.MaxRSS), human(nr.Warehouse))
	}
	return r, nil
}

func (r nightlyResult) rows() [][]string {
	out := [][]string{{"run", "retention", "committed runs when rebuilt", "wall", "CPU", "extract + health (reader)", "DuckDB rebuild", "how", "peak RSS", "warehouse.duckdb"}}
	for i, x := range r.Runs {
		s := x.Stats.Stages
		out = append(out, []string{
			strconv.Itoa(i + 1), strconv.Itoa(x.Retention), strconv.Itoa(x.Retained),
			fmt.Sprintf("%.2f s", secs(x.Stats.Wall)), fmt.Sprintf("%.2f s", secs(x.Stats.CPU())),
			fmt.Sprintf("%.2f s", secs(s["extract"]+s["health"])), fmt.Sprintf("%.2f s", secs(s["duckdb"])), x.Stats.Rebuild,
			mib(float64(x.Stats.MaxRSS)), human(x.Warehouse),
		})
	}
	return out
}

func (r nightlyResult) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Nightly runs on an unchanged store (%s)\n\n", r.Size.Name)
	rows := r.rows()
	b.WriteString("| " + strings.Join(rows[0], " | ") + " |\n|" + strings.Repeat("---|", len(rows[0])) + "\n")
	for _, x := range rows[1:] {
		b.WriteString("| " + strings.Join(x, " | ") + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

func (r nightlyResult) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== nightly runs on an unchanged store (%s), retention %d then 1 ==\n", r.Size.Name, r.Retention)
	for _, x := range r.rows() {
		b.WriteString("  " + strings.Join(x, " | ") + "\n")
	}
	return b.String()
}
