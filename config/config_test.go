package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/extract"
)

func write(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "kx.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadAndResolve(t *testing.T) {
	p := write(t, `
warehouse = "/srv/wh"
retention = 7
schedule = "30 1 * * *"
[[installation]]
name = "laptop"
source = "/home/u/.kandev/data/kandev.db"
[[installation]]
name = "team"
source_env = "TEAM_DSN"
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyEnv(env(map[string]string{EnvRetention: "3"})); err != nil {
		t.Fatal(err)
	}
	ins, err := c.Resolve(env(map[string]string{"TEAM_DSN": "postgres://r@db/kandev"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Warehouse != "/srv/wh" || c.Retention != 3 || c.Schedule != "30 1 * * *" || len(ins) != 2 ||
		ins[0].Source != "/home/u/.kandev/data/kandev.db" || ins[1].Source != "postgres://r@db/kandev" {
		t.Errorf("config = %+v, installations = %+v", c, ins)
	}
}

func TestValidationNamesTheField(t *testing.T) {
	tests := []struct {
		body, field string
		env         map[string]string
	}{
		{`retention = 0`, "retention", nil},
		{`schedule = "every night"`, `schedule = "every night"`, nil},
		{`log_format = "xml"`, "log_format", nil},
		{"[[installation]]\nname = \"bad name\"\nsource = \"x.db\"", "installation[0].name", nil},
		{"[[installation]]\nname = \"a\"", `installation "a".source`, nil},
		{"[[installation]]\nname = \"a\"\nsource = \"x\"\nsource_env = \"Y\"", "not both", nil},
		{"[[installation]]\nname = \"a\"\nsource_env = \"NOT_SET\"", `source_env = "NOT_SET"`, nil},
		{"[[installation]]\nname = \"a\"\nsource = \"x\"\n[[installation]]\nname = \"a\"\nsource = \"y\"", "configured twice", nil},
	}
	for _, tt := range tests {
		c, err := Load(write(t, tt.body))
		if err == nil {
			_, err = c.Resolve(env(tt.env))
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%q: error %v, want a field error naming %q", tt.body, err, tt.field)
		}
	}
}

func TestUnknownKeysAndSyntax(t *testing.T) {
	if _, err := Load(write(t, "warehous = \"typo\"")); err == nil || !strings.Contains(err.Error(), "warehous") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := Load(write(t, "warehouse = ")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("syntax error without a position: %v", err)
	}
	var c Config = Default()
	if err := c.ApplyEnv(env(map[string]string{EnvRetention: "many"})); err == nil || !strings.Contains(err.Error(), EnvRetention) {
		t.Errorf("bad env: %v", err)
	}
}

func TestExampleConfigIsValid(t *testing.T) {
	c, err := Load(filepath.Join("..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ins, err := c.Resolve(env(nil))
	if err != nil || len(ins) != 1 || ins[0].Name != "demo" {
		t.Errorf("example: %v %+v", err, ins)
	}
}

// TestPostgresTimeouts: connect_timeout and stall_timeout are read as
// durations, globally and per installation, from the file, the environment
// and the command line (ForceTimeouts), in that order; unset they stay 0,
// which extract.OpenOptions reads as its defaults.
func TestPostgresTimeouts(t *testing.T) {
	p := write(t, `
connect_timeout = "45s"
stall_timeout = "20m"
[[installation]]
name = "big"
source = "postgres://r@db/kandev"
stall_timeout = "1h"
[[installation]]
name = "small"
source = "host=db2 dbname=kandev"
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	timeouts := func(c Config, getenv func(string) string) string {
		t.Helper()
		ins, err := c.Resolve(getenv)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, in := range ins {
			parts = append(parts, in.Name+" "+in.ConnectTimeout.String()+" "+in.StallTimeout.String())
		}
		return strings.Join(parts, ", ")
	}
	if got := timeouts(c, env(nil)); got != "big 45s 1h0m0s, small 45s 20m0s" {
		t.Errorf("from the file: %s", got)
	}
	if err := c.ApplyEnv(env(map[string]string{EnvStallTimeout: "5m", EnvConnectTimeout: "2m"})); err != nil {
		t.Fatal(err)
	}
	if got := timeouts(c, env(nil)); got != "big 2m0s 1h0m0s, small 2m0s 5m0s" {
		t.Errorf("with the environment: %s", got)
	}
	c.ForceTimeouts(0, 3*time.Minute)
	if got := timeouts(c, env(nil)); got != "big 2m0s 3m0s, small 2m0s 3m0s" {
		t.Errorf("with --stall-timeout: %s", got)
	}
	// Not set anywhere: 0, the defaults of extract.
	d := Default()
	d.Installations = []Installation{{Name: "x", Source: "x.db"}}
	if got := timeouts(d, env(nil)); got != "x 0s 0s" {
		t.Errorf("defaults: %s", got)
	}
}

func TestPostgresTimeoutsAreValidated(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`connect_timeout = 30`, `connect_timeout = "30ns": must be at least 1s`},
		{`stall_timeout = "500ms"`, `stall_timeout = "500ms": must be at least 1s`},
		{`stall_timeout = "-1m"`, `stall_timeout = "-1m0s"`},
		{"[[installation]]\nname = \"a\"\nsource = \"x\"\nstall_timeout = \"10\"", `stall_timeout`},
		{"[[installation]]\nname = \"a\"\nsource = \"x\"\nconnect_timeout = \"1ms\"", `installation "a".connect_timeout = "1ms"`},
	} {
		c, err := Load(write(t, tt.body))
		if err == nil {
			_, err = c.Resolve(env(nil))
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one naming %q", tt.body, err, tt.want)
		}
	}
	c := Default()
	if err := c.ApplyEnv(env(map[string]string{EnvConnectTimeout: "soon"})); err == nil || !strings.Contains(err.Error(), EnvConnectTimeout) {
		t.Errorf("bad env: %v", err)
	}
}

