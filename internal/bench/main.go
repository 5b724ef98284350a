// Command bench is `make bench`'s end-to-end driver: it generates (or reuses)
// Kandev-format stores under .bench/ — generated ones (large, medium), one
// grown from the real fresh-activated fixture, pathological ones — loads
// some into a throwaway PostgreSQL server, times full `kandev-extract run`s
// of the real CLI binary (wall, CPU, peak RSS from wait4, per-stage times
// from the run's JSON logs, output size) and the floor — the job's reads
// done naively by a native tool (floor.go) — alternately on the same store
// in the same invocation, prints a table per store with the ratio
// run/floor, times a nightly schedule on an unchanged store, and rewrites
// the generated part of docs/benchmarks.md.
//
//	go run ./internal/bench                      # everything (make bench)
//	go run ./internal/bench -sizes medium -pg '' -hostile=false -nightly 0 -runs 1  # quick
//	make bench BENCH_ARGS="-sizes small -pg small -out ''"
//
// No figure here is asserted: the benchmark reports, the tests assert.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type config struct {
	sizes       []size
	pgSizes     []size
	hostile     bool
	nightly     int
	nightlySize size
	specFloor   bool
	pgServe     string
	runs        int
	dir         string
	out         string
	bin         string
	sqlite3     string
	floor       bool
	parquet     int
	keep        bool
	genOnly     bool
	// prereadBinary: the binary is read into the page cache before a run
	// instead of dropped from it (pagecache_linux.go).
	prereadBinary bool
	repoRoot      string
}

