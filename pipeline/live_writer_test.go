package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/kandevwriter"
)

// writerEnv makes the test binary, re-executed, act as the Kandev writer.
const writerEnv = "KANDEV_EXTRACT_TEST_WRITER_STORE"

// TestKandevWriterProcess is the separate writer process of TestLiveWriter
// (the test binary re-executed with writerEnv set): it writes turns to the
// store in WAL mode until it is sent SIGTERM, then reports what it
// committed. Run alone, it skips.
func TestKandevWriterProcess(t *testing.T) {
	t.Parallel()
	path := os.Getenv(writerEnv)
	if path == "" {
		t.Skip("the writer process of TestLiveWriter")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// Never outlive a parent that forgot to stop it.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ready := false
	st, err := kandevwriter.Run(ctx, kandevwriter.Options{Path: path, Seed: 8, OnCommit: func(kandevwriter.Stats) {
		if !ready {
			ready = true
			fmt.Println("writer ready")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("writer committed %d %d %d\n", st.Transactions, st.Sessions, st.Subagents)
}

// TestLiveWriter: while another process writes sessions, turns, messages
// and subagent rows to the store in Kandev's WAL mode, several runs
// succeed, each sees more of the store than the last, and each is
// internally consistent — one snapshot for every table and for writer
// health.
func TestLiveWriter(t *testing.T) {
	t.Parallel()
	path := copyFixture(t, "fresh-activated.db")
	baseline, err := CheckHealth(context.Background(), fixture(t, "fresh-activated.db"), HealthOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKandevWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "writer ready" {
			t.Fatalf("writer: %q (stderr %s)", l, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the writer did not start: %s", stderr.String())
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the writer is not in WAL mode: %v", err)
	}

	wh := filepath.Join(t.TempDir(), "wh")
	var runIDs []string
	for i := 0; i < 3; i++ {
		res, o := runStore(t, wh, "live", path, nil)
		if o.Err != nil {
			t.Fatalf("run %d while the writer writes: %v", i, o.Err)
		}
		runIDs = append(runIDs, res.RunID)
		time.Sleep(50 * time.Millisecond)
	}

	// Stop the writer; it reports what it committed and exits cleanly.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var report string
	for l := range lines {
		if strings.HasPrefix(l, "writer committed") {
			report = l
		}
	}
	werr := cmd.Wait()
	stopped = true
	if werr != nil {
		t.Fatalf("writer: %v\n%s", werr, stderr.String())
	}
	var txs, sessions, subagents int
	if _, err := fmt.Sscanf(report, "writer committed %d %d %d", &txs, &sessions, &subagents); err != nil || txs == 0 {
		t.Fatalf("writer report %q: %v", report, err)
	}
	t.Logf("writer committed %d transactions (%d sessions, %d subagents) during %d runs", txs, sessions, subagents, len(runIDs))

	pq := memDuck(t)
	file := func(table, run string) string {
		return "read_parquet('" + filepath.Join(wh, table, "installation_id=live", "run_id="+run, "part-0.parquet") + "')"
	}
	prev := 0
	for i, run := range runIDs {
		fact, sess, turn, health := file("fact_subagent_context", run), file("dim_session", run), file("dim_turn", run), file("fact_writer_health", run)
		n := mustAtoi(t, one(t, pq, `SELECT count(*) FROM `+fact))
		if n <= prev {
			t.Errorf("run %d read %d subagent rows, not more than the run before (%d): the writer's commits are not visible", i, n, prev)
		}
		prev = n
		checks := []struct{ what, q, want string }{
			{"fact rows whose session is not in the run's dim_session",
				`SELECT count(*) FROM ` + fact + ` f ANTI JOIN ` + sess + ` s ON s.session_id = f.task_session_id`, "0"},
			{"turns whose session is not in the run's dim_session",
				`SELECT count(*) FROM ` + turn + ` t ANTI JOIN ` + sess + ` s ON s.session_id = t.session_id`, "0"},
			{"turns whose count differs from the run's fact rows",
				`SELECT count(*) FROM ` + turn + ` t LEFT JOIN (SELECT turn_id, count(*) AS n FROM ` + fact + ` GROUP BY 1) f USING (turn_id)
					WHERE t.subagents_observed <> coalesce(f.n, 0)`, "0"},
			{"sessions whose count differs from the run's fact rows",
				`SELECT count(*) FROM ` + sess + ` s LEFT JOIN (SELECT task_session_id AS session_id, count(*) AS n FROM ` + fact + ` GROUP BY 1) f USING (session_id)
					WHERE s.subagents_observed <> coalesce(f.n, 0)`, "0"},
			{"fact rows the dims do not count",
				`SELECT (SELECT sum(subagents_observed) FROM ` + turn + `) || '|' || (SELECT sum(subagents_observed) FROM ` + sess + `)`, fmt.Sprintf("%d|%d", n, n)},
			// Writer health, evaluated in the same snapshot: the writer commits
			// each subagent-task message with its row, so no shortfall ever;
			// observed keys, collisions and the last observation are exactly
			// those of this run's fact rows after capture_since.
			{"writer health against the run's own rows",
				`SELECT h.status || '|' || h.shortfall || '|' || h.excess || '|' || h.observed_keys || '|' || h.collisions || '|' ||
					(h.expected_keys = h.observed_keys + h.shortfall - h.excess) || '|' || (h.last_observed_at = f.last)
				FROM ` + health + ` h, (SELECT count(DISTINCT (task_session_id, tool_call_id)) AS keys, count(*) - count(DISTINCT (task_session_id, tool_call_id)) AS coll,
					max(observed_at) AS last FROM ` + fact + ` WHERE capture_window = 'after_capture') f`,
				fmt.Sprintf("healthy|0|%d|%s|%s|true|true", baseline.Health.Counts.Excess,
					one(t, pq, `SELECT count(DISTINCT (task_session_id, tool_call_id)) FROM `+fact+` WHERE capture_window = 'after_capture'`),
					one(t, pq, `SELECT count(*) - count(DISTINCT (task_session_id, tool_call_id)) FROM `+fact+` WHERE capture_window = 'after_capture'`))},
			{"installation state against the run's fact",
				`SELECT subagent_rows || '|' || session_rows || '|' || turn_rows FROM ` + file("fact_installation_state", run),
				fmt.Sprintf("%d|%s|%s", n, one(t, pq, `SELECT count(*) FROM `+sess), one(t, pq, `SELECT count(*) FROM `+turn))},
		}
		for _, c := range checks {
			if got := one(t, pq, c.q); got != c.want {
				t.Errorf("run %d: %s = %s, want %s", i, c.what, got, c.want)
			}
		}
	}
	if final := mustAtoi(t, one(t, sourceDB(t, path), `SELECT count(*) FROM task_session_subagents`)); final < prev || final != 253+subagents {
		t.Errorf("store holds %d subagent rows after the writer stopped; the last run read %d, the writer added %d", final, prev, subagents)
	}
}
