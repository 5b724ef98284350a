package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
)

// parquetTarget is the Parquet writing target for
// fact_subagent_context, measured by load.BenchmarkParquetWriteFact.
const parquetTarget = 2_000_000

// parquetBenchmarks are the Go benchmarks of the Parquet writer the driver
// runs and records: the writer itself and the zstd work alone.
const parquetBenchmarks = `^Benchmark(ParquetWriteFact|ZstdFloor)$`

// goBench is one Go benchmark's medians over -count runs.
type goBench struct {
	Name       string
	Runs       int
	MBPerSec   float64
	RowsPerSec float64
	NsPerOp    float64
}

// runParquetBench runs the Parquet writer's Go benchmarks count times each
// and returns their medians, in the order they first ran.
func runParquetBench(ctx context.Context, root string, count int) ([]goBench, error) {
	args := []string{"test", "-run", "^$", "-bench", parquetBenchmarks, "-benchmem", "-benchtime", "2s", "-count", strconv.Itoa(count), "./load"}
	logf("go %s", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		os.Stderr.Write(out.Bytes())
		return nil, fmt.Errorf("go test -bench ./load: %w", err)
	}
	return parseGoBench(out.String()), nil
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parseGoBench reads `go test -bench` output: per benchmark name, the
// median of each metric (ns/op, MB/s, rows/s) over its runs.
func parseGoBench(out string) []goBench {
	type acc struct{ ns, mbs, rows []float64 }
	var order []string
	byName := map[string]*acc{}
	for _, line := range strings.Split(out, "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		a := byName[m[1]]
		if a == nil {
			a = &acc{}
			byName[m[1]] = a
			order = append(order, m[1])
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				a.ns = append(a.ns, v)
			case "MB/s":
				a.mbs = append(a.mbs, v)
			case "rows/s":
				a.rows = append(a.rows, v)
			}
		}
	}
	var res []goBench
	for _, n := range order {
		a := byName[n]
		res = append(res, goBench{Name: n, Runs: len(a.ns), NsPerOp: median(a.ns), MBPerSec: median(a.mbs), RowsPerSec: median(a.rows)})
	}
	return res
}

// parquetWriterFigure is the figure the target is judged on: the fact
// writer with the production settings (16Ki-row batches, the default
// number of workers), i.e. the fastest 16Ki-row sub-benchmark.
func parquetWriterFigure(bs []goBench) (goBench, bool) {
	var best goBench
	found := false
	for _, b := range bs {
		if strings.HasPrefix(b.Name, "BenchmarkParquetWriteFact/batch=16384/") && b.RowsPerSec > best.RowsPerSec {
			best, found = b, true
		}
	}
	return best, found
}

func parquetRows(bs []goBench) [][3]string {
	var rows [][3]string
	for _, b := range bs {
		rows = append(rows, [3]string{strings.TrimPrefix(b.Name, "Benchmark"), count(int64(b.RowsPerSec)) + " rows/s",
			fmt.Sprintf("%.0f MB/s, %.1f ms/op, median of %d", b.MBPerSec, b.NsPerOp/1e6, b.Runs)})
	}
	return rows
}

func parquetText(bs []goBench) string {
	var b strings.Builder
	b.WriteString("== Parquet writer (go test -bench ./load) ==\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range parquetRows(bs) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r[0], r[1], r[2])
	}
	tw.Flush()
	return b.String()
}

func parquetMarkdown(bs []goBench) string {
	var b strings.Builder
	b.WriteString("### Parquet writer (`go test -bench ./load`)\n\n| benchmark | rows/s | |\n|---|---|---|\n")
	for _, r := range parquetRows(bs) {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r[0], r[1], r[2])
	}
	b.WriteString("\n")
	return b.String()
}
