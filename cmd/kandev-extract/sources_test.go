package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
)

// A mistyped scheme is a usage error that never echoes the password; a
// password on the command line works but is warned about, and appears in
// no output.
func TestInlinePasswordWarns(t *testing.T) {
	t.Parallel()
	wh := filepath.Join(t.TempDir(), "wh")
	out, errOut, code := cli(t, "run", "-s", "postgress://u:Hunter2xyz@db/kandev", "-w", wh)
	if code != 2 || strings.Contains(out+errOut, "Hunter2xyz") || !strings.Contains(errOut, "postgres://") {
		t.Errorf("mistyped scheme: code %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "run", "-s", "postgres://u:Secret9876@127.0.0.1:1/kandev", "-w", wh, "--connect-timeout", "1s", "-i", "pg")
	if code != 1 || strings.Contains(out+errOut, "Secret9876") {
		t.Errorf("unreachable server: code %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: --source carries a password") || !strings.Contains(errOut, "PGPASSWORD") {
		t.Errorf("no warning about the inline password:\n%s", errOut)
	}
	filepath.Walk(wh, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "Secret9876") {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
}

// A second store under a bound name is refused with exit 2; --rebind
// accepts it.
func TestSourceChangeExitsTwo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	a := filepath.Join(root, "a", "kandev.db")
	b := filepath.Join(root, "b", "kandev.db")
	for p, f := range map[string]string{a: "fresh-activated.db", b: "upgraded-backfill.db"} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, _ := os.ReadFile(repoFile(t, "testdata/kandev/"+f))
		os.WriteFile(p, data, 0o644)
	}
	if _, errOut, code := cli(t, "run", "-s", a, "-w", wh); code != 0 {
		t.Fatalf("first: %d %s", code, errOut)
	}
	_, errOut, code := cli(t, "run", "-s", b, "-w", wh)
	if code != 2 || !strings.Contains(errOut, "bound to another source") || !strings.Contains(errOut, "--rebind") {
		t.Errorf("second store: code %d: %s", code, errOut)
	}
	if _, errOut, code := cli(t, "run", "-s", b, "-w", wh, "--rebind"); code != 0 {
		t.Errorf("rebind: %d %s", code, errOut)
	}
}

// health checks every configured installation (one JSON object each, one
// per line) and exits with the most urgent status: 9 when a key changed
// since the last run, 8 when the newest row is older than the threshold.
func TestHealthEveryInstallation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wh := filepath.Join(root, "wh")
	lab := testkit.CopyFixture(t, "fresh-activated.db")
	cfg := filepath.Join(root, "kx.toml")
	os.WriteFile(cfg, []byte(`warehouse = "`+wh+`"
[[installation]]
name = "lab"
source = "`+lab+`"
[[installation]]
name = "old"
source = "`+repoFile(t, "testdata/kandev/upgraded-backfill.db")+`"
`), 0o644)
	if _, errOut, code := cli(t, "run", "--config", cfg); code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	out, _, code := cli(t, "health", "--config", cfg, "--json", "--stale-after", "87600h")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("health --json printed %d lines:\n%s", len(lines), out)
	}
	var names []string
	for _, l := range lines {
		var r struct {
			Installation string `json:"installation"`
			Status       string `json:"status"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		names = append(names, r.Installation+"="+r.Status)
	}
	if strings.Join(names, ",") != "lab=healthy,old=shortfall" || code != 3 {
		t.Errorf("health: %v, exit %d", names, code)
	}
	if _, _, code := cli(t, "health", "--config", cfg, "-i", "lab"); code != 8 {
		t.Errorf("stale writer: exit %d, want 8", code)
	}
	testkit.SQLiteExec(t, lab, `UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	out, _, code = cli(t, "health", "--config", cfg, "--stale-after", "87600h")
	if code != 9 || !strings.Contains(out, "KEY CHANGED: subagent_context_capture_since") {
		t.Errorf("changed key: exit %d\n%s", code, out)
	}
}

// Taking the password out of a PostgreSQL DSN, as the inline-password
// warning advises, keeps the installation's binding: the same role on the
// same server and database is the same store (here the second run reads
// the password from a passfile). Another role is still another source.
func TestPasswordOutOfTheDSNKeepsTheBinding(t *testing.T) {
	t.Parallel()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, repoFile(t, "testdata/kandev/fresh-activated.pg.sql"))
	role, secret := "kx_bind_"+db, "Pw-"+db+"-7x"
	if err := c.CreateRole(context.Background(), role, secret, db); err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(t.TempDir(), "wh")
	out, errOut, code := cli(t, "run", "-s", c.RoleDSN(role, secret, db), "-w", wh, "-i", "team", "--log-format", "text")
	if code != 0 || !strings.Contains(errOut, "carries a password") {
		t.Fatalf("inline password: code %d\n%s%s", code, out, errOut)
	}
	passfile := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(passfile, []byte(fmt.Sprintf("127.0.0.1:%d:%s:%s:%s\n", c.Port(), db, role, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	noPassword := c.RoleDSN(role, "", db) + "&passfile=" + url.QueryEscape(passfile)
	out, errOut, code = cli(t, "run", "-s", noPassword, "-w", wh, "-i", "team", "--log-format", "text")
	if code != 0 || strings.Contains(out+errOut, "bound to another source") || strings.Contains(out+errOut, secret) {
		t.Fatalf("the password from a passfile: code %d\n%s%s", code, out, errOut)
	}
	if got := queryCSV(t, wh, `SELECT count(*) FILTER (WHERE status = 'committed') FROM runs WHERE installation_id = 'team'`); got != "count_star() FILTER (WHERE (status = 'committed'))\n2\n" {
		t.Errorf("committed runs: %q", got)
	}
	_, errOut, code = cli(t, "run", "-s", c.DSN(db), "-w", wh, "-i", "team")
	if code != 2 || !strings.Contains(errOut, "bound to another source") {
		t.Errorf("another role: code %d, %s", code, errOut)
	}
}

// check finds a role that cannot read a table a run reads (a scanned
// table, or the messages writer health reads) before the run does: exit
// 1, naming the table and the grant.
func TestCheckFindsAMissingGrant(t *testing.T) {
	t.Parallel()
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, repoFile(t, "testdata/kandev/fresh-activated.pg.sql"))
	ctx := context.Background()
	for i, table := range []string{"workflow_steps", "task_session_messages"} {
		role, secret := fmt.Sprintf("kx_grant%d_%s", i, db), "Pw-"+db
		if err := c.CreateRole(ctx, role, secret, db); err != nil {
			t.Fatal(err)
		}
		dsn := c.RoleDSN(role, secret, db)
		if out, errOut, code := cli(t, "check", "-s", dsn, "-w", filepath.Join(t.TempDir(), "wh"), "-i", "team"); code != 0 {
			t.Fatalf("check with every grant: code %d\n%s%s", code, out, errOut)
		}
		if err := c.Exec(ctx, db, fmt.Sprintf(`REVOKE SELECT ON %s FROM %s`, table, role)); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := cli(t, "check", "-s", dsn, "-w", filepath.Join(t.TempDir(), "wh"), "-i", "team")
		if code != 1 || !strings.Contains(out+errOut, table+": permission denied") || !strings.Contains(out+errOut, "grant the role SELECT") {
			t.Errorf("check without SELECT on %s: code %d\n%s%s", table, code, out, errOut)
		}
		// A run of an installation the warehouse does not know yet fails
		// the same way before it writes anything.
		wh := filepath.Join(t.TempDir(), "wh")
		out, errOut, code = cli(t, "run", "-s", dsn, "-w", wh, "-i", "team")
		if _, err := os.Stat(wh); code != 1 || !strings.Contains(out+errOut, table+": permission denied") || !os.IsNotExist(err) {
			t.Errorf("first run without SELECT on %s: code %d, warehouse %v\n%s%s", table, code, err, out, errOut)
		}
	}
}
