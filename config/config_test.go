package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