func main() {
	var (
		c                        config
		sizes, pgSizes, nightlyS string
	)
	flag.StringVar(&sizes, "sizes", "large,medium,grown", "comma-separated SQLite stores: large (scale 1.0), medium (0.1), small (0.01), scale=F, or grown[=N] (the fresh-activated fixture ×400, or ×N)")
	flag.StringVar(&pgSizes, "pg", "large,medium", "comma-separated sizes to load into a throwaway PostgreSQL server and time there ('' = none)")
	flag.BoolVar(&c.hostile, "hostile", true, "measure peak RSS on the pathological stores (SQLite, and PostgreSQL when -pg is not empty)")
	flag.IntVar(&c.nightly, "nightly", 3, "nightly schedule on an unchanged store: N runs into one warehouse with --retention N, then one with --retention 1 (0 = skip)")
	flag.StringVar(&nightlyS, "nightly-size", "medium", "the store of the nightly schedule")
	flag.StringVar(&c.pgServe, "pg-serve", "", "load this size into a throwaway PostgreSQL server, print its DSN and keep it running until interrupted (for profiling the PostgreSQL reads by hand)")
	flag.BoolVar(&c.specFloor, "spec-floor", true, "also time the previous floor (the extractor's own scan SQL), once per SQLite store")
	flag.IntVar(&c.runs, "runs", 0, "timed runs (and floors) per size, reporting medians; 0 = 3 for stores under 1 GiB, 2 above")
	flag.StringVar(&c.dir, "dir", ".bench", "cache directory for stores, the binary and warehouses (gitignored)")
	flag.StringVar(&c.out, "out", "docs/benchmarks.md", "markdown file whose generated section is rewritten ('' = print only)")
	flag.StringVar(&c.bin, "bin", "", "kandev-extract binary to time (default: build ./cmd/kandev-extract into -dir)")
	flag.StringVar(&c.sqlite3, "sqlite3", "sqlite3", "the sqlite3 CLI that times the floor")
	flag.BoolVar(&c.floor, "floor", true, "time the sqlite3 floor")
	flag.IntVar(&c.parquet, "parquet", 3, "runs of the Parquet writer's Go benchmarks (go test -bench ./load), reporting medians; 0 = skip")
	flag.BoolVar(&c.keep, "keep", false, "keep each size's last warehouse under -dir")
	flag.BoolVar(&c.genOnly, "gen-only", false, "only generate (or check) the cached stores")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./internal/bench [flags]   (make bench BENCH_ARGS=\"...\")\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var err error
	if strings.TrimSpace(sizes) != "" {
		if c.sizes, err = parseSizes(sizes); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
	if strings.TrimSpace(pgSizes) != "" {
		if c.pgSizes, err = parseSizes(pgSizes); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -pg:", err)
			os.Exit(2)
		}
	}
	if c.nightly > 0 {
		ns, err := parseSizes(nightlyS)
		if err != nil || len(ns) != 1 {
			fmt.Fprintln(os.Stderr, "bench: -nightly-size: one size")
			os.Exit(2)
		}
		c.nightlySize = ns[0]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench %s: "+f+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func run(ctx context.Context, c config) error {
	began := time.Now()
	root, err := findRepoRoot()
	if err != nil {
		return err
	}
	c.repoRoot = root
	if !filepath.IsAbs(c.dir) {
		c.dir = filepath.Join(root, c.dir)
	}
	if c.out != "" && !filepath.IsAbs(c.out) {
		c.out = filepath.Join(root, c.out)
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	mach := describeMachine(ctx, c.sqlite3)
	logf("machine: %s", mach.oneLine())

	if c.pgServe != "" {
		return servePostgres(ctx, c, root)
	}
	// Every store first: generation can take minutes.
	stores := map[string]string{}
	infos := map[string]storeInfo{}
	need := append(append([]size{}, c.sizes...), c.pgSizes...)
	if c.nightly > 0 {
		need = append(need, c.nightlySize)
	}
	for _, sz := range need {
		if _, ok := stores[sz.Name]; ok {
			continue
		}
		if stores[sz.Name], infos[sz.Name], err = ensureStore(ctx, c.dir, root, sz, logf); err != nil {
			return err
		}
	}
	var hostile string
	var hostileInfo storeInfo
	if c.hostile {
		if hostile, hostileInfo, err = ensureHostile(ctx, c.dir, root); err != nil {
			return err
		}
	}
	if c.genOnly {
		return nil
	}
	if c.bin == "" {
		c.bin = filepath.Join(c.dir, "kandev-extract")
		logf("building %s", c.bin)
		if err := buildBinary(ctx, root, c.bin); err != nil {
			return err
		}
	}
	if c.floor {
		if _, err := exec.LookPath(c.sqlite3); err != nil {
			return fmt.Errorf("the floor needs Debian's sqlite3 CLI (apt-get install sqlite3), or pass -floor=false: %w", err)
		}
	}

	var results []sizeResult
	report := func(r sizeResult) {
		results = append(results, r)
		fmt.Println()
		fmt.Print(r.text())
	}
	for _, sz := range c.sizes {
		r, err := benchSQLite(ctx, c, sz, stores[sz.Name], infos[sz.Name])
		if err != nil {
			return fmt.Errorf("%s: %w", sz.Name, err)
		}
		report(r)
	}
	if c.hostile {
		r, err := benchHostile(ctx, c, "pathological (SQLite)", hostile, hostileInfo)
		if err != nil {
			return fmt.Errorf("pathological store: %w", err)
		}
		report(r)
	}
	if len(c.pgSizes) > 0 {
		pg, err := startPostgres(ctx)
		if err != nil {
			return fmt.Errorf("postgres: %w (or pass -pg '')", err)
		}
		defer pg.stop()
		for _, sz := range c.pgSizes {
			r, err := benchPostgres(ctx, c, pg, sz, stores[sz.Name], infos[sz.Name])
			if err != nil {
				return fmt.Errorf("postgres %s: %w", sz.Name, err)
			}
			report(r)
		}
		if c.hostile {
			src, info, err := pg.hostile(ctx, c.repoRoot)
			if err != nil {
				return fmt.Errorf("postgres pathological store: %w", err)
			}
			r, err := benchHostile(ctx, c, "pathological (PostgreSQL)", src, info)
			if err != nil {
				return fmt.Errorf("postgres pathological store: %w", err)
			}
			report(r)
		}
	}
	var night *nightlyResult
	if c.nightly > 0 {
		n, err := benchNightly(ctx, c, c.nightlySize, stores[c.nightlySize.Name], c.nightly)
		if err != nil {
			return fmt.Errorf("nightly: %w", err)
		}
		night = &n
		fmt.Println()
		fmt.Print(n.text())
	}
	var pq []goBench
	if c.parquet > 0 {
		if pq, err = runParquetBench(ctx, root, c.parquet); err != nil {
			return err
		}
		fmt.Println()
		fmt.Print(parquetText(pq))
	}
	mach.loadAfter = loadAverage()
	total := time.Since(began)
	fmt.Println()
	fmt.Print(sideBySideText(results))
	fmt.Println()
	fmt.Print(targetsText(results, pq))
	fmt.Printf("\nbench finished in %s (load average before %s, after %s)\n", total.Round(time.Second), mach.loadBefore, mach.loadAfter)
	if c.out != "" {
		if err := writeMarkdown(c.out, mach, results, night, pq, total); err != nil {
			return err
		}
		logf("wrote %s", c.out)
	}
	return nil
}

func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/kandev/kandev-extract") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run from inside the kandev-extract repository (no go.mod found)")
		}
		dir = parent
	}
}

func buildBinary(ctx context.Context, root, out string) error {
	version := "bench"
	if b, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		version = strings.TrimSpace(string(b))
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X github.com/kandev/kandev-extract/pipeline.Version="+version, "-o", out, "./cmd/kandev-extract")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build kandev-extract: %w", err)
	}
	return nil
}
