package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// hostile is a store string that would retitle the terminal and clear the
// screen, then reverse what follows it.
const (
	hostile        = "\x1b]0;pwned\x07\x1b[2J"
	hostileEscaped = `\x1b]0;pwned\x07\x1b[2J`
	rlo            = "\u202e" // RIGHT-TO-LEFT OVERRIDE
)

// makeWarehouse writes dir/warehouse.duckdb by hand: tables and views that
// need no file but the database (the shape status and query read), with
// hostile text in it. It returns the database's path.
func makeWarehouse(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "warehouse.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE runs (installation_id VARCHAR, run_id VARCHAR, status VARCHAR, finished_at TIMESTAMPTZ,
			duration_ms BIGINT, subagent_rows BIGINT, error VARCHAR)`,
		`INSERT INTO runs VALUES
			('prod', 'r1', 'committed', TIMESTAMPTZ '2026-08-01 10:00:00+00', 1500, 51, NULL),
			('prod', 'r2', 'failed', TIMESTAMPTZ '2026-08-02 10:00:00+00', 20, NULL, 'store x: bad value ' || ?)`,
		`CREATE TABLE installation_state (installation_id VARCHAR, run_id VARCHAR, activation_state VARCHAR, subagent_table_shape VARCHAR)`,
		`INSERT INTO installation_state VALUES ('prod', 'r1', 'activated', 'execution_aware')`,
		`CREATE VIEW installations AS SELECT * FROM installation_state`,
		`CREATE TABLE writer_health (installation_id VARCHAR, run_id VARCHAR, status VARCHAR)`,
		`INSERT INTO writer_health VALUES ('prod', 'r1', 'healthy')`,
		`CREATE TABLE disclosure_rows (installation_id VARCHAR, rule VARCHAR, text VARCHAR)`,
		`INSERT INTO disclosure_rows VALUES ('prod', 'key_unparseable', 'kandev_version is ' || ?)`,
		`CREATE VIEW disclosures AS SELECT * FROM disclosure_rows`,
		`CREATE TABLE contexts (model VARCHAR, n INTEGER)`,
		`INSERT INTO contexts VALUES (?, 1), ('claude-' || ? || 'evil', 2)`,
		`CREATE VIEW subagent_contexts AS SELECT * FROM contexts`,
	} {
		var args []any
		for range strings.Count(s, "?") {
			args = append(args, hostile)
		}
		if strings.Contains(s, "'claude-'") {
			args = []any{hostile, rlo}
		}
		if _, err := db.Exec(s, args...); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// filesUnder lists every file and directory under dir.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func TestQueryCannotReachFilesOrUnlockItself(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	secret := filepath.Join(files, "secret.csv")
	if err := os.WriteFile(secret, []byte("k,v\ntoken,TOPSECRET-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A Parquet file to read, written with DuckDB's own, unrestricted
	// connection.
	pq := filepath.Join(files, "other.parquet")
	if db, err := sql.Open("duckdb", ""); err != nil {
		t.Fatal(err)
	} else if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT 'TOPSECRET-43' AS v) TO '%s' (FORMAT parquet)`, pq)); err != nil {
		t.Fatal(err)
	} else {
		db.Close()
	}
	other := filepath.Join(files, "other.duckdb")
	if db, err := sql.Open("duckdb", other); err != nil {
		t.Fatal(err)
	} else if _, err := db.Exec(`CREATE TABLE t AS SELECT 'TOPSECRET-44' AS v`); err != nil {
		t.Fatal(err)
	} else {
		db.Close()
	}
	otherSum := sum(t, other)
	// A plain directory, and one whose name would end a DuckDB DSN's path
	// ('#' starts a URL fragment: the options after it were dropped, and
	// the file was opened read-write with external access on).
	for _, name := range []string{"wh", "w#h?x=1"} {
		t.Run(name, func(t *testing.T) {
			// Made under a plain name (the test's own DuckDB handle is
			// opened by DSN), then renamed.
			plain := filepath.Join(t.TempDir(), "plain")
			makeWarehouse(t, plain)
			wh := filepath.Join(filepath.Dir(plain), name)
			if err := os.Rename(plain, wh); err != nil {
				t.Fatal(err)
			}
			dbPath := filepath.Join(wh, "warehouse.duckdb")
			before := sum(t, dbPath)
			out := t.TempDir()
			denied := []struct{ sql, want string }{
				{`COPY (SELECT 1 AS a) TO '` + out + `/x.csv'`, "disabled by configuration"},
				{`COPY runs TO '` + out + `/runs.parquet' (FORMAT parquet)`, "disabled by configuration"},
				{`EXPORT DATABASE '` + out + `/export'`, "disabled by configuration"},
				{`SELECT * FROM read_text('/etc/passwd')`, "disabled by configuration"},
				{`SELECT * FROM read_text('` + secret + `')`, "disabled by configuration"},
				{`SELECT * FROM read_blob('` + secret + `')`, "disabled by configuration"},
				{`SELECT * FROM read_csv('` + secret + `')`, "disabled by configuration"},
				{`SELECT * FROM '` + secret + `'`, "disabled by configuration"},
				{`SELECT * FROM read_parquet('` + pq + `')`, "disabled by configuration"},
				{`SELECT * FROM glob('` + files + `/*')`, "disabled by configuration"},
				{`ATTACH '` + out + `/new.duckdb' AS n`, "disabled by configuration"},
				{`ATTACH '` + other + `' AS rw`, "disabled by configuration"},
				{`INSTALL httpfs`, "disabled by configuration"},
				{`LOAD httpfs`, "disabled through configuration"},
				{`SET enable_external_access = true`, "configuration has been locked"},
				{`RESET enable_external_access`, "configuration has been locked"},
				{`SET lock_configuration = false`, "configuration has been locked"},
				{`RESET lock_configuration`, "configuration has been locked"},
				{`SET allowed_directories = ['/']`, "configuration has been locked"},
				{`SET enable_external_access = true; COPY (SELECT 1 AS a) TO '` + out + `/y.csv'`, "configuration has been locked"},
				{`CREATE TABLE x (a INT)`, "read-only"},
				{`INSERT INTO runs (installation_id) VALUES ('planted')`, "read-only"},
				{`DROP VIEW disclosures`, "read-only"},
			}
			for _, c := range denied {
				stdout, stderr, code := cli(t, "query", "-w", wh, c.sql)
				if code != exitFailure || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "kandev-extract: query:") {
					t.Errorf("%s\n  exit %d, stderr %q; want exit 1 and %q", c.sql, code, stderr, c.want)
				}
				if strings.Contains(stdout+stderr, "TOPSECRET") || strings.Contains(stdout, "root:") {
					t.Errorf("%s: a file's content was printed: %q %q", c.sql, stdout, stderr)
				}
			}
			if got := filesUnder(t, out); len(got) != 0 {
				t.Errorf("query wrote files: %v", got)
			}
			if got := filesUnder(t, wh); len(got) != 1 {
				t.Errorf("the warehouse directory holds %v, want only warehouse.duckdb", got)
			}
			if sum(t, dbPath) != before {
				t.Error("warehouse.duckdb changed")
			}
			// Reading the warehouse still works, tables and views alike,
			// under the catalog name it always had.
			stdout, stderr, code := cli(t, "query", "-w", wh, "-f", "csv",
				`SELECT (SELECT count(*) FROM runs) AS runs, (SELECT count(*) FROM warehouse.main.subagent_contexts) AS contexts,
					current_setting('enable_external_access') AS ext, current_setting('lock_configuration') AS locked`)
			if code != 0 || stdout != "runs,contexts,ext,locked\n2,2,false,true\n" {
				t.Errorf("read: exit %d, %q, %q", code, stdout, stderr)
			}
			// --allow-files is the export: external access on, the
			// warehouse still read-only, the configuration still locked.
			stdout, stderr, code = cli(t, "query", "-w", wh, "--allow-files", `COPY (SELECT run_id FROM runs ORDER BY 1) TO '`+out+`/runs.csv'`)
			if b, err := os.ReadFile(filepath.Join(out, "runs.csv")); code != 0 || err != nil || string(b) != "run_id\nr1\nr2\n" {
				t.Errorf("--allow-files export: exit %d, %q, %q, file %q %v", code, stdout, stderr, b, err)
			}
			for sql, want := range map[string]string{
				`CREATE TABLE x (a INT)`:                          "read-only",
				`SET autoinstall_known_extensions = true`:         "configuration has been locked",
				`SELECT count(*) FROM read_csv('` + secret + `')`: "",
			} {
				_, stderr, code := cli(t, "query", "-w", wh, "--allow-files", sql)
				if want == "" && code != 0 || want != "" && (code != exitFailure || !strings.Contains(stderr, want)) {
					t.Errorf("--allow-files %s: exit %d, %q (want %q)", sql, code, stderr, want)
				}
			}
			if sum(t, dbPath) != before {
				t.Error("warehouse.duckdb changed")
			}
		})
	}
	if sum(t, other) != otherSum {
		t.Error("another DuckDB file was changed")
	}
	out, _, _ := cli(t, "query", "--help")
	for _, want := range []string{"--allow-files", "read-only", "COPY", "configuration is locked"} {
		if !strings.Contains(out, want) {
			t.Errorf("query --help lacks %q", want)
		}
	}
}

