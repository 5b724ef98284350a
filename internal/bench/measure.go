package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is what wait4 says about a finished child process.
type proc struct {
	Wall      time.Duration
	User, Sys time.Duration
	MaxRSS    int64 // bytes
}

func (p proc) CPU() time.Duration { return p.User + p.Sys }

// runProc runs cmd to completion and measures it.
func runProc(cmd *exec.Cmd) (proc, error) {
	t0 := time.Now()
	err := cmd.Run()
	p := proc{Wall: time.Since(t0)}
	if st := cmd.ProcessState; st != nil {
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			p.User = time.Duration(ru.Utime.Nano())
			p.Sys = time.Duration(ru.Stime.Nano())
			p.MaxRSS = ru.Maxrss * 1024 // Linux reports KiB
		}
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
	ParquetOut int64 // bytes of Parquet written
	TotalOut   int64 // bytes in the warehouse (Parquet, DuckDB, manifests)
}

// floorStats is one timed floor.
type floorStats struct {
	proc
	Parts map[string]time.Duration // per group of statements (real time)
}

// Stage names, in report order.
var stageNames = []string{"extract", "reader_wait", "transform", "parquet", "health", "publish", "duckdb"}

var stageLabels = map[string]string{
	"extract":     "extract (table scans' SQL)",
	"reader_wait": "reader idle, waiting for the transformer",
	"transform":   "transform (convert, classify, Arrow)",
	"parquet":     "Parquet write (encode, zstd, fsync)",
	"health":      "writer health (SQL)",
	"publish":     "publish (rename, manifest)",
	"duckdb":      "DuckDB load (views rebuild)",
}

func runExtractor(ctx context.Context, c config, store, wh string) (runStats, error) {
	var rs runStats
	if err := os.RemoveAll(wh); err != nil {
		return rs, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.bin, "run", "--source", store, "--warehouse", wh,
		"--installation", "bench", "--log-format", "json")
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	p, err := runProc(cmd)
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
		case "duckdb views rebuilt":
			rs.Stages["duckdb"] = time.Duration(num(l["elapsed_ms"]) * float64(time.Millisecond))
		case "run committed":
			rs.Subagents = int64(num(l["subagent_rows"]))
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
		if strings.HasSuffix(p, ".parquet") {
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

// floorGroup maps a floor statement to its line in the report.
func floorGroup(name string) string {
	switch name {
	case "task_session_subagents":
		return "subagent scan"
	case "writer health":
		return "writer health"
	}
	return "dimension scans"
}

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
		return fs, fmt.Errorf("sqlite3 floor: %d timings for %d statements", len(m), len(queries))
	}
	fs.Parts = map[string]time.Duration{}
	for i, q := range queries {
		real, _ := strconv.ParseFloat(m[i][1], 64)
		fs.Parts[floorGroup(q.Name)] += time.Duration(real * float64(time.Second))
	}
	return fs, nil
}

func writeFloorScript(path string, queries []floorQuery) error {
	var b strings.Builder
	b.WriteString("-- The floor (generated by internal/bench): the extractor's source reads, output discarded.\n")
	b.WriteString(".output /dev/null\n.timer on\n")
	for _, q := range queries {
		fmt.Fprintf(&b, "-- %s\n%s;\n", q.Name, strings.TrimSpace(q.SQL))
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

// sizeResult is every measurement of one size.
type sizeResult struct {
	Size   size
	Store  string
	Info   storeInfo
	Warm   time.Duration
	Runs   []runStats
	Floors []floorStats
}

func benchSize(ctx context.Context, c config, sz size, store string, info storeInfo) (sizeResult, error) {
	r := sizeResult{Size: sz, Store: store, Info: info}
	runs := c.runs
	if runs <= 0 {
		runs = 3
		if info.Bytes > 1<<30 {
			runs = 2
		}
	}
	var (
		queries []floorQuery
		script  string
		err     error
	)
	if c.floor {
		if queries, err = floorScript(ctx, store); err != nil {
			return r, err
		}
		script = filepath.Join(c.dir, "floor-"+sz.Name+".sql")
		if err := writeFloorScript(script, queries); err != nil {
			return r, err
		}
	}
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
			logf("%s: floor %d/%d: %s wall, %s CPU", sz.Name, i+1, runs, sec(f.Wall), sec(f.CPU()))
		}
		rs, err := runExtractor(ctx, c, store, wh)
		if err != nil {
			return r, err
		}
		r.Runs = append(r.Runs, rs)
		logf("%s: run %d/%d: %s wall, %s CPU, peak RSS %s", sz.Name, i+1, runs, sec(rs.Wall), sec(rs.CPU()), human(rs.MaxRSS))
	}
	if !c.keep {
		os.RemoveAll(wh)
	}
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
