package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// machine describes where the figures were measured.
type machine struct {
	CPUs                  int
	CPUModel              string
	Memory                string
	Kernel                string
	Go                    string
	SQLiteCLI             string
	SQLiteGo              string // modernc.org/sqlite's bundled SQLite
	loadBefore, loadAfter string
}

func describeMachine(ctx context.Context, sqlite3 string) machine {
	m := machine{CPUs: runtime.NumCPU(), loadBefore: loadAverage()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int64
			if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
				m.Memory = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
				break
			}
		}
		f.Close()
	}
	out := func(name string, args ...string) string {
		b, err := exec.CommandContext(ctx, name, args...).Output()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(string(b))
	}
	m.Kernel = out("uname", "-sr")
	m.Go = strings.TrimPrefix(out("go", "version"), "go version ")
	m.SQLiteCLI = out(sqlite3, "--version")
	if f := strings.Fields(m.SQLiteCLI); len(f) >= 2 {
		m.SQLiteCLI = f[0] + " (" + f[1] + ")"
	}
	m.SQLiteGo = "unknown"
	if db, err := sql.Open("sqlite", ":memory:"); err == nil {
		var v string
		if db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v) == nil {
			m.SQLiteGo = v
		}
		db.Close()
	}
	return m
}

func (m machine) oneLine() string {
	return fmt.Sprintf("%d × %s, %s RAM, %s, sqlite3 CLI %s, load average %s", m.CPUs, m.CPUModel, m.Memory, m.Go, m.SQLiteCLI, m.loadBefore)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// summary is the medians of one store.
type summary struct {
	Wall, WallMin, WallMax, CPU float64 // seconds
	RSS, RSSMax                 float64 // bytes
	Rows, Subagents             float64
	Parquet, Total              float64 // bytes
	Stages                      map[string]float64
	FloorWall, FloorCPU         float64
	FloorParts                  map[string]float64
	Failed                      string
}

func (r sizeResult) summary() summary {
	s := summary{Stages: map[string]float64{}, FloorParts: map[string]float64{}}
	s.Wall = medianOf(r.Runs, func(x runStats) float64 { return secs(x.Wall) })
	s.WallMin, s.WallMax = s.Wall, s.Wall
	for _, x := range r.Runs {
		s.WallMin = min(s.WallMin, secs(x.Wall))
		s.WallMax = max(s.WallMax, secs(x.Wall))
		s.RSSMax = max(s.RSSMax, float64(x.MaxRSS))
		if x.Failed != "" {
			s.Failed = x.Failed
		}
	}
	s.CPU = medianOf(r.Runs, func(x runStats) float64 { return secs(x.CPU()) })
	s.RSS = medianOf(r.Runs, func(x runStats) float64 { return float64(x.MaxRSS) })
	s.Rows = medianOf(r.Runs, func(x runStats) float64 { return float64(x.Rows) })
	s.Subagents = medianOf(r.Runs, func(x runStats) float64 { return float64(x.Subagents) })
	s.Parquet = medianOf(r.Runs, func(x runStats) float64 { return float64(x.ParquetOut) })
	s.Total = medianOf(r.Runs, func(x runStats) float64 { return float64(x.TotalOut) })
	for _, st := range stageNames {
		if _, ok := r.Runs[0].Stages[st]; ok {
			s.Stages[st] = medianOf(r.Runs, func(x runStats) float64 { return secs(x.Stages[st]) })
		}
	}
	if len(r.Floors) > 0 {
		s.FloorWall = medianOf(r.Floors, func(x floorStats) float64 { return secs(x.Wall) })
		s.FloorCPU = medianOf(r.Floors, func(x floorStats) float64 { return secs(x.CPU()) })
		for _, p := range floorParts {
			s.FloorParts[p] = medianOf(r.Floors, func(x floorStats) float64 { return secs(x.Parts[p]) })
		}
	}
	return s
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// storeText describes a store for the report.
func (r sizeResult) storeText() string {
	made := "cached"
	if r.Info.Generated {
		made = "made by this invocation in " + r.Info.GeneratedIn
	}
	what := fmt.Sprintf("storegen scale %g", r.Size.Scale)
	switch {
	case r.Size.Grow > 0:
		what = fmt.Sprintf("testdata/kandev/fresh-activated.db grown ×%d", r.Size.Grow)
	case r.RSSOnly:
		what = "fresh-activated with pathological values (300 MB values, 2,000,000 kandev_meta rows)"
	}
	rows := fmt.Sprintf("%s subagent rows, %s sessions, %s turns, %s messages", count(r.Info.Rows["task_session_subagents"]), count(r.Info.Rows["task_sessions"]),
		count(r.Info.Rows["task_session_turns"]), count(r.Info.Rows["task_session_messages"]))
	if r.Dialect == "postgres" && !r.RSSOnly {
		return fmt.Sprintf("the %s SQLite store (%s) loaded into PostgreSQL in %s: %s", r.Size.Name, what, r.Load.Round(time.Second), rows)
	}
	return fmt.Sprintf("%s, %s: %s (%s)", human(r.Info.Bytes), what, rows, made)
}

// rows renders the store's table as label/value pairs (shared by the
// terminal and the markdown).
func (r sizeResult) rows() [][2]string {
	s := r.summary()
	out := [][2]string{{"store", r.storeText()}}
	if r.RSSOnly {
		if f := r.Runs[0].Failed; f != "" {
			out = append(out, [2]string{"run", "FAILED: " + f})
		}
		return append(out,
			[2]string{"run wall time", fmt.Sprintf("%.2f s", s.Wall)},
			[2]string{"peak RSS", mib(s.RSS)})
	}
	out = append(out,
		[2]string{"runs", fmt.Sprintf("%d (medians; floor and run alternate)", len(r.Runs))},
		[2]string{"run wall time", fmt.Sprintf("%.2f s (min %.2f, max %.2f)", s.Wall, s.WallMin, s.WallMax)},
		[2]string{"run CPU (user+sys)", fmt.Sprintf("%.2f s", s.CPU)},
		[2]string{"rows/s (all source rows / wall)", fmt.Sprintf("%s (%s rows)", count(int64(s.Rows/s.Wall)), count(int64(s.Rows)))},
		[2]string{"peak RSS (binary faulted in from disk)", fmt.Sprintf("%s (max %s)", mib(s.RSS), mib(s.RSSMax))},
	)
	if r.Preread != nil {
		out = append(out, [2]string{"peak RSS, one run with the binary read into the page cache first", mib(float64(r.Preread.MaxRSS))})
	}
	out = append(out,
		[2]string{"output", fmt.Sprintf("%s Parquet (the run's files), %s in all (current/ copies and warehouse.duckdb included)", human(int64(s.Parquet)), human(int64(s.Total)))},
	)
	for _, st := range stageNames {
		if v, ok := s.Stages[st]; ok {
			out = append(out, [2]string{"stage: " + stageLabels[st], fmt.Sprintf("%.2f s", v)})
		}
	}
	if len(r.Floors) > 0 {
		tool := "sqlite3 CLI"
		if r.Dialect == "postgres" {
			tool = "psql"
		}
		out = append(out, [2]string{"floor wall time (" + tool + ")", fmt.Sprintf("%.2f s", s.FloorWall)})
		if r.Dialect == "sqlite" {
			out = append(out, [2]string{"floor CPU (user+sys)", fmt.Sprintf("%.2f s", s.FloorCPU)})
		}
		for _, p := range floorParts {
			if v := s.FloorParts[p]; v > 0 {
				out = append(out, [2]string{"floor: " + p, fmt.Sprintf("%.2f s", v)})
			}
		}
		out = append(out, [2]string{"RATIO run/floor (wall)", ratio(s.Wall, s.FloorWall)})
		if r.Dialect == "sqlite" {
			out = append(out, [2]string{"ratio run/floor (CPU)", ratio(s.CPU, s.FloorCPU)})
		} else {
			out = append(out, [2]string{"run CPU / floor wall (the server's CPU is not counted)", ratio(s.CPU, s.FloorWall)})
		}
		if d := s.Stages["duckdb"]; d > 0 {
			out = append(out, [2]string{"ratio (run − DuckDB rebuild)/floor (wall)", ratio(s.Wall-d, s.FloorWall)})
		}
	}
	if r.Spec != nil {
		out = append(out, [2]string{"spec floor (the previous floor: the extractor's own scan SQL), once", fmt.Sprintf("%.2f s wall, %.2f s CPU: ratio run/spec floor %s",
			secs(r.Spec.Wall), secs(r.Spec.CPU()), ratio(s.Wall, secs(r.Spec.Wall)))})
	}
	return out
}

func (r sizeResult) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s ==\n", r.Name)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, row := range r.rows() {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	tw.Flush()
	return b.String()
}

// sideBySide is the ratios of one invocation in one table.
func sideBySide(results []sizeResult) [][]string {
	out := [][]string{{"store", "run wall", "floor wall", "run/floor", "(run − DuckDB)/floor", "run CPU", "peak RSS"}}
	for _, r := range results {
		if r.RSSOnly {
			continue
		}
		s := r.summary()
		out = append(out, []string{r.Name, fmt.Sprintf("%.2f s", s.Wall), fmt.Sprintf("%.2f s", s.FloorWall), ratio(s.Wall, s.FloorWall),
			ratio(s.Wall-s.Stages["duckdb"], s.FloorWall), fmt.Sprintf("%.2f s", s.CPU), mib(s.RSS)})
	}
	return out
}

func sideBySideText(results []sizeResult) string {
	var b strings.Builder
	b.WriteString("== side by side (medians of this invocation) ==\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, row := range sideBySide(results) {
		fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
	}
	tw.Flush()
	return b.String()
}

// targets evaluates the targets on what was measured.
func targets(results []sizeResult, pq []goBench) [][3]string {
	var out [][3]string
	byName := map[string]summary{}
	for _, r := range results {
		byName[r.Name] = r.summary()
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	within := func(name string, limit float64) {
		if s, ok := byName[name]; ok && s.FloorWall > 0 {
			out = append(out, [3]string{fmt.Sprintf("%s: run within %.1f× the floor (wall)", name, limit), ratio(s.Wall, s.FloorWall), mark(s.Wall <= limit*s.FloorWall)})
		}
	}
	within("large", 1.0)
	within("grown", 1.0)
	within("PostgreSQL large", 1.5)
	for _, n := range []string{"large", "grown", "PostgreSQL large", "pathological (SQLite)", "pathological (PostgreSQL)"} {
		if s, ok := byName[n]; ok {
			v := mib(s.RSSMax)
			if s.Failed != "" {
				v += " (the run FAILED)"
			}
			out = append(out, [3]string{n + ": peak RSS ≤ 256 MiB", v, mark(s.RSSMax <= 256<<20 && s.Failed == "")})
		}
	}
	for _, p := range [][2]string{{"large", "medium"}, {"PostgreSQL large", "PostgreSQL medium"}} {
		l, ok1 := byName[p[0]]
		m, ok2 := byName[p[1]]
		if ok1 && ok2 {
			out = append(out, [3]string{"peak RSS " + p[0] + " ≤ 1.25 × " + p[1], fmt.Sprintf("%s / %s = %s", mib(l.RSS), mib(m.RSS), ratio(l.RSS, m.RSS)), mark(l.RSS <= 1.25*m.RSS)})
		}
	}
	if b, ok := parquetWriterFigure(pq); ok {
		out = append(out, [3]string{"Parquet writing of fact_subagent_context ≥ 2,000,000 rows/s (`" + strings.TrimPrefix(b.Name, "Benchmark") + "`)",
			count(int64(b.RowsPerSec)) + " rows/s", mark(b.RowsPerSec >= parquetTarget)})
	}
	return out
}

func targetsText(results []sizeResult, pq []goBench) string {
	t := targets(results, pq)
	if len(t) == 0 {
		return "targets: measured on the large and grown stores and PostgreSQL large\n"
	}
	var b strings.Builder
	b.WriteString("== targets ==\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, x := range t {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", x[0], x[1], x[2])
	}
	tw.Flush()
	return b.String()
}

func count(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Markers delimit the part of docs/benchmarks.md that the bench rewrites;
// everything outside them is kept.
const (
	beginMarker = "<!-- bench:begin (generated by `make bench`; edits inside are overwritten) -->"
	endMarker   = "<!-- bench:end -->"
)

func writeMarkdown(path string, m machine, results []sizeResult, night *nightlyResult, pq []goBench, took time.Duration) error {
	var g strings.Builder
	g.WriteString(beginMarker + "\n\n")
	fmt.Fprintf(&g, "Measured %s by `make bench` (`%s`), %s in all.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), strings.TrimSpace("go run ./internal/bench "+strings.Join(os.Args[1:], " ")), took.Round(time.Second))
	g.WriteString("| machine | |\n|---|---|\n")
	fmt.Fprintf(&g, "| CPUs (nproc) | %d |\n| CPU model | %s |\n| memory | %s |\n| kernel | %s |\n| Go | %s |\n| SQLite (floor: sqlite3 CLI) | %s |\n| SQLite (extractor: modernc.org/sqlite) | %s |\n| load average before / after | %s / %s |\n\n",
		m.CPUs, m.CPUModel, m.Memory, m.Kernel, m.Go, m.SQLiteCLI, m.SQLiteGo, m.loadBefore, m.loadAfter)
	if sb := sideBySide(results); len(sb) > 1 {
		g.WriteString("### Side by side\n\n")
		g.WriteString("| " + strings.Join(sb[0], " | ") + " |\n|" + strings.Repeat("---|", len(sb[0])) + "\n")
		for _, x := range sb[1:] {
			g.WriteString("| " + strings.Join(x, " | ") + " |\n")
		}
		g.WriteString("\n")
	}
	for _, r := range results {
		fmt.Fprintf(&g, "### %s\n\n| | |\n|---|---|\n", r.Name)
		for _, row := range r.rows() {
			fmt.Fprintf(&g, "| %s | %s |\n", strings.TrimSpace(row[0]), row[1])
		}
		g.WriteString("\n")
	}
	if night != nil {
		g.WriteString(night.markdown())
	}
	if len(pq) > 0 {
		g.WriteString(parquetMarkdown(pq))
	}
	if t := targets(results, pq); len(t) > 0 {
		g.WriteString("### Targets\n\n| target | measured | |\n|---|---|---|\n")
		for _, x := range t {
			fmt.Fprintf(&g, "| %s | %s | %s |\n", x[0], x[1], x[2])
		}
		g.WriteString("\n")
	}
	g.WriteString(endMarker)

	old, err := os.ReadFile(path)
	var doc string
	switch {
	case err == nil && strings.Contains(string(old), endMarker) && strings.Contains(string(old), "<!-- bench:begin"):
		s := string(old)
		i := strings.Index(s, "<!-- bench:begin")
		j := strings.Index(s, endMarker) + len(endMarker)
		doc = s[:i] + g.String() + s[j:]
	case err == nil:
		doc = strings.TrimRight(string(old), "\n") + "\n\n" + g.String() + "\n"
	case os.IsNotExist(err):
		doc = "# Benchmarks\n\nRun `make bench` to measure; it rewrites the section below.\n\n" + g.String() + "\n"
	default:
		return err
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
