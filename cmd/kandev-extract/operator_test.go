package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/internal/demo"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// The operator's CLI (issue 16): status --json and its exit statuses,
// check, log formats and --quiet, the progress line, the bundled demo
// store, --version and query's formats and inputs. Exit statuses and
// stdout/stderr are asserted on real processes where they matter.

// runProc runs the CLI as a real process in dir (the test's directory
// when ""), with stdin (nil: /dev/null), and returns stdout, stderr and
// the exit status.
func runProc(t *testing.T, env []string, dir string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	cmd := proc(t, env, args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code, sig := exitStatus(err)
	if sig || code < 0 {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String(), code
}

// jsonLines decodes every line of s as a JSON object.
func jsonLines(t *testing.T, what, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: line is not a JSON object: %q (%v)", what, l, err)
		}
		out = append(out, m)
	}
	return out
}

// treeState lists every path under dir with its size and modification
// time: what "writes nothing" is checked against.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + strconv.FormatInt(fi.Size(), 10) + " " + fi.ModTime().Format(time.RFC3339Nano) + " " + fi.Mode().String() + "\n")
		return nil
	})
	return b.String()
}

func TestLogFormatJSONKeepsStdoutEmptyAndQuietIsQuiet(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/upgraded-backfill.db")
	// JSON logs: stdout empty, every stderr line a JSON object, and the
	// summary is a "run summary" record.
	out, errOut, code := runProc(t, nil, "", nil, "run", "-s", src, "-w", wh, "-i", "team-a", "--log-format", "json")
	if code != 0 || out != "" {
		t.Fatalf("--log-format json: exit %d, stdout %q", code, out)
	}
	var summary map[string]any
	for _, m := range jsonLines(t, "stderr", errOut) {
		if m["msg"] == "run summary" {
			summary = m
		}
	}
	if summary == nil || summary["installation"] != "team-a" || summary["subagent_rows"] != float64(51) ||
		summary["activation_state"] != "activated" || !strings.Contains(toJSON(summary["disclosures"]), "backfill_provenance") {
		t.Errorf("run summary record: %v", summary)
	}
	// auto under cron (neither stream a terminal) is JSON too.
	out, errOut, code = runProc(t, nil, "", nil, "run", "-s", src, "-w", wh, "-i", "team-a")
	if code != 0 || out != "" {
		t.Fatalf("auto off a terminal: exit %d, stdout %q", code, out)
	}
	jsonLines(t, "auto stderr", errOut)
	// A log_format from the config file counts like the flag.
	cfg := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(cfg, []byte("log_format = \"text\"\nwarehouse = \""+filepath.ToSlash(wh)+"\"\n[[installation]]\nname = \"team-a\"\nsource = \""+filepath.ToSlash(src)+"\"\n"), 0o644)
	out, _, code = runProc(t, nil, "", nil, "run", "-c", cfg)
	if code != 0 || !strings.Contains(out, "installation team-a (sqlite") {
		t.Errorf("log_format = text: exit %d, stdout %q", code, out)
	}
	// The summary says how warehouse.duckdb was rebuilt (the log line
	// that says it is info, not shown on a terminal without -v).
	if want := "warehouse.duckdb: the previous build updated in "; !strings.Contains(out, want) || !strings.Contains(out, "(1 run added, 0 runs removed; views kept)") {
		t.Errorf("third run's summary does not say %q … (1 run added, 0 runs removed; views kept):\n%s", want, out)
	}
	out, _, code = runProc(t, nil, "", nil, "run", "-c", cfg, "--full-rebuild")
	if want := "warehouse.duckdb: built in full from every retained run in "; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "because: asked for (--full-rebuild)") {
		t.Errorf("--full-rebuild: exit %d, summary without %q … because: asked for (--full-rebuild):\n%s", code, want, out)
	}
	// --quiet: no summary, no info logs (text or JSON).
	for _, f := range []string{"text", "json"} {
		out, errOut, code = runProc(t, nil, "", nil, "--quiet", "run", "-s", src, "-w", wh, "-i", "team-a", "--log-format", f)
		if code != 0 || out != "" || errOut != "" {
			t.Errorf("--quiet --log-format %s: exit %d, stdout %q, stderr %q", f, code, out, errOut)
		}
	}
	// ... but warnings and errors still come.
	_, errOut, code = runProc(t, nil, "", nil, "run", "-q", "-s", filepath.Join(t.TempDir(), "gone.db"), "-w", wh, "-i", "team-a", "--log-format", "json")
	if code != 1 || !strings.Contains(errOut, `"level":"ERROR"`) || !strings.Contains(errOut, "gone.db") {
		t.Errorf("--quiet failure: exit %d, stderr %q", code, errOut)
	}
	// Unknown formats and contradictions are usage errors.
	for _, args := range [][]string{
		{"--log-format", "xml", "run", "-s", src, "-w", wh},
		{"run", "--log-format", "JSON", "-s", src, "-w", wh},
		{"status", "--log-format", "", "-w", wh},
		{"--quiet", "--verbose", "status", "-w", wh},
	} {
		out, errOut, code := runProc(t, nil, "", nil, args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if _, errOut, _ := runProc(t, nil, "", nil, "--log-format", "xml", "run", "-s", src, "-w", wh); !strings.Contains(errOut, `--log-format "xml": use text, json or auto`) {
		t.Errorf("unknown log format message: %q", errOut)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A source that cannot be opened leaves nothing behind for an
// installation the warehouse does not know: no warehouse directory, no
// manifest, no row in runs. For a known installation the failed attempt is
// recorded, and status says so.
func TestWrongSourceLeavesNoEmptyInstallation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	missing := filepath.Join(root, "nonexistent.db")
	out, errOut, code := runProc(t, nil, "", nil, "run", "-s", missing, "-w", wh, "--log-format", "text")
	if code != 1 || !strings.Contains(errOut, "nonexistent.db: no such file") || !strings.Contains(errOut, "nothing was written") {
		t.Errorf("missing store: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "no run: nothing was written to "+wh) || !strings.Contains(out, "installation nonexistent: FAILED") {
		t.Errorf("summary: %q", out)
	}
	if _, err := os.Stat(wh); !os.IsNotExist(err) {
		t.Fatalf("the warehouse directory was created for a source that cannot be opened: %v", err)
	}

	// A SQLite file that is not a Kandev store fails the same way.
	notKandev := filepath.Join(root, "other.db")
	db, err := sql.Open("sqlite", notKandev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, errOut, code := runProc(t, nil, "", nil, "run", "-s", notKandev, "-w", wh); code != 1 || !strings.Contains(errOut, "kandev_meta") {
		t.Errorf("not a Kandev store: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(wh); !os.IsNotExist(err) {
		t.Fatalf("the warehouse directory was created for a store that is not Kandev's: %v", err)
	}

	// With other installations: they run, the unknown one leaves nothing.
	cfg := filepath.Join(root, "c.toml")
	os.WriteFile(cfg, []byte("warehouse = \""+filepath.ToSlash(wh)+"\"\n"+
		"[[installation]]\nname = \"prod\"\nsource = \""+filepath.ToSlash(repoFile(t, "testdata/kandev/fresh-activated.db"))+"\"\n"+
		"[[installation]]\nname = \"ghost\"\nsource = \""+filepath.ToSlash(missing)+"\"\n"), 0o644)
	out, errOut, code = runProc(t, nil, "", nil, "run", "-c", cfg, "--log-format", "text")
	if code != 1 || !strings.Contains(out, "installation prod (sqlite") || !strings.Contains(out, "installation ghost: FAILED") {
		t.Fatalf("prod + ghost: exit %d\n%s\n%s", code, out, errOut)
	}
	ms, err := load.ReadManifests(wh)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].InstallationID != "prod" || ms[0].Status != models.RunCommitted {
		t.Errorf("manifests after prod + ghost: %+v", ms)
	}
	if _, err := os.Stat(filepath.Join(wh, "_runs", "ghost")); !os.IsNotExist(err) {
		t.Errorf("ghost left a manifest directory: %v", err)
	}
	duck := testkit.Duck(t, wh)
	if n := testkit.One(t, duck, `SELECT count(*) FROM runs WHERE installation_id = 'ghost'`); n != "0" {
		t.Errorf("ghost has %s runs", n)
	}
	duck.Close()

	// prod is known: its source vanishing is a recorded failed attempt.
	out, errOut, code = runProc(t, nil, "", nil, "run", "-s", missing, "-w", wh, "-i", "prod")
	if code != 1 || out != "" {
		t.Fatalf("known installation, missing store: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	ms, _ = load.ReadManifests(wh)
	if len(ms) != 2 || ms[1].InstallationID != "prod" || ms[1].Status != models.RunFailed || !strings.Contains(ms[1].Error, "no such file") {
		t.Errorf("manifests: %+v", ms)
	}
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh, "--json")
	sts := jsonLines(t, "status --json", out)
	if code != 1 || len(sts) != 1 || sts[0]["installation"] != "prod" || sts[0]["latest_attempt_failed"] != true || sts[0]["is_stale"] != true ||
		sts[0]["exit_status"] != float64(1) {
		t.Errorf("status after a failed attempt: exit %d\n%s", code, out)
	}
	la, _ := sts[0]["latest_attempt"].(map[string]any)
	if la["status"] != "failed" || !strings.Contains(toJSON(la["error"]), "no such file") || la["run_id"] != ms[1].RunID {
		t.Errorf("latest_attempt: %v", la)
	}
	if cur, _ := sts[0]["current_run"].(map[string]any); cur["run_id"] != ms[0].RunID {
		t.Errorf("current_run: %v, want run %s", cur, ms[0].RunID)
	}
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh)
	if code != 1 || !strings.Contains(out, "run "+ms[1].RunID+" FAILED at") || !strings.Contains(out, "STALE") ||
		!strings.Contains(out, "exit status 1: an installation's latest attempt failed") {
		t.Errorf("status text after a failed attempt: exit %d\n%s", code, out)
	}
}

func TestStatusJSONExitStatusesAndRunInProgress(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/fresh-activated.db")
	if _, errOut, code := cli(t, "run", "-s", src, "-w", wh, "-i", "prod"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	out, errOut, code := runProc(t, nil, "", nil, "status", "-w", wh, "--json")
	sts := jsonLines(t, "status --json", out)
	if code != 0 || len(sts) != 1 {
		t.Fatalf("status --json: exit %d\n%s\n%s", code, out, errOut)
	}
	st := sts[0]
	ms, _ := load.ReadManifests(wh)
	cur, _ := st["current_run"].(map[string]any)
	la, _ := st["latest_attempt"].(map[string]any)
	age, _ := st["data_age_hours"].(float64)
	if st["installation"] != "prod" || cur["run_id"] != ms[0].RunID || cur["commit_seq"] != float64(1) || cur["snapshot_at"] == nil ||
		la["run_id"] != ms[0].RunID || la["status"] != "committed" || la["subagent_rows"] == nil || st["latest_attempt_failed"] != false ||
		st["is_stale"] != false || age < 0 || age > 1 || st["activation_state"] != "activated" || st["subagent_table_shape"] != "execution_aware" ||
		st["health_status"] != "healthy" || st["run_in_progress"] != nil || st["exit_status"] != float64(0) {
		t.Errorf("status --json:\n%s", out)
	}
	if d, _ := st["disclosures"].([]any); len(d) == 0 || !strings.Contains(toJSON(d), `"rule":"capture_boundary"`) {
		t.Errorf("disclosures: %v", d)
	}
	// The fixture's newest subagent row is months old: healthy as measured,
	// but quiet, as 'health' and the report say; the exit status stays 0.
	if rowAge, _ := st["newest_row_age_hours"].(float64); st["writer_quiet"] != true || rowAge < 36*24 {
		t.Errorf("newest_row_age_hours %v, writer_quiet %v: want a quiet writer", st["newest_row_age_hours"], st["writer_quiet"])
	}
	if r, _ := st["runs"].([]any); len(r) != 1 {
		t.Errorf("runs: %v", r)
	}
	// Text: the data's age.
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh)
	if code != 0 || !regexp.MustCompile(`data: +run `+ms[0].RunID+`, snapshot \S+ \S+, \d+\.\d h old\n`).MatchString(out) || strings.Contains(out, "STALE") ||
		!regexp.MustCompile(`writer health: healthy\n +but the newest subagent row is \d+ d \d+ h old, older than 36\.0 h: nothing shows the writer still works`).MatchString(out) {
		t.Errorf("status text:\n%s", out)
	}

	// A run in progress: the lock is held (not taken by status, which
	// neither waits nor fails).
	held, err := load.OpenWarehouse(wh)
	if err != nil {
		t.Fatal(err)
	}
	holder := "pid " + strconv.Itoa(os.Getpid())
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh, "--json")
	if rip, _ := jsonLines(t, "status --json", out)[0]["run_in_progress"].(map[string]any); code != 0 || rip["holder"] != holder {
		t.Errorf("run in progress: exit %d, %v", code, rip)
	}
	out, _, _ = runProc(t, nil, "", nil, "status", "-w", wh)
	if !strings.HasPrefix(out, "run in progress: the warehouse lock is held ("+holder+")") {
		t.Errorf("status text with a run in progress:\n%s", out)
	}
	if h, who, err := load.LockHolder(wh); err != nil || !h || who != holder {
		t.Errorf("LockHolder while held: %v %q %v", h, who, err)
	}
	// The lock is still the holder's.
	if _, _, code := runProc(t, nil, "", nil, "run", "-s", src, "-w", wh, "-i", "prod"); code != exitLocked {
		t.Errorf("run while held: exit %d", code)
	}
	held.Close()
	if h, _, err := load.LockHolder(wh); err != nil || h {
		t.Errorf("LockHolder after release: %v %v", h, err)
	}
	if h, _, err := load.LockHolder(filepath.Join(t.TempDir(), "none")); err != nil || h {
		t.Errorf("LockHolder of no warehouse: %v %v", h, err)
	}

	// Stale data: a run whose staleness threshold (1 ns, below what the
	// CLI accepts) its data is older than by now.
	if _, err := pipeline.Run(context.Background(), pipeline.Options{Warehouse: wh, StaleAfter: time.Nanosecond,
		Installations: []pipeline.Installation{{Name: "prod", Source: src}}}); err != nil {
		t.Fatal(err)
	}
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh, "--json")
	if st := jsonLines(t, "status --json", out)[0]; code != healthExit[models.HealthStale] || st["is_stale"] != true || st["latest_attempt_failed"] != false {
		t.Errorf("stale: exit %d\n%s", code, out)
	}
	if out, _, _ := runProc(t, nil, "", nil, "status", "-w", wh); !strings.Contains(out, "STALE") || !strings.Contains(out, "exit status 8: data is stale") {
		t.Errorf("stale text:\n%s", out)
	}

	// Writer health in alarm: health's exit statuses, the most urgent
	// installation's; a failed latest attempt (1) outranks them.
	wh2 := filepath.Join(t.TempDir(), "wh")
	for name, fixture := range map[string]string{"old": "pre-feature.db", "new": "not-activated.db", "ok": "fresh-activated.db"} {
		if _, errOut, code := cli(t, "run", "-s", repoFile(t, "testdata/kandev/"+fixture), "-w", wh2, "-i", name); code != 0 {
			t.Fatalf("run %s: %s", name, errOut)
		}
	}
	out, _, code = runProc(t, nil, "", nil, "status", "-w", wh2, "--json")
	got := map[string]any{}
	for _, st := range jsonLines(t, "status --json", out) {
		got[st["installation"].(string)] = []any{st["health_status"], st["exit_status"]}
	}
	want := map[string]any{
		"old": []any{"feature_absent", float64(7)},
		"new": []any{"not_activated", float64(5)},
		"ok":  []any{"healthy", float64(0)},
	}
	if code != healthExit[models.HealthNotActivated] || toJSON(got) != toJSON(want) {
		t.Errorf("health in alarm: exit %d, %v", code, got)
	}
	if _, _, code := runProc(t, nil, "", nil, "run", "-s", filepath.Join(t.TempDir(), "gone.db"), "-w", wh2, "-i", "ok"); code != 1 {
		t.Fatalf("failing run: exit %d", code)
	}
	if _, _, code := runProc(t, nil, "", nil, "status", "-w", wh2, "--json"); code != 1 {
		t.Errorf("a failed latest attempt among alarms: exit %d, want 1", code)
	}
	// The exit statuses are documented.
	help, _, _ := cli(t, "status", "--help")
	for _, want := range []string{"--json", "Exit status", "latest attempt failed", "8  data is stale", "3, 4, 5, 6, 7"} {
		if !strings.Contains(help, want) {
			t.Errorf("status --help lacks %q", want)
		}
	}
}

func TestCheckSaysWhatARunWouldDoAndWritesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	src := testkit.CopyFixture(t, "upgraded-backfill.db")
	other := testkit.CopyFixture(t, "fresh-activated.db")
	srcBefore := treeState(t, filepath.Dir(src))

	// No warehouse yet: the source would run; the warehouse is not created.
	out, errOut, code := runProc(t, env, "", nil, "check", "-s", src, "-w", wh, "-i", "team-a")
	if code != 0 {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, re := range []string{
		`installation team-a\n`,
		`binding: +unbound: not bound yet`,
		`activation: +activated; subagent table: execution_aware`,
		`subagent_context_capture_since: +\S+ \(\w+ precision\)`,
		`task_session_subagents +51 +→ fact_subagent_context`,
		`task_sessions +\d+ +→ dim_session`,
		`\[capture_boundary\]`,
		`warehouse: +\S+ does not exist: a run creates it`,
		`a run would: read it and commit a run of installation team-a`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("check output lacks %s:\n%s", re, out)
		}
	}
	if _, err := os.Stat(wh); !os.IsNotExist(err) {
		t.Fatalf("check created the warehouse: %v", err)
	}
	if got := treeState(t, filepath.Dir(src)); got != srcBefore {
		t.Errorf("check changed the source's directory:\n%s\nwas\n%s", got, srcBefore)
	}

	// After a run: the binding matches, and check changes nothing in the
	// warehouse (not even the lock file's time).
	if _, errOut, code := cli(t, "run", "-s", src, "-w", wh, "-i", "team-a"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	before := treeState(t, wh)
	out, _, code = runProc(t, env, "", nil, "check", "-s", src, "-w", wh, "-i", "team-a", "--json")
	r := jsonLines(t, "check --json", out)
	if code != 0 || len(r) != 1 {
		t.Fatalf("check --json: exit %d\n%s", code, out)
	}
	b, _ := r[0]["binding"].(map[string]any)
	whj, _ := r[0]["warehouse"].(map[string]any)
	if r[0]["verdict"] != "would_run" || b["state"] != "matches" || r[0]["activation_state"] != "activated" ||
		r[0]["subagent_table_shape"] != "execution_aware" || whj["exists"] != true || whj["installation_known"] != true || whj["locked"] != false {
		t.Errorf("check --json after a run:\n%s", out)
	}
	if tables, _ := r[0]["tables"].([]any); len(tables) != 6 {
		t.Errorf("tables: %v", tables)
	} else if t0, _ := tables[0].(map[string]any); t0["source_table"] != "task_session_subagents" || t0["warehouse_table"] != "fact_subagent_context" ||
		t0["present"] != true || t0["rows"] != float64(51) {
		t.Errorf("first table: %v", t0)
	}
	if got := treeState(t, wh); got != before {
		t.Errorf("check changed the warehouse:\n%s\nwas\n%s", got, before)
	}

	// Another store under the same name: refused (2), or rebound with --rebind.
	out, _, code = runProc(t, env, "", nil, "check", "-s", other, "-w", wh, "-i", "team-a")
	if code != 2 || !regexp.MustCompile(`binding: +refused: installation "team-a" is bound to sqlite \S+upgraded-backfill.db`).MatchString(out) ||
		!strings.Contains(out, "a run would: refuse it (exit 2)") {
		t.Errorf("check of another store: exit %d\n%s", code, out)
	}
	// check and run agree.
	if _, _, code := runProc(t, nil, "", nil, "run", "-s", other, "-w", wh, "-i", "team-a"); code != 2 {
		t.Errorf("run of another store: exit %d, want 2 as check said", code)
	}
	before = treeState(t, wh)
	out, _, code = runProc(t, env, "", nil, "check", "-s", other, "-w", wh, "-i", "team-a", "--rebind", "--json")
	if r := jsonLines(t, "check --rebind", out)[0]; code != 0 || r["verdict"] != "would_run" || r["binding"].(map[string]any)["state"] != "would_rebind" ||
		!strings.Contains(toJSON(r["disclosures"]), "source_rebound") {
		t.Errorf("check --rebind: exit %d\n%s", code, out)
	}

	// A source that cannot be opened: 1; an unknown scheme: 2.
	out, _, code = runProc(t, env, "", nil, "check", "-s", filepath.Join(root, "gone.db"), "-w", wh, "-i", "gone", "--json")
	if r := jsonLines(t, "check of a missing store", out)[0]; code != 1 || r["verdict"] != "cannot_open" || !strings.Contains(r["error"].(string), "no such file") ||
		!strings.Contains(r["would"].(string), "writing nothing") {
		t.Errorf("check of a missing store: exit %d\n%s", code, out)
	}
	if _, errOut, code := runProc(t, env, "", nil, "check", "-s", "mysql://db/kandev", "-w", wh); code != 2 {
		t.Errorf("unknown scheme: exit %d, %s", code, errOut)
	}
	// A config with a good installation and one whose store is gone: 1.
	cfg := filepath.Join(root, "c.toml")
	os.WriteFile(cfg, []byte("warehouse = \""+filepath.ToSlash(wh)+"\"\n[[installation]]\nname = \"team-a\"\nsource = \""+filepath.ToSlash(src)+"\"\n"+
		"[[installation]]\nname = \"gone\"\nsource = \""+filepath.ToSlash(filepath.Join(root, "gone.db"))+"\"\n"), 0o644)
	out, _, code = runProc(t, env, "", nil, "check", "-c", cfg, "--json")
	if rs := jsonLines(t, "check -c", out); code != 1 || len(rs) != 2 || rs[0]["verdict"] != "would_run" || rs[1]["verdict"] != "cannot_open" {
		t.Errorf("check -c: exit %d\n%s", code, out)
	}
	if got := treeState(t, wh); got != before {
		t.Errorf("check changed the warehouse:\n%s\nwas\n%s", got, before)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("check left temporary files: %v", left)
	}
}

// The bundled demo store: run works from any directory; check reads it
// without writing it to the cache.
func TestBundledDemoFromAnyDirectory(t *testing.T) {
	t.Parallel()
	home, dir, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "LocalAppData=" + filepath.Join(home, "cache"),
		envSource + "=", envWarehouse + "=", "KANDEV_EXTRACT_CONFIG=", "TMPDIR=" + tmp}
	out, errOut, code := runProc(t, env, dir, nil, "check", "--json")
	r := jsonLines(t, "check", out)
	if code != 0 || len(r) != 1 || r[0]["installation"] != "demo" || r[0]["verdict"] != "would_run" ||
		!strings.Contains(toJSON(r[0]["tables"]), `"rows":253`) {
		t.Fatalf("check of the demo: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "cache")); !os.IsNotExist(err) {
		t.Errorf("check wrote the cache directory: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("check left temporary files: %v", left)
	}
	if want := filepath.Join(home, "cache", "kandev-extract", demo.FileName); r[0]["source"] != want {
		t.Errorf("check names the demo's source %v, want %s (where a run reads it)", r[0]["source"], want)
	}
	for i := 0; i < 2; i++ {
		if _, errOut, code := runProc(t, env, dir, nil, "run"); code != 0 {
			t.Fatalf("run %d from %s: exit %d\n%s", i, dir, code, errOut)
		}
	}
	cached := filepath.Join(home, "cache", "kandev-extract", demo.FileName)
	if !demo.Current(cached) {
		t.Errorf("the demo store is not at %s", cached)
	}
	duck := testkit.Duck(t, filepath.Join(dir, "warehouse"))
	defer duck.Close()
	if got := testkit.One(t, duck, `SELECT installation_id || ' ' || subagent_rows || ' ' || source_location FROM installations`); got != "demo 253 "+cached {
		t.Errorf("installations: %q", got)
	}
	if n := testkit.One(t, duck, `SELECT count(*) FROM runs WHERE status = 'committed'`); n != "2" {
		t.Errorf("%s committed runs, want 2", n)
	}
}

func TestVersionFlagAndCommand(t *testing.T) {
	t.Parallel()
	out, _, code := runProc(t, nil, "", nil, "--version")
	want := "kandev-extract " + pipeline.ExtractorVersion() + " (warehouse schema " + strconv.Itoa(models.SchemaVersion) + ")\n"
	if code != 0 || out != want {
		t.Errorf("--version: exit %d, %q, want %q", code, out, want)
	}
	if v, _, _ := runProc(t, nil, "", nil, "version"); v != out {
		t.Errorf("version %q differs from --version %q", v, out)
	}
	if v := pipeline.ExtractorVersion(); v == "dev" || v == "" {
		t.Errorf("unstamped version %q", v)
	}
}

func TestArgumentErrorsAreUsageErrors(t *testing.T) {
	t.Parallel()
	wh := t.TempDir()
	for _, args := range [][]string{{"frobnicate"}, {"run", "extra"}, {"status", "-w", wh, "x"}, {"query", "-w", wh, "SELECT 1", "SELECT 2"}} {
		if _, errOut, code := cli(t, args...); code != 2 || !strings.Contains(errOut, "kandev-extract") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

func TestQueryColumnOrderTimestampsAndInputs(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	if _, errOut, code := cli(t, "run", "-s", repoFile(t, "testdata/kandev/fresh-activated.db"), "-w", wh, "-i", "prod"); code != 0 {
		t.Fatal(errOut)
	}
	const q = `SELECT 2 AS zeta, 'x' AS alpha, TIMESTAMPTZ '2026-08-03 15:32:20.418203+00' AS at, DATE '2026-08-03' AS day,
		TIMESTAMP '2026-08-03 15:32:20' AS wall, NULL AS nothing, 1 AS mid`
	// JSON keeps the query's column order.
	out, _, code := runProc(t, nil, "", nil, "query", "-w", wh, "-f", "json", q)
	wantJSON := `[
  {
    "zeta": 2,
    "alpha": "x",
    "at": "2026-08-03T15:32:20.418203Z",
    "day": "2026-08-03",
    "wall": "2026-08-03T15:32:20",
    "nothing": null,
    "mid": 1
  }
]
`
	if code != 0 || out != wantJSON {
		t.Errorf("query json: exit %d\n%s\nwant\n%s", code, out, wantJSON)
	}
	out, _, _ = runProc(t, nil, "", nil, "query", "-w", wh, "-f", "json", "SELECT 1 AS a WHERE false")
	if out != "[]\n" {
		t.Errorf("empty json result %q", out)
	}
	// Rows keep the order too, and decode.
	out, _, _ = runProc(t, nil, "", nil, "query", "-w", wh, "-f", "json", "SELECT range AS n, 'r' || range AS b FROM range(3)")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 || rows[2]["n"] != float64(2) || !strings.Contains(out, "\"n\": 0,\n    \"b\": \"r0\"") {
		t.Errorf("json rows: %v %q", err, out)
	}
	// CSV: RFC 3339 instants with the T.
	out, _, code = runProc(t, nil, "", nil, "query", "-w", wh, "-f", "csv", q)
	if want := "zeta,alpha,at,day,wall,nothing,mid\n2,x,2026-08-03T15:32:20.418203Z,2026-08-03,2026-08-03T15:32:20,,1\n"; code != 0 || out != want {
		t.Errorf("query csv: exit %d %q, want %q", code, out, want)
	}
	out, _, _ = runProc(t, nil, "", nil, "query", "-w", wh, "-f", "csv", "SELECT snapshot_at FROM current_runs")
	if !regexp.MustCompile(`^snapshot_at\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z\n$`).MatchString(out) {
		t.Errorf("csv instant from the warehouse: %q", out)
	}
	// SQL from a file, from stdin with "-" and with no argument.
	file := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(file, []byte("-- the installations\nSELECT installation_id FROM installations\n"), 0o644)
	for _, c := range []struct {
		args  []string
		stdin io.Reader
	}{
		{[]string{"query", "-w", wh, "-f", "csv", "--file", file}, nil},
		{[]string{"query", "-w", wh, "-f", "csv", "-"}, strings.NewReader("SELECT installation_id FROM installations")},
		{[]string{"query", "-w", wh, "-f", "csv", "--file", "-"}, strings.NewReader("SELECT installation_id FROM installations")},
		{[]string{"query", "-w", wh, "-f", "csv"}, strings.NewReader("SELECT installation_id FROM installations")},
	} {
		if out, errOut, code := runProc(t, nil, "", c.stdin, c.args...); code != 0 || out != "installation_id\nprod\n" {
			t.Errorf("%v: exit %d %q %s", c.args, code, out, errOut)
		}
	}
	// Missing SQL is a usage error: no argument and an empty stdin, an
	// empty file, both an argument and --file, a missing file.
	empty := filepath.Join(t.TempDir(), "empty.sql")
	os.WriteFile(empty, nil, 0o644)
	for _, args := range [][]string{
		{"query", "-w", wh},
		{"query", "-w", wh, "-"},
		{"query", "-w", wh, "--file", empty},
		{"query", "-w", wh, "--file", file, "SELECT 1"},
		{"query", "-w", wh, "--file", filepath.Join(t.TempDir(), "none.sql")},
	} {
		if out, errOut, code := runProc(t, nil, "", nil, args...); code != 2 || out != "" || !strings.Contains(errOut, "query --help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// No argument with stdin a terminal: usage, without waiting for input.
	master, slave := openPTY(t)
	_ = master
	root := newRoot(io.Discard, io.Discard)
	root.SetIn(slave)
	root.SetArgs([]string{"query", "-w", wh})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(context.Background()) }()
	select {
	case err := <-done:
		if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(err.Error(), "no SQL") {
			t.Errorf("stdin a terminal: exit %d, %v", code, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("query waited for input on a terminal")
	}
	// A failing query is still 1.
	if _, _, code := runProc(t, nil, "", nil, "query", "-w", wh, "SELECT * FROM no_such_table"); code != 1 {
		t.Errorf("bad SQL: exit %d", code)
	}
}

func TestProgressRender(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 3, 12, 0, 0, 0, time.UTC)
	totals := map[string]map[string]int64{"prod": {}}
	for i, st := range sourceTables {
		totals["prod"][st.table] = int64(1000 * (i + 1))
	}
	clock := t0
	p := &progress{w: io.Discard, width: 200, now: func() time.Time { return clock }, names: []string{"prod"}, totals: totals,
		start: t0, phase: "start", phaseStart: t0}
	neg := regexp.MustCompile(`-\d|NaN|Inf|/0 `)
	check := func(want ...string) string {
		t.Helper()
		line := p.render(clock)
		if neg.MatchString(line) {
			t.Errorf("line with a negative or undefined figure: %q", line)
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("line %q lacks %q", line, w)
			}
		}
		return line
	}
	if l := check("starting [0.0s]"); strings.Contains(l, "rows/s") {
		t.Errorf("rate before anything was read: %q", l)
	}
	// The scan begins: no rate at 0 s or 0 rows.
	p.update("prod", "fact_subagent_context", 0)
	if l := check("prod: reading task_session_subagents 0/1,000 rows"); strings.Contains(l, "rows/s") || strings.Contains(l, "ETA") {
		t.Errorf("rate or ETA at 0 rows: %q", l)
	}
	clock = clock.Add(100 * time.Millisecond)
	p.update("prod", "fact_subagent_context", 500)
	if l := check("500/1,000 rows"); strings.Contains(l, "rows/s") {
		t.Errorf("rate over 0.1 s: %q", l)
	}
	clock = clock.Add(900 * time.Millisecond)
	p.update("prod", "fact_subagent_context", 1000)
	// 1,000 rows in 1 s; 20,000 left of 21,000.
	check("1,000/1,000 rows · 1.0k rows/s · ETA 20s [1.0s]")
	p.update("prod", "dim_session", 0)
	clock = clock.Add(time.Second)
	p.update("prod", "dim_session", 2500) // more than the total: an estimate exceeded
	if l := check("reading task_sessions 2,500 rows · 1.8k rows/s"); strings.Contains(l, "/2,000") {
		t.Errorf("a total below the rows read is shown: %q", l)
	}
	// Unknown totals: no total, no ETA.
	delete(totals["prod"], "dim_turn")
	p.update("prod", "dim_turn", 10)
	if l := check("reading task_session_turns 10 rows"); strings.Contains(l, "ETA") {
		t.Errorf("ETA with an unknown total: %q", l)
	}
	// Named phases after the scans, with their own elapsed time.
	p.step("prod", pipeline.PhaseHealth)
	clock = clock.Add(1500 * time.Millisecond)
	check("prod: checking writer health · 1.5s [3.5s]")
	p.step("prod", pipeline.PhasePublish)
	check("prod: publishing the run [3.5s]")
	p.step("", pipeline.PhaseRebuild)
	if l := check("rebuilding warehouse.duckdb"); strings.HasPrefix(l, "prod") {
		t.Errorf("the warehouse's phase is named after an installation: %q", l)
	}
	// Several installations are numbered; a narrow terminal clips.
	p.names = []string{"a", "prod"}
	p.update("prod", "fact_subagent_context", 5)
	check("prod (2/2): reading")
	p.width = 30
	if l := p.render(clock); len([]rune(l)) > 29 {
		t.Errorf("line of %d columns on a 30-column terminal: %q", len([]rune(l)), l)
	}
	// The clock going backwards never makes a negative figure.
	clock = t0.Add(-time.Hour)
	p.width = 200
	check()
}

// A small table read within 100 ms of its first line is still drawn at
// its total, not left at 0/N.
func TestProgressDrawsAFastTableAtItsTotal(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 8, 3, 12, 0, 0, 0, time.UTC)
	var out strings.Builder
	p := &progress{w: &out, width: 200, now: func() time.Time { return t0 }, names: []string{"prod"},
		totals: map[string]map[string]int64{"prod": {"dim_task": 50}}, start: t0, phase: "start", phaseStart: t0}
	p.update("prod", "dim_task", 0)
	p.update("prod", "dim_task", 20) // within 100 ms and short of the total: not drawn
	p.update("prod", "dim_task", 50)
	frames := strings.Split(out.String(), "\r\x1b[K")
	if last := frames[len(frames)-1]; !strings.Contains(last, "reading tasks 50/50 rows") {
		t.Errorf("last frame %q, want the table at 50/50", last)
	}
	if strings.Contains(out.String(), "20/50") {
		t.Errorf("a frame drawn within 100 ms short of the total: %q", out.String())
	}
}

// On a terminal, a run shows its phases on one line that it clears at
// the end; with JSON logs on a terminal, and under schedule, there is no
// progress line at all.
func TestProgressOnATerminalOnly(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/upgraded-backfill.db")
	ptyRun := func(args ...string) string {
		t.Helper()
		master, slave := openPTY(t)
		var out bytes.Buffer
		err := run(context.Background(), args, &out, slave)
		if code := exitCode(err, io.Discard); code != 0 {
			t.Fatalf("%v: exit %d: %v", args, code, err)
		}
		slave.Close()
		return readPTY(t, master)
	}
	term := ptyRun("run", "-s", src, "-w", wh, "-i", "prod")
	for _, want := range []string{"prod: opening the source", "prod: reading task_session_subagents 0/51 rows",
		"prod: reading task_sessions", "prod: reading workflow_steps", "prod: checking writer health", "prod: comparing with the previous run (deletions)",
		"prod: writing Parquet files", "prod: publishing the run", "rebuilding warehouse.duckdb", "applying retention"} {
		if !strings.Contains(term, want) {
			t.Errorf("the terminal did not show %q:\n%q", want, term)
		}
	}
	if !strings.HasSuffix(term, "\r\x1b[K") {
		t.Errorf("the progress line is not cleared at the end: %q", term[max(0, len(term)-80):])
	}
	if regexp.MustCompile(`-\d+(\.\d+)?k? rows/s|/-`).MatchString(term) {
		t.Errorf("negative rate or unknown total shown: %q", term)
	}
	// Phases in order.
	last := -1
	for _, p := range []string{"opening the source", "reading task_session_subagents", "checking writer health", "publishing the run", "rebuilding warehouse.duckdb"} {
		i := strings.Index(term, p)
		if i < last {
			t.Errorf("%q shown out of order", p)
		}
		last = i
	}

	// JSON logs on a terminal: JSON lines only.
	term = ptyRun("run", "-s", src, "-w", wh, "-i", "prod", "--log-format", "json")
	for _, l := range strings.Split(strings.TrimSpace(strings.ReplaceAll(term, "\r\n", "\n")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not a JSON line on the terminal: %q", l)
		}
	}
	// --quiet on a terminal: nothing at all.
	if term = ptyRun("run", "-q", "-s", src, "-w", wh, "-i", "prod"); term != "" {
		t.Errorf("--quiet on a terminal showed %q", term)
	}

	// schedule on a terminal, --run-now: JSON lines, no progress line.
	master, slave := openPTY(t)
	var (
		mu   sync.Mutex
		seen bytes.Buffer
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			master.SetReadDeadline(time.Now().Add(90 * time.Second))
			n, err := master.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"schedule", "-s", src, "-w", wh, "-i", "prod", "--schedule", "@every 1h", "--run-now"}, io.Discard, slave)
	}()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		ok := strings.Contains(seen.String(), "scheduled run committed")
		mu.Unlock()
		if ok {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	slave.Close()
	<-readDone
	mu.Lock()
	term = seen.String()
	mu.Unlock()
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(strings.ReplaceAll(term, "\r\n", "\n")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("schedule wrote a line that is not JSON on the terminal: %q", l)
			continue
		}
		msgs = append(msgs, m["msg"].(string))
	}
	sort.Strings(msgs)
	if !strings.Contains(strings.Join(msgs, "|"), "scheduled run committed") {
		t.Errorf("schedule logs: %v", msgs)
	}
}

// PostgreSQL: check reads the planner's estimates (nothing is scanned):
// unknown until the tables are analyzed, then the rows.
func TestCheckPostgresEstimates(t *testing.T) {
	t.Parallel()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, repoFile(t, "testdata/kandev/upgraded-backfill.pg.sql"))
	dsn := c.DSN(db)
	wh := filepath.Join(t.TempDir(), "wh")
	rowsOf := func() map[string]any {
		t.Helper()
		out, errOut, code := cli(t, "check", "-s", dsn, "-i", "team", "-w", wh, "--json")
		r := jsonLines(t, "check --json", out)
		if code != 0 || len(r) != 1 || r[0]["verdict"] != "would_run" || r[0]["dialect"] != "postgres" {
			t.Fatalf("check: exit %d\n%s\n%s", code, out, errOut)
		}
		got := map[string]any{}
		for _, tb := range r[0]["tables"].([]any) {
			m := tb.(map[string]any)
			got[m["source_table"].(string)] = []any{m["rows"], m["estimate"]}
		}
		return got
	}
	pgExecCmd(t, dsn, `VACUUM ANALYZE`)
	got := rowsOf()
	if toJSON(got["task_session_subagents"]) != `[51,true]` || toJSON(got["workflow_steps"]) != `[4,true]` {
		t.Errorf("estimates after ANALYZE: %v", got)
	}
	out, _, _ := cli(t, "check", "-s", dsn, "-i", "team", "-w", wh)
	if !regexp.MustCompile(`task_session_subagents +~51 +→ fact_subagent_context`).MatchString(out) || !strings.Contains(out, "rows PostgreSQL's estimates") {
		t.Errorf("check text:\n%s", out)
	}
	if _, err := os.Stat(wh); !os.IsNotExist(err) {
		t.Errorf("check created the warehouse: %v", err)
	}
}