func TestStatusFailsOnABrokenWarehouse(t *testing.T) {
	t.Parallel()
	valid := func(t *testing.T, wh string) string { return makeWarehouse(t, wh) }
	for _, c := range []struct {
		name   string
		break_ func(t *testing.T, wh string)
	}{
		{"garbage", func(t *testing.T, wh string) {
			os.MkdirAll(wh, 0o755)
			os.WriteFile(filepath.Join(wh, "warehouse.duckdb"), bytes.Repeat([]byte("not a duckdb file\n"), 1000), 0o644)
		}},
		{"truncated to half", func(t *testing.T, wh string) {
			p := valid(t, wh)
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"header only", func(t *testing.T, wh string) {
			p := valid(t, wh)
			if err := os.Truncate(p, 4096); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty file", func(t *testing.T, wh string) {
			os.MkdirAll(wh, 0o755)
			os.WriteFile(filepath.Join(wh, "warehouse.duckdb"), nil, 0o644)
		}},
		{"a view over a file that is gone", func(t *testing.T, wh string) {
			p := valid(t, wh)
			db, err := sql.Open("duckdb", p)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			gone := filepath.Join(wh, "part-0.parquet")
			for _, s := range []string{`COPY installation_state TO '` + gone + `' (FORMAT parquet)`, `DROP VIEW installations`,
				`CREATE VIEW installations AS SELECT * FROM read_parquet('` + gone + `')`} {
				if _, err := db.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
		}},
		{"no runs table", func(t *testing.T, wh string) {
			p := valid(t, wh)
			db, err := sql.Open("duckdb", p)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DROP TABLE runs`); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wh := filepath.Join(t.TempDir(), "wh")
			c.break_(t, wh)
			stdout, stderr, code := cli(t, "status", "-w", wh)
			want := "status: cannot read the warehouse " + filepath.Join(wh, "warehouse.duckdb") + ": "
			if code != exitFailure || stdout != "" || !strings.Contains(stderr, want) || !strings.Contains(stderr, "the next 'kandev-extract run' rebuilds") {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant exit 1, no stdout, %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestStatusAndQueryEscapeStoreText(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	makeWarehouse(t, wh)
	// A warehouse of an older shape (no current_runs, no run_order, no
	// severity) whose latest run, r2, failed: shown, exit 1.
	stdout, stderr, code := cli(t, "status", "-w", wh)
	if code != exitFailure || !strings.Contains(stdout, "  latest:     run r2 FAILED at 2026-08-02 10:00:00Z, did not become current: store x: bad value "+hostileEscaped+"\n") {
		t.Fatalf("status: exit %d, %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{
		"installation prod\n",
		"  activation: activated; subagent table: execution_aware; writer health: healthy\n",
		"error: store x: bad value " + hostileEscaped + "\n",
		"   - [key_unparseable] kandev_version is " + hostileEscaped + "\n",
		"    r1  committed  2026-08-01 10:00:00Z    1.5s  51 subagent rows\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, stdout)
		}
	}
	assertNoControls(t, "status", stdout)

	stdout, _, code = cli(t, "query", "-w", wh, "SELECT model, n FROM subagent_contexts ORDER BY n")
	if code != 0 {
		t.Fatalf("query: exit %d", code)
	}
	assertNoControls(t, "query --format table", stdout)
	for _, want := range []string{hostileEscaped, `claude-\u202eevil`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("query table lacks %q:\n%s", want, stdout)
		}
	}
	// Piped CSV keeps the bytes; JSON escapes every control character and
	// still decodes to the stored value.
	stdout, _, _ = cli(t, "query", "-w", wh, "-f", "csv", "SELECT model FROM subagent_contexts ORDER BY n")
	if stdout != "model\n"+hostile+"\nclaude-"+rlo+"evil\n" {
		t.Errorf("piped csv %q", stdout)
	}
	stdout, _, _ = cli(t, "query", "-w", wh, "-f", "json", "SELECT model FROM subagent_contexts ORDER BY n")
	assertNoControls(t, "query --format json", stdout)
	var recs []map[string]string
	if err := json.Unmarshal([]byte(stdout), &recs); err != nil || len(recs) != 2 || recs[0]["model"] != hostile || recs[1]["model"] != "claude-"+rlo+"evil" {
		t.Errorf("json %q: %v %v", stdout, recs, err)
	}
	// A query error quoting a value is escaped too.
	_, stderr, code = cli(t, "query", "-w", wh, "SELECT model::INTEGER FROM subagent_contexts")
	if code != exitFailure || !strings.Contains(stderr, `\x1b]0;pwned`) {
		t.Errorf("cast error: exit %d, %q", code, stderr)
	}
	assertNoControls(t, "query error", stderr)

	// CSV on a terminal is escaped.
	master, slave := openPTY(t)
	root := newRoot(slave, io.Discard)
	root.SetArgs([]string{"query", "-w", wh, "-f", "csv", "SELECT model FROM subagent_contexts ORDER BY n"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	got := readPTY(t, master)
	if want := "model\r\n" + hostileEscaped + "\r\nclaude-\\u202eevil\r\n"; got != want {
		t.Errorf("csv on a terminal %q, want %q", got, want)
	}
}

// assertNoControls fails when s holds a control character other than a
// newline, or a bidi control.
func assertNoControls(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if r != '\n' && unsafeRune(r) {
			t.Errorf("%s holds the raw control %U:\n%q", what, r, s)
			return
		}
	}
}

// readPTY reads what was written to the terminal (the slave is closed).
func readPTY(t *testing.T, master *os.File) string {
	t.Helper()
	var b bytes.Buffer
	buf := make([]byte, 4096)
	for {
		master.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := master.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestRunSummaryAndHealthEscapeStoreText(t *testing.T) {
	t.Parallel()
	src := testkit.CopyFixture(t, "fresh-activated.db")
	sqlHostile := `char(27) || ']0;pwned' || char(7) || char(27) || '[2J'`
	testkit.SQLiteExec(t, src,
		`UPDATE kandev_meta SET value = `+sqlHostile+` WHERE key = 'kandev_version'`,
		`UPDATE kandev_meta SET value = 'soon' || `+sqlHostile+` || char(8238) WHERE key = 'subagent_context_backfill_through'`,
	)
	wh := filepath.Join(t.TempDir(), "wh")
	stdout, stderr, code := cli(t, "run", "-s", src, "-w", wh, "-i", "prod", "--log-format", "text")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	assertNoControls(t, "run summary", stdout)
	assertNoControls(t, "run logs", stderr)
	_, stderr, _ = cli(t, "run", "-s", src, "-w", wh, "-i", "prod", "--log-format", "json")
	assertNoControls(t, "run JSON logs", stderr)
	for _, want := range []string{"kandev " + hostileEscaped + ")", `UNPARSEABLE "soon\x1b]0;pwned\a\x1b[2J\u202e"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}

	// Writer health with an unparseable capture key that holds the text.
	testkit.SQLiteExec(t, src, `UPDATE kandev_meta SET value = 'x' || `+sqlHostile+` || char(8238) WHERE key = 'subagent_context_capture_since'`)
	stdout, _, code = cli(t, "health", "-s", src)
	if code != healthExit[models.HealthKeyUnparseable] || !strings.Contains(stdout, `holds "x\x1b]0;pwned\a\x1b[2J\u202e"`) {
		t.Errorf("health: exit %d\n%s", code, stdout)
	}
	assertNoControls(t, "health", stdout)
	stdout, _, _ = cli(t, "health", "-s", src, "--json")
	assertNoControls(t, "health --json", stdout)
	if !strings.Contains(stdout, `x\u001b]0;pwned\u0007\u001b[2J\u202e`) {
		t.Errorf("health --json:\n%s", stdout)
	}
}

func TestTermSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain text, é, 日本, 🙂, a\\b": "plain text, é, 日本, 🙂, a\\b",
		hostile:                      hostileEscaped,
		"tab\there\nnew\rline":       `tab\there\nnew\rline`,
		"nul\x00 del\x7f":            `nul\x00 del\x7f`,
		"c1 \u009b31m \u0085":        `c1 \u009b31m \u0085`,
		"bidi \u202a\u202b\u202c\u202d\u202e \u2066\u2067\u2068\u2069 \u200f": `bidi \u202a\u202b\u202c\u202d\u202e \u2066\u2067\u2068\u2069 ` + "\u200f",
		"bad \x9b[31m \xff": `bad \x9b[31m \xff`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := termSafeLines("line one \x1b[2J\nLINE 1: x\x07"); got != "line one \\x1b[2J\nLINE 1: x\\x07" {
		t.Errorf("termSafeLines: %q", got)
	}
	var b bytes.Buffer
	printSafe(&b, "%s|%v|%s|%d|%s\n", "a\x1b", fmt.Errorf("e\x1b"), namedText("n\u202e"), 7, (*string)(nil))
	if got := b.String(); got != `a\x1b|e\x1b|n\u202e|7|%!s(*string=<nil>)`+"\n" {
		t.Errorf("printSafe: %q", got)
	}
	// JSON: the same value, no raw control.
	v := map[string]string{"k": "del\x7f c1\u009b bidi\u202e esc\x1b é"}
	b.Reset()
	if err := writeJSON(&b, v); err != nil {
		t.Fatal(err)
	}
	assertNoControls(t, "json", b.String())
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["k"] != v["k"] {
		t.Errorf("json %q decodes to %q (%v)", b.String(), back, err)
	}
}

type namedText string

func TestLogsEscapeStoreText(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		var b bytes.Buffer
		g := &globals{logFormat: format, stderr: &b}
		g.logger().Warn("installation failed", "model", hostile+rlo+"\u009b", "err", fmt.Errorf("bad %s", hostile))
		assertNoControls(t, format+" log", strings.TrimSuffix(b.String(), "\n"))
		if format == "json" {
			var m map[string]any
			if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["model"] != hostile+rlo+"\u009b" || m["err"] != "bad "+hostile {
				t.Errorf("json log %q decodes to %v (%v)", b.String(), m, err)
			}
		}
	}
}

// TestScheduleRunNowIsWaitedForOnSIGTERM: the --run-now run is a real run
// of the schedule: SIGTERM during it interrupts it cleanly (staging
// discarded, the failure recorded, warehouse.duckdb rebuilt) before the
// process exits, as for a run started by a tick.
func TestScheduleRunNowIsWaitedForOnSIGTERM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A real store: its run stages its files first and takes hundreds of
	// milliseconds more (seconds under -race) before it commits, while the
	// signal follows the first staged file within milliseconds.
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	wh := filepath.Join(dir, "wh")
	// A schedule that never fires during the test: only --run-now runs.
	cmd := proc(t, nil, "schedule", "-s", src, "-w", wh, "-i", "big", "--schedule", "0 0 1 1 *", "--run-now")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// SIGTERM once the run is writing its staging files.
	staging := filepath.Join(wh, "_staging")
	deadline := time.Now().Add(60 * time.Second)
	for len(regularFiles(staging)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run wrote no staging file within 60s\n%s", logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("schedule exited before the run staged anything: %v\n%s", err, logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if code, sig := exitStatus(err); code != 0 || sig {
			t.Errorf("schedule exit %d (signaled %v) after SIGTERM\n%s", code, sig, logs.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("schedule did not stop within 60s of SIGTERM\n%s", logs.String())
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("_staging left behind (%v): %v", err, filesUnder(t, staging))
	}
	manifests, _ := filepath.Glob(filepath.Join(wh, "_runs", "big", "*.json"))
	if len(manifests) != 1 {
		t.Fatalf("manifests under _runs/big: %v\n%s", manifests, logs.String())
	}
	var m struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	b, _ := os.ReadFile(manifests[0])
	if err := json.Unmarshal(b, &m); err != nil || m.Status != "failed" || !strings.Contains(m.Error, "interrupted") {
		t.Fatalf("manifest %s: %v (the run must be recorded as failed, interrupted; a committed run means it ended before SIGTERM arrived: make the store larger)", b, err)
	}
	db, err := sql.Open("duckdb", filepath.Join(wh, "warehouse.duckdb")+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status, errText string
	if err := db.QueryRow(`SELECT status, error FROM runs WHERE installation_id = 'big' AND run_id = ?`, m.RunID).Scan(&status, &errText); err != nil || status != "failed" || !strings.Contains(errText, "interrupted") {
		t.Errorf("runs row of %s: %q %q %v (warehouse.duckdb was not rebuilt with the interrupted run)", m.RunID, status, errText, err)
	}
	if !strings.Contains(logs.String(), "schedule stopped") {
		t.Errorf("no 'schedule stopped' in the logs:\n%s", logs.String())
	}
}

// regularFiles lists the files (not directories) under dir.
func regularFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
