// Command bench is `make bench`'s end-to-end driver: it generates (or reuses)
// Kandev-format stores under .bench/, times full `kandev-extract run`s of the
// real CLI binary (wall, CPU, peak RSS from wait4, per-stage times from the
// run's JSON logs, output size) and the floor — Debian's sqlite3 CLI running
// the same source reads with output to /dev/null — on the same store in the
// same invocation, prints a table per size with the ratio run/floor, and
// rewrites the generated part of docs/benchmarks.md.
//
//	go run ./internal/bench                      # large and medium (make bench)
//	go run ./internal/bench -sizes medium -runs 1  # quick
//	make bench BENCH_ARGS="-sizes small -out ''"
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
	sizes    []size
	runs     int
	dir      string
	out      string
	bin      string
	sqlite3  string
	floor    bool
	parquet  int
	keep     bool
	genOnly  bool
	repoRoot string
}

func main() {
	var (
		c     config
		sizes string
	)
	flag.StringVar(&sizes, "sizes", "large,medium", "comma-separated store sizes: large (scale 1.0), medium (0.1), small (0.01) or scale=F")
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
	if c.sizes, err = parseSizes(sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
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

	stores := make([]string, len(c.sizes))
	infos := make([]storeInfo, len(c.sizes))
	for i, sz := range c.sizes {
		if stores[i], infos[i], err = ensureStore(ctx, c.dir, root, sz, logf); err != nil {
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
	for i, sz := range c.sizes {
		r, err := benchSize(ctx, c, sz, stores[i], infos[i])
		if err != nil {
			return fmt.Errorf("%s: %w", sz.Name, err)
		}
		results = append(results, r)
		fmt.Println()
		fmt.Print(r.text())
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
	fmt.Print(targetsText(results, pq))
	fmt.Printf("\nbench finished in %s (load average before %s, after %s)\n", total.Round(time.Second), mach.loadBefore, mach.loadAfter)
	if c.out != "" {
		if err := writeMarkdown(c.out, mach, results, pq, total); err != nil {
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
