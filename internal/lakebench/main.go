// Command lakebench measures the scale-out hub (docs/scale-out.md) at
// scale and prints figures (docs/benchmarks.md, "Lake ingest at scale"):
// N installations (the real fixtures under new installation names) each
// extract and publish R runs, night by night, into one file:// bucket; after
// each night `kandev-lake ingest` (the real binary, a child process) commits
// them into one catalog on a throwaway PostgreSQL server; then
// `kandev-lake maintain`, one more run of one installation ingested into
// the full lake, and `kandev-lake duckdb`. For each hub command: its wall
// time and its peak RSS (the child's VmHWM, sampled every 10 ms); the data
// files before and after maintenance.
//
//	go run ./internal/lakebench [-installations 200] [-runs 3] [-workers 2] [-dir DIR]
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

var fixtures = []string{"fresh-activated.db", "upgraded-backfill.db", "execution-since.db", "capture-only.db"}

func main() {
	n := flag.Int("installations", 200, "installations")
	runs := flag.Int("runs", 3, "runs per installation (one a night)")
	workers := flag.Int("workers", 2, "installations extracted and published at once")
	keep := flag.String("dir", "", "work directory to keep (default: a temporary one, removed)")
	flag.Parse()
	if err := run(*n, *runs, *workers, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "lakebench:", err)
		os.Exit(1)
	}
}

func run(n, runs, workers int, keep string) error {
	ctx := context.Background()
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	work := keep
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "lakebench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	bin := filepath.Join(work, "kandev-lake")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kandev-lake")
	build.Dir, build.Stdout, build.Stderr = repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build kandev-lake: %w", err)
	}
	pg, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		return err
	}
	defer pg.Stop()
	if err := pg.CreateDatabase(ctx, "catalog"); err != nil {
		return err
	}
	bucketDir := filepath.Join(work, "bucket")
	if err := os.MkdirAll(bucketDir, 0o755); err != nil {
		return err
	}
	bucket := "file://" + filepath.ToSlash(bucketDir)
	hubFlags := []string{"--bucket", bucket, "--catalog", pg.SocketDSN("catalog")}
	fmt.Printf("lakebench: %d installations × %d runs (fixtures %s), %d CPUs, Go %s\n", n, runs, strings.Join(fixtures, ", "), runtime.NumCPU(), runtime.Version())

	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("site-%03d", i)
		if err := load.ValidName(names[i]); err != nil {
			return err
		}
	}
	spoke := func(i int) error {
		dir := filepath.Join(work, "spokes", names[i])
		res, err := pipeline.Run(ctx, pipeline.Options{Warehouse: dir,
			Installations: []pipeline.Installation{{Name: names[i], Source: filepath.Join(repo, "testdata", "kandev", fixtures[i%len(fixtures)])}}})
		if err != nil {
			return err
		}
		if err := res.Outcomes[0].Err; err != nil {
			return err
		}
		_, err = lake.PublishPending(ctx, bucket, dir, names[i])
		return err
	}
	for night := 1; night <= runs; night++ {
		t0 := time.Now()
		if err := parallel(n, workers, spoke); err != nil {
			return fmt.Errorf("night %d: %w", night, err)
		}
		fmt.Printf("night %d: %d runs extracted and published in %.1f s\n", night, n, time.Since(t0).Seconds())
		r, err := hub(bin, append([]string{"ingest"}, hubFlags...))
		if err != nil {
			return fmt.Errorf("night %d: ingest: %w", night, err)
		}
		fmt.Printf("night %d: ingest of %d new runs into a lake of %d: %.1f s, peak RSS %.0f MiB; %s\n", night, n, (night-1)*n, r.wall.Seconds(), mib(r.peak), firstLine(r.out))
		files, err := countDataFiles(bucketDir)
		if err != nil {
			return err
		}
		fmt.Printf("night %d: %d data files in the bucket's tables\n", night, files)
	}
	r, err := hub(bin, append([]string{"maintain"}, hubFlags...))
	if err != nil {
		return fmt.Errorf("maintain: %w", err)
	}
	before, after := maintained(r.out)
	fmt.Printf("maintain: %.1f s, peak RSS %.0f MiB; live data files %d before, %d after\n", r.wall.Seconds(), mib(r.peak), before, after)
	if err := spoke(0); err != nil {
		return err
	}
	r, err = hub(bin, append([]string{"ingest"}, hubFlags...))
	if err != nil {
		return fmt.Errorf("ingest of one run: %w", err)
	}
	fmt.Printf("ingest of 1 new run into a lake of %d: %.1f s, peak RSS %.0f MiB; %s\n", n*runs, r.wall.Seconds(), mib(r.peak), firstLine(r.out))
	r, err = hub(bin, append([]string{"duckdb", "--out", filepath.Join(work, "hub")}, hubFlags...))
	if err != nil {
		return fmt.Errorf("duckdb: %w", err)
	}
	fi, _ := os.Stat(filepath.Join(work, "hub", load.DatabaseFile))
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Printf("duckdb: %.1f s, peak RSS %.0f MiB, %.0f MiB file; %s\n", r.wall.Seconds(), mib(r.peak), mib(size), firstLine(r.out))
	return nil
}

func parallel(n, workers int, f func(int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errs[w] = fmt.Errorf("installation %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

type result struct {
	wall time.Duration
	peak int64
	out  string
}

// hub runs kandev-lake with args, sampling its peak RSS.
func hub(bin string, args []string) (result, error) {
	var r result
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return r, err
	}
	stop := make(chan struct{})
	var peak atomic.Int64
	done := make(chan struct{})
	go func() { sampleHWM(cmd.Process.Pid, stop, &peak); close(done) }()
	err := cmd.Wait()
	r.wall = time.Since(t0)
	close(stop)
	<-done
	r.peak, r.out = peak.Load(), out.String()
	if err != nil {
		return r, fmt.Errorf("%v\n%s%s", err, out.String(), tail(errb.String()))
	}
	return r, nil
}

// sampleHWM records the process's VmHWM until stop is closed (every 10
// ms; the child's own high-water mark, not its parent's: see
// internal/bench/hwm_linux.go).
func sampleHWM(pid int, stop <-chan struct{}, peak *atomic.Int64) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
					if kb*1024 > peak.Load() {
						peak.Store(kb * 1024)
					}
				}
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

var maintainLine = regexp.MustCompile(`^\S+: (\d+) → (\d+) files`)

// maintained sums maintain's "T: a → b files" lines.
func maintained(out string) (before, after int) {
	for _, l := range strings.Split(out, "\n") {
		if m := maintainLine.FindStringSubmatch(l); m != nil {
			a, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[2])
			before += a
			after += b
		}
	}
	return before, after
}

// countDataFiles counts the Parquet files under the tables' data folders
// (live or not yet removed).
func countDataFiles(bucketDir string) (int, error) {
	n := 0
	err := filepath.WalkDir(filepath.Join(bucketDir, "iceberg"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") && strings.Contains(filepath.ToSlash(p), "/data/") {
			n++
		}
		return nil
	})
	return n, err
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
