package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// proc is what wait4 says about a finished child process.
type proc struct {
	Wall      time.Duration
	User, Sys time.Duration
	MaxRSS    int64 // bytes
}

func (p proc) CPU() time.Duration { return p.User + p.Sys }

// runProc runs cmd to completion and measures it, its executable's pages
// dropped from the page cache first (pagecache_linux.go: the state of a
// binary run from disk). Peak RSS is the child's own high-water mark where
// the OS tells it (Linux: hwm_linux.go), else wait4's.
func runProc(cmd *exec.Cmd) (proc, error) {
	evictBinary(cmd.Path) // clean pages only; a failure leaves the cache as it is
	return runProcAsIs(cmd)
}

// runProcAsIs is runProc with the page cache left as it is.
func runProcAsIs(cmd *exec.Cmd) (proc, error) {
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return proc{}, err
	}
	var hwm atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		sampleHWM(cmd.Process.Pid, stop, &hwm)
	}()
	err := cmd.Wait()
	close(stop)
	<-sampled
	p := proc{Wall: time.Since(t0)}
	if st := cmd.ProcessState; st != nil {
		p.User, p.Sys = st.UserTime(), st.SystemTime()
		p.MaxRSS = maxRSS(st) // rusage_*.go
	}
	if h := hwm.Load(); h > 0 {
		p.MaxRSS = h
	}
	return p, err
}

// runStats is one timed `kandev-extract run`.
type runStats struct {
	proc
	Stages     map[string]time.Duration // from the "stage timings" log line, plus duckdb
	TableRows  map[string]int64
	Rows       int64 // every row read from the source tables
	Subagents  int64
	Pruned     int64  // runs retention removed
	Rebuild    string // how warehouse.duckdb was rebuilt: "update +a −r" or "full"
	Failed     string // the error of a run that failed (pathological stores only)
	ParquetOut int64  // bytes of Parquet written
	TotalOut   int64  // bytes in the warehouse (Parquet, DuckDB, manifests)
}

// floorStats is one timed floor.
type floorStats struct {
	proc
	Parts map[string]time.Duration // per group of statements (real time)
}

// Stage names, in report order.
var stageNames = []string{"extract", "reader_wait", "transform", "parquet", "health", "publish", "duckdb"}

var stageLabels = map[string]string{
	"extract":     "extract (table scans, both readers)",
	"reader_wait": "readers idle, waiting for the transformer",
	"transform":   "transform (convert, classify, Arrow)",
	"parquet":     "Parquet write (encode, zstd, fsync)",
	"health":      "message pass (evidence + writer health, second reader)",
	"publish":     "publish (rename, manifest)",
	"duckdb":      "DuckDB rebuild (verify the runs; update the previous build, or build from every retained run)",
}

// runExtractor runs `kandev-extract run` on source into wh (emptied first
// when fresh), with extra arguments.
func runExtractor(ctx context.Context, c config, source, wh string, fresh bool, extra ...string) (runStats, error) {
	var rs runStats
	if fresh {
		if err := os.RemoveAll(wh); err != nil {
			return rs, err
		}
	}
	var stderr bytes.Buffer
	args := append([]string{"run", "--source", source, "--warehouse", wh,
		"--installation", "bench", "--log-format", "json"}, extra...)
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = os.Environ()
	if u, err := url.Parse(source); err == nil && u.User != nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		// The password goes in the environment, as docs/postgres.md says.
		if pw, ok := u.User.Password(); ok {
			cmd.Env = append(cmd.Env, "PGPASSWORD="+pw)
			u.User = url.User(u.User.Username())
			cmd.Args[3] = u.String()
		}
	}
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	run := runProc
	if c.prereadBinary {
		if err := prereadBinary(c.bin); err != nil {
			return rs, err
		}
		run = runProcAsIs
	}
	p, err := run(cmd)
	rs.proc = p
	if err != nil {
		return rs, fmt.Errorf("%s run: %w\n%s", c.bin, err, tail(stderr.String(), 2000))
	}
	rs.Stages = map[string]time.Duration{}
	rs.TableRows = map[string]int64{}
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l["msg"] {
		case "table read":
			n := int64(num(l["rows"]))
			rs.TableRows[fmt.Sprint(l["table"])] = n
			rs.Rows += n
		case "stage timings":
			for _, s := range stageNames {
				if v, ok := l[s+"_ms"]; ok {
					rs.Stages[s] = time.Duration(num(v) * float64(time.Millisecond))
				}
			}
		case "duckdb views rebuilt", "warehouse.duckdb rebuilt":
			rs.Stages["duckdb"] = time.Duration(num(l["elapsed_ms"]) * float64(time.Millisecond))
			switch l["how"] {
			case "updated":
				rs.Rebuild = fmt.Sprintf("update +%d −%d", int(num(l["runs_added"])), int(num(l["runs_removed"])))
			case "full":
				rs.Rebuild = "full"
			}
		case "run committed":
			rs.Subagents = int64(num(l["subagent_rows"]))
		case "retention removed old runs":
			rs.Pruned = int64(num(l["runs"]))
		}
	}
	err = filepath.WalkDir(wh, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rs.TotalOut += fi.Size()
		// The run's own files (current/ holds copies of the served ones).
		if rel, _ := filepath.Rel(wh, p); strings.HasSuffix(p, ".parquet") && !strings.HasPrefix(filepath.ToSlash(rel), "current/") {
			rs.ParquetOut += fi.Size()
		}
		return nil
	})
	return rs, err
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	}
	return 0
}

