package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/demo"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cli runs the command in-process and returns stdout, stderr and the exit code.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, _, code := cli(t, "version")
	if code != 0 || !strings.HasPrefix(out, "kandev-extract ") || !strings.Contains(out, "warehouse schema 1") {
		t.Errorf("version: code %d, %q", code, out)
	}
}

func TestHelpTeaches(t *testing.T) {
	t.Parallel()
	out, _, code := cli(t, "run", "--help")
	for _, want := range []string{"--source", "--warehouse", "--installation", "~/.kandev/data/kandev.db", "Exit status", "Example"} {
		if !strings.Contains(out, want) && !strings.Contains(out, strings.ToLower(want)) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	if code != 0 {
		t.Errorf("help exit code %d", code)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	_, errOut, code := cli(t, "run", "--no-such-flag")
	if code != 2 || !strings.Contains(errOut, "--help") {
		t.Errorf("bad flag: code %d, stderr %q", code, errOut)
	}
	_, errOut, code = cli(t, "query", "-w", t.TempDir(), "")
	if code != 2 || !strings.Contains(errOut, "empty") {
		t.Errorf("query with empty SQL: code %d, stderr %q", code, errOut)
	}
}

func TestRunAndQuery(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/upgraded-backfill.db")
	out, errOut, code := cli(t, "run", "--source", src, "--warehouse", wh, "--installation", "team-a", "--log-format", "text")
	if code != 0 {
		t.Fatalf("run: code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	for _, want := range []string{"installation team-a", "activation state: activated", "51 subagents (22 live, 29 backfill)", "[backfill_provenance]", "kandev-extract query"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// With JSON logs, stdout stays empty and stderr is JSON lines naming
	// the installation.
	out, errOut, code = cli(t, "run", "--source", src, "--warehouse", wh, "--installation", "team-a", "--log-format", "json")
	if code != 0 || out != "" {
		t.Fatalf("run with JSON logs: code %d\nstdout %q", code, out)
	}
	first := strings.SplitN(strings.TrimSpace(errOut), "\n", 2)[0]
	var rec map[string]any
	if err := json.Unmarshal([]byte(first), &rec); err != nil || rec["installation"] != "team-a" {
		t.Errorf("first log line %q is not JSON naming the installation (%v)", first, err)
	}

	out, _, code = cli(t, "query", "--warehouse", wh, "--format", "csv", "SELECT installation_id, activation_state, subagent_rows FROM installations")
	if code != 0 || out != "installation_id,activation_state,subagent_rows\nteam-a,activated,51\n" {
		t.Errorf("query csv: code %d, %q", code, out)
	}
	out, _, code = cli(t, "query", "-w", wh, "-f", "json", "SELECT count(*) AS n FROM subagent_contexts WHERE source = 'backfill'")
	if code != 0 || !strings.Contains(out, `"n": 29`) {
		t.Errorf("query json: code %d, %q", code, out)
	}
	// Lists and maps print as DuckDB prints them.
	out, _, code = cli(t, "query", "-w", wh, "-f", "csv", "SELECT ['a', 'b'] AS l, MAP {'k': 1, 'j': 2} AS m")
	if code != 0 || out != "l,m\n\"[a, b]\",\"{k=1, j=2}\"\n" {
		t.Errorf("query csv of a list and a map: code %d, %q", code, out)
	}
	// The warehouse is opened read-only by query.
	_, errOut, code = cli(t, "query", "-w", wh, "CREATE TABLE x (a INT)")
	if code == 0 || !strings.Contains(strings.ToLower(errOut), "read-only") {
		t.Errorf("write through query: code %d, %q", code, errOut)
	}

	// inspect: the JSON document of a shortfall turn names its missing
	// tool calls; an unknown id exits 10, one in two installations 11.
	out, _, _ = cli(t, "query", "-w", wh, "-f", "csv", "SELECT turn_id, array_to_string(missing_tool_call_ids, ' ') FROM writer_shortfall_turns ORDER BY 1 LIMIT 1")
	turn, missing, _ := strings.Cut(strings.TrimSpace(strings.SplitN(out, "\n", 2)[1]), ",")
	out, errOut, code = cli(t, "inspect", "turn", turn, "-w", wh, "--json")
	var doc struct {
		Format   string
		Sessions []struct {
			Turns []struct {
				TurnID   string `json:"turn_id"`
				Evidence struct {
					Missing []string `json:"message_tool_calls_without_rows"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.Format != "kandev-extract.inspect.v1" || len(doc.Sessions) != 1 ||
		len(doc.Sessions[0].Turns) != 1 || strings.Join(doc.Sessions[0].Turns[0].Evidence.Missing, " ") != missing {
		t.Errorf("inspect turn %s --json: code %d, %v, %s\n%s", turn, code, err, errOut, out)
	}
	if _, errOut, code = cli(t, "inspect", "turn", "no-such-turn", "-w", wh); code != 10 || !strings.Contains(errOut, "not found") {
		t.Errorf("inspect of an unknown turn: code %d, %q", code, errOut)
	}
	if _, _, code = cli(t, "run", "--source", src, "--warehouse", wh, "--installation", "team-b", "-q"); code != 0 {
		t.Fatalf("run team-b: code %d", code)
	}
	if _, errOut, code = cli(t, "inspect", "turn", turn, "-w", wh); code != 11 || !strings.Contains(errOut, "team-a/"+turn) || !strings.Contains(errOut, "team-b/"+turn) {
		t.Errorf("inspect of a turn in two installations: code %d, %q", code, errOut)
	}
	if _, _, code = cli(t, "inspect", "card", turn, "-w", wh); code != 2 {
		t.Errorf("inspect card: code %d, want 2", code)
	}
}

func TestRunFailureExitsOne(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	_, errOut, code := cli(t, "run", "--source", filepath.Join(t.TempDir(), "missing.db"), "--warehouse", wh, "--installation", "x")
	if code != 1 || !strings.Contains(errOut, "missing.db") {
		t.Errorf("missing source: code %d, stderr %q", code, errOut)
	}
	_, errOut, code = cli(t, "run", "--source", repoFile(t, "testdata/kandev/fresh-activated.db"), "--warehouse", wh, "--installation", "bad name!")
	if code != 2 || !strings.Contains(errOut, "installation[0].name") {
		t.Errorf("bad installation name: code %d, stderr %q", code, errOut)
	}
}

// repoDemoStore is the repository's demo store (internal/demo bundles a
// copy of it).
const repoDemoStore = "testdata/demo/kandev-demo.db"

func TestDefaultSourceAndName(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("LocalAppData", home)
	t.Setenv(envSource, "")
	dir := t.TempDir()
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	// No Kandev store: the bundled demo, in the cache directory (not
	// written by resolving), from any directory.
	cacheDemo, err := demo.Location()
	if err != nil || !strings.HasPrefix(cacheDemo, home) {
		t.Fatalf("demo location %q (%v) is not in $HOME's cache directory", cacheDemo, err)
	}
	if s, why, err := resolveSource(""); err != nil || s != cacheDemo || why != whyDemo {
		t.Errorf("demo fallback: %q %q %v", s, why, err)
	}
	if _, err := os.Stat(cacheDemo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("resolving the source wrote the demo store: %v", err)
	}
	if runtime.GOOS != "windows" { // %LocalAppData% there
		t.Setenv("HOME", "")
		if _, _, err := resolveSource(""); err == nil || !strings.Contains(err.Error(), "--source") {
			t.Errorf("no source and no cache directory: %v", err)
		}
	}
	t.Setenv("HOME", home)
	kd := filepath.Join(home, ".kandev", "data")
	os.MkdirAll(kd, 0o755)
	os.WriteFile(filepath.Join(kd, "kandev.db"), []byte("x"), 0o644)
	if s, why, _ := resolveSource(""); s != filepath.Join(kd, "kandev.db") || why != "Kandev's default store" {
		t.Errorf("Kandev default: %q %q", s, why)
	}
	for src, want := range map[string]string{
		"/home/a/.kandev/data/kandev.db":             "kandev",
		"postgres://u:secret@h:5432/kandev_prod?x=1": "kandev_prod",
		"host=h dbname=team password=secret user=u":  "team",
		"/tmp/My Store (copy).db":                    "My-Store-copy",
	} {
		if got := deriveName(src, false); got != want {
			t.Errorf("deriveName(%q) = %q, want %q", src, got, want)
		}
	}
}