// The example file documents both keys, commented out at extract's defaults.
func TestExampleTimeoutsAreTheDefaults(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config.example.toml"))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.NewReplacer("# connect_timeout = ", "connect_timeout = ", "# stall_timeout = ", "stall_timeout = ").Replace(string(b))
	if body == string(b) {
		t.Fatal("config.example.toml does not document connect_timeout and stall_timeout")
	}
	c, err := Load(write(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if c.ConnectTimeout != extract.DefaultConnectTimeout || c.StallTimeout != extract.DefaultStallTimeout {
		t.Errorf("example timeouts %s, %s; extract's defaults %s, %s", c.ConnectTimeout, c.StallTimeout, extract.DefaultConnectTimeout, extract.DefaultStallTimeout)
	}
}

// A bad value in a KANDEV_EXTRACT_* variable is reported as the
// environment's, never as the config file's (which may not set the key).
func TestEnvironmentErrorsNameTheVariable(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{EnvRetention, "0", `environment: $KANDEV_EXTRACT_RETENTION = "0": must be at least 1`},
		{EnvRetention, "-2", `environment: $KANDEV_EXTRACT_RETENTION = "-2": must be at least 1`},
		{EnvRetention, "many", `environment: $KANDEV_EXTRACT_RETENTION = "many": not a whole number`},
		{EnvSchedule, "bogus", `environment: $KANDEV_EXTRACT_SCHEDULE = "bogus": `},
		{EnvConnectTimeout, "soon", `environment: $KANDEV_EXTRACT_CONNECT_TIMEOUT = "soon": not a duration`},
		{EnvStallTimeout, "1ms", `environment: $KANDEV_EXTRACT_STALL_TIMEOUT = "1ms": must be at least`},
		{EnvStallTimeout, "0s", `environment: $KANDEV_EXTRACT_STALL_TIMEOUT = "0s": must be at least 1s`},
		{EnvConnectTimeout, "0", `environment: $KANDEV_EXTRACT_CONNECT_TIMEOUT = "0": must be at least 1s`},
	} {
		cfg := Config{File: "/etc/kx.toml", Warehouse: "w", Retention: 2, Schedule: "0 2 * * *"}
		err := cfg.ApplyEnv(env(map[string]string{c.name: c.value}))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "kx.toml") {
			t.Errorf("%s=%s: %v, want it to begin %q", c.name, c.value, err, c.want)
		}
	}
}