var runTime = regexp.MustCompile(`Run Time: real ([0-9.]+) user ([0-9.]+) sys ([0-9.]+)`)

// runFloor runs a SQLite floor script in the sqlite3 CLI (one timing per
// line of the script).
func runFloor(ctx context.Context, c config, store, script string, queries []floorQuery) (floorStats, error) {
	var fs floorStats
	in, err := os.Open(script)
	if err != nil {
		return fs, err
	}
	defer in.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.sqlite3, "-readonly", "-bail", store)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, &stdout, &stderr
	p, err := runProc(cmd)
	fs.proc = p
	if err != nil || stderr.Len() > 0 {
		return fs, fmt.Errorf("sqlite3 floor: %v\n%s", err, tail(stderr.String(), 2000))
	}
	m := runTime.FindAllStringSubmatch(stdout.String(), -1)
	if len(m) != len(queries) {
		return fs, fmt.Errorf("sqlite3 floor: %d timings for %d lines", len(m), len(queries))
	}
	fs.Parts = map[string]time.Duration{}
	for i, q := range queries {
		real, _ := strconv.ParseFloat(m[i][1], 64)
		fs.Parts[q.Name] += time.Duration(real * float64(time.Second))
	}
	return fs, nil
}

// writeFloorScript writes a SQLite floor: one statement (or one line of
// statements) per line, timed, output discarded.
func writeFloorScript(path, what string, queries []floorQuery) error {
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s (generated by internal/bench), output discarded.\n", what)
	b.WriteString(".output /dev/null\n.timer on\n")
	for _, q := range queries {
		s := strings.TrimSpace(q.SQL)
		if !strings.HasSuffix(s, ";") {
			s += ";"
		}
		b.WriteString(s + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// warm reads the store once so every measurement starts from the same,
// cached, state (the floor and the run both read it from the page cache).
func warm(path string) (time.Duration, error) {
	t0 := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	return time.Since(t0), err
}

// sizeResult is every measurement of one store.
type sizeResult struct {
	Size    size
	Name    string // report name: the size, "PostgreSQL large", ...
	Dialect string // "sqlite" or "postgres"
	Store   string
	Info    storeInfo
	Warm    time.Duration
	Load    time.Duration // PostgreSQL: loading the store into the server
	Runs    []runStats
	Floors  []floorStats
	Spec    *floorStats // the previous floor, timed once
	RSSOnly bool        // a pathological store: peak RSS is what is measured
	Preread *runStats   // one more run, the binary read into the page cache first
}

// timedRuns is how many floor/run pairs a store gets.
func (c config) timedRuns(bytes int64) int {
	if c.runs > 0 {
		return c.runs
	}
	if bytes > 1<<30 {
		return 2
	}
	return 3
}

// benchSQLite times the floor and the run alternately on a SQLite store,
// then the spec floor once.
func benchSQLite(ctx context.Context, c config, sz size, store string, info storeInfo) (sizeResult, error) {
	r := sizeResult{Size: sz, Name: sz.Name, Dialect: "sqlite", Store: store, Info: info}
	runs := c.timedRuns(info.Bytes)
	var (
		queries []floorQuery
		script  string
	)
	if c.floor {
		since, err := captureSince(ctx, store)
		if err != nil {
			return r, err
		}
		queries = naiveFloor(floorSQLite, since)
		script = filepath.Join(c.dir, "floor-"+sz.Name+".sql")
		if err := writeFloorScript(script, "The floor: floor-sqlite.sql with capture_since "+since, queries); err != nil {
			return r, err
		}
	}
	var err error
	if r.Warm, err = warm(store); err != nil {
		return r, err
	}
	logf("%s: store %s (%s), read once in %s to warm the page cache", sz.Name, filepath.Base(store), human(info.Bytes), r.Warm.Round(time.Millisecond))
	wh := filepath.Join(c.dir, "wh-"+sz.Name)
	// Floor and run alternate, so drift in the machine's load hits both.
	for i := 0; i < runs; i++ {
		if c.floor {
			f, err := runFloor(ctx, c, store, script, queries)
			if err != nil {
				return r, err
			}
			r.Floors = append(r.Floors, f)
			logf("%s: floor %d/%d: %s wall, %s CPU (load %s)", sz.Name, i+1, runs, sec(f.Wall), sec(f.CPU()), loadAverage())
		}
		rs, err := runExtractor(ctx, c, store, wh, true)
		if err != nil {
			return r, err
		}
		r.Runs = append(r.Runs, rs)
		logf("%s: run %d/%d: %s wall, %s CPU, peak RSS %s (load %s)", sz.Name, i+1, runs, sec(rs.Wall), sec(rs.CPU()), human(rs.MaxRSS), loadAverage())
	}
	if binaryStates && !c.prereadBinary {
		// Once more with the binary read into the page cache beforehand.
		pc := c
		pc.prereadBinary = true
		rs, err := runExtractor(ctx, pc, store, wh, true)
		if err != nil {
			return r, err
		}
		r.Preread = &rs
		logf("%s: run, binary pre-read into the page cache: %s wall, %s CPU, peak RSS %s", sz.Name, sec(rs.Wall), sec(rs.CPU()), human(rs.MaxRSS))
	}
	if c.floor && c.specFloor {
		q, err := specFloor(ctx, store)
		if err != nil {
			return r, err
		}
		path := filepath.Join(c.dir, "specfloor-"+sz.Name+".sql")
		if err := writeFloorScript(path, "The spec floor: the extractor's scan SQL and the old health comparison", q); err != nil {
			return r, err
		}
		f, err := runFloor(ctx, c, store, path, q)
		if err != nil {
			return r, err
		}
		r.Spec = &f
		logf("%s: spec floor: %s wall, %s CPU", sz.Name, sec(f.Wall), sec(f.CPU()))
	}
	if !c.keep {
		os.RemoveAll(wh)
	}
	return r, nil
}

// benchPostgres loads a SQLite store into the bench's PostgreSQL server and
// times its floor and the run alternately.
func benchPostgres(ctx context.Context, c config, pg *pgServer, sz size, store string, info storeInfo) (sizeResult, error) {
	r := sizeResult{Size: sz, Name: "PostgreSQL " + sz.Name, Dialect: "postgres", Store: store, Info: info}
	db := "bench_" + strings.NewReplacer("-", "_", ".", "_").Replace(sz.Name)
	t0 := time.Now()
	counts, err := pg.load(ctx, c.repoRoot, db, store)
	if err != nil {
		return r, err
	}
	r.Load = time.Since(t0)
	r.Info.Rows = counts
	since, err := captureSince(ctx, store)
	if err != nil {
		return r, err
	}
	queries := naiveFloor(floorPostgres, since)
	script := filepath.Join(c.dir, "floor-pg-"+sz.Name+".sql")
	if err := writePGFloorScript(script, queries); err != nil {
		return r, err
	}
	// Warm the server's caches: the floor once, untimed.
	if _, err := runPGFloor(ctx, pg, db, script, queries); err != nil {
		return r, err
	}
	dsn := pg.c.DSN(db)
	wh := filepath.Join(c.dir, "wh-pg-"+sz.Name)
	runs := c.timedRuns(info.Bytes)
	for i := 0; i < runs; i++ {
		f, err := runPGFloor(ctx, pg, db, script, queries)
		if err != nil {
			return r, err
		}
		r.Floors = append(r.Floors, f)
		logf("%s: floor %d/%d: %s wall (load %s)", r.Name, i+1, runs, sec(f.Wall), loadAverage())
		rs, err := runExtractor(ctx, c, dsn, wh, true)
		if err != nil {
			return r, err
		}
		r.Runs = append(r.Runs, rs)
		logf("%s: run %d/%d: %s wall, %s CPU, peak RSS %s (load %s)", r.Name, i+1, runs, sec(rs.Wall), sec(rs.CPU()), human(rs.MaxRSS), loadAverage())
	}
	if !c.keep {
		os.RemoveAll(wh)
	}
	if err := pg.c.Exec(ctx, "postgres", "DROP DATABASE "+db); err != nil {
		logf("postgres: %v", err)
	}
	return r, nil
}

// benchHostile runs the extractor on a pathological store for its peak
// RSS (no floor).
func benchHostile(ctx context.Context, c config, name, source string, info storeInfo) (sizeResult, error) {
	r := sizeResult{Name: name, Size: size{Name: name}, Store: source, Info: info, RSSOnly: true, Dialect: "sqlite"}
	if strings.HasPrefix(source, "postgres") {
		r.Dialect = "postgres"
	}
	wh := filepath.Join(c.dir, "wh-hostile")
	rs, err := runExtractor(ctx, c, source, wh, true)
	if err != nil {
		// Reported, not fatal: a run that fails on such a store is a finding.
		rs.Failed = strings.Join(strings.Fields(tail(err.Error(), 600)), " ")
		logf("%s: run FAILED: %v", name, err)
	}
	r.Runs = append(r.Runs, rs)
	logf("%s: run: %s wall, %s CPU, peak RSS %s", name, sec(rs.Wall), sec(rs.CPU()), human(rs.MaxRSS))
	os.RemoveAll(wh)
	return r, nil
}

func median(ds []float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianOf[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return median(v)
}

func secs(d time.Duration) float64 { return d.Seconds() }

func sec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
