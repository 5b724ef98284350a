package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/load"
)

func writeConfig(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "kx.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two installations, one SQLite and one PostgreSQL, one of them broken:
// the other's data lands, the failure is recorded, the exit code says so,
// and the broken one keeps its last good data.
func TestMixedInstallationsOneBroken(t *testing.T) {
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, repoFile(t, "testdata/kandev/upgraded-backfill.pg.sql"))
	t.Setenv("KX_TEAM_DSN", c.DSN(db))
	wh := filepath.Join(t.TempDir(), "wh")
	lite := filepath.Join(t.TempDir(), "laptop.db")
	data, _ := os.ReadFile(repoFile(t, "testdata/kandev/fresh-activated.db"))
	os.WriteFile(lite, data, 0o644)
	cfg := writeConfig(t, fmt.Sprintf(`warehouse = %q
[[installation]]
name = "laptop"
source = %q
[[installation]]
name = "team"
source_env = "KX_TEAM_DSN"
`, wh, lite))
	if out, errOut, code := cli(t, "run", "--config", cfg); code != 0 {
		t.Fatalf("both good: %d\n%s\n%s", code, out, errOut)
	}
	// Break the PostgreSQL installation: the SQLite one still lands.
	pgExecCmd(t, c.DSN(db), `ALTER TABLE task_sessions RENAME TO task_sessions_gone`)
	out, errOut, code := cli(t, "run", "--config", cfg, "--log-format", "text")
	if code != 1 || !strings.Contains(out, "installation team: FAILED") || !strings.Contains(out, "installation laptop (sqlite") {
		t.Fatalf("one broken: code %d\n%s\n%s", code, out, errOut)
	}
	got := queryCSV(t, wh, `SELECT installation_id, status, (error LIKE '%task_sessions is missing%') AS missing FROM runs ORDER BY finished_at`)
	want := "installation_id,status,missing\nlaptop,committed,\nteam,committed,\nlaptop,committed,\nteam,failed,true\n"
	if got != want {
		t.Errorf("runs:\n%s\nwant\n%s", got, want)
	}
	// The failed installation's last good data is still current.
	if got := queryCSV(t, wh, `SELECT installation_id, count(*) FROM subagent_contexts GROUP BY 1 ORDER BY 1`); got != "installation_id,count_star()\nlaptop,253\nteam,51\n" {
		t.Errorf("current data:\n%s", got)
	}
	// And the reverse: a broken SQLite file does not stop PostgreSQL.
	pgExecCmd(t, c.DSN(db), `ALTER TABLE task_sessions_gone RENAME TO task_sessions`)
	os.WriteFile(lite, []byte("not a database"), 0o644)
	out, _, code = cli(t, "run", "--config", cfg, "--log-format", "text")
	if code != 1 || !strings.Contains(out, "installation laptop: FAILED") || !strings.Contains(out, "installation team (postgres") {
		t.Fatalf("sqlite broken: code %d\n%s", code, out)
	}
	// status shows both, from the warehouse alone.
	out, _, code = cli(t, "status", "-w", wh)
	for _, want := range []string{"installation laptop", "installation team", "failed", "committed", "writer health: shortfall", "[backfill_provenance]"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	// laptop's latest attempt failed: status exits 1 (it outranks team's
	// shortfall, 3).
	if code != 1 {
		t.Errorf("status exit %d, want 1", code)
	}
}

func TestRetentionKeepsTheLastRuns(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	src := repoFile(t, "testdata/kandev/legacy-second-precision.db")
	for i := 0; i < 4; i++ {
		if _, errOut, code := cli(t, "run", "-s", src, "-w", wh, "-i", "a", "--retention", "2"); code != 0 {
			t.Fatal(errOut)
		}
	}
	ms, err := load.ReadManifests(wh)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d manifests kept, want 2", len(ms))
	}
	parts, _ := filepath.Glob(filepath.Join(wh, "fact_subagent_context", "installation_id=a", "run_id=*"))
	if len(parts) != 2 {
		t.Errorf("%d fact partitions kept, want 2", len(parts))
	}
	if got := queryCSV(t, wh, `SELECT count(DISTINCT run_id), count(*) FROM fact_subagent_context_history`); got != "count(DISTINCT run_id),count_star()\n2,32\n" {
		t.Errorf("history: %s", got)
	}
	if got := queryCSV(t, wh, `SELECT count(*) FROM writer_health_history`); got != "count_star()\n2\n" {
		t.Errorf("health history: %s", got)
	}
}

func TestConfigErrorsAreUsageErrors(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "retention = -1\n")
	_, errOut, code := cli(t, "run", "--config", cfg)
	if code != 2 || !strings.Contains(errOut, "retention") || !strings.Contains(errOut, cfg) {
		t.Errorf("code %d, %s", code, errOut)
	}
	cfg = writeConfig(t, "[[installation]]\nname = \"x\"\nsource = \"a.db\"\n")
	_, errOut, code = cli(t, "run", "--config", cfg, "--installation", "y")
	if code != 2 || !strings.Contains(errOut, `installation "y" is not in`) {
		t.Errorf("code %d, %s", code, errOut)
	}
}

func queryCSV(t *testing.T, wh, q string) string {
	t.Helper()
	out, errOut, code := cli(t, "query", "-w", wh, "-f", "csv", q)
	if code != 0 {
		t.Fatalf("query %s: %s", q, errOut)
	}
	return out
}

// The commands that read only the warehouse (query, status, report) take
// it from the config file without resolving its sources: a source_env
// variable unset in an operator's shell does not stop them; run still
// refuses it (a configuration error, 2).
func TestReadersIgnoreTheConfigsSources(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	store := repoFile(t, "testdata/kandev/fresh-activated.db")
	if _, errOut, code := cli(t, "run", "-s", store, "-w", wh, "-i", "team", "-q"); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	cfg := writeConfig(t, "warehouse = "+strconv.Quote(wh)+"\n[[installation]]\nname = \"team\"\nsource_env = \"KX_TEST_NEVER_SET_DSN\"\n")
	out, errOut, code := cli(t, "query", "--config", cfg, "-f", "csv", "SELECT installation_id FROM installations")
	if code != 0 || out != "installation_id\nteam\n" {
		t.Errorf("query --config: code %d, %q, %s", code, out, errOut)
	}
	if _, errOut, code := cli(t, "status", "--config", cfg); code != 0 {
		t.Errorf("status --config: code %d, %s", code, errOut)
	}
	if _, errOut, code := cli(t, "report", "--config", cfg, "--out", filepath.Join(t.TempDir(), "r.html")); code != 0 {
		t.Errorf("report --config: code %d, %s", code, errOut)
	}
	if _, errOut, code := cli(t, "run", "--config", cfg); code != 2 || !strings.Contains(errOut, "KX_TEST_NEVER_SET_DSN") {
		t.Errorf("run --config with source_env unset: code %d, %s", code, errOut)
	}
}

// A bad --retention or --schedule is reported as the flag's, not as the
// config file's.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "retention = 3\nschedule = \"0 2 * * *\"\n")
	_, errOut, code := cli(t, "run", "--config", cfg, "--retention", "0")
	if code != 2 || !strings.Contains(errOut, "--retention 0: must be at least 1") || strings.Contains(errOut, "kx.toml") {
		t.Errorf("--retention 0: code %d, %s", code, errOut)
	}
	_, errOut, code = cli(t, "schedule", "--config", cfg, "--schedule", "bogus")
	if code != 2 || !strings.Contains(errOut, `--schedule "bogus"`) || strings.Contains(errOut, "kx.toml") {
		t.Errorf("--schedule bogus: code %d, %s", code, errOut)
	}
	for _, c := range [][]string{{"check", "--connect-timeout", "500ms"}, {"run", "--stall-timeout", "0s"}, {"health", "--stall-timeout", "0"}} {
		_, errOut, code = cli(t, append(c, "--config", cfg)...)
		if code != 2 || !strings.Contains(errOut, c[1]+" "+strings.TrimSuffix(c[2], "0")) || !strings.Contains(errOut, "must be at least 1s") || strings.Contains(errOut, "kx.toml") {
			t.Errorf("%v: code %d, %s", c, code, errOut)
		}
	}
}
