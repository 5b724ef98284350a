// Package config reads kandev-extract's configuration file (TOML), applies
// environment variables and flags over it, and validates the result with
// errors that name the field and the value.
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"

	"github.com/kandev/kandev-extract/models"
)

// Defaults.
const (
	DefaultWarehouse = "warehouse"
	DefaultRetention = 30
	DefaultSchedule  = "0 2 * * *"
	// MinTimeout is the shortest connect or stall timeout accepted (0 is
	// "not set": the defaults of package extract apply).
	MinTimeout = time.Second
)

// Environment variables that override the file.
const (
	EnvConfig       = "KANDEV_EXTRACT_CONFIG"
	EnvWarehouse    = "KANDEV_EXTRACT_WAREHOUSE"
	EnvSource       = "KANDEV_EXTRACT_SOURCE"
	EnvInstallation = "KANDEV_EXTRACT_INSTALLATION"
	EnvSchedule     = "KANDEV_EXTRACT_SCHEDULE"
	EnvRetention    = "KANDEV_EXTRACT_RETENTION"
	// EnvConnectTimeout and EnvStallTimeout set the global PostgreSQL
	// timeouts (Go durations: "45s", "20m").
	EnvConnectTimeout = "KANDEV_EXTRACT_CONNECT_TIMEOUT"
	EnvStallTimeout   = "KANDEV_EXTRACT_STALL_TIMEOUT"
)

// Installation is one configured Kandev store.
type Installation struct {
	Name string `toml:"name"`
	// Source is a SQLite path or a PostgreSQL DSN.
	Source string `toml:"source"`
	// SourceEnv names an environment variable holding the source (keeps a
	// DSN with a password out of the file).
	SourceEnv string `toml:"source_env"`
	// ConnectTimeout and StallTimeout override the global PostgreSQL
	// timeouts for this installation (0: the global value). After Resolve
	// they hold the values in effect (still 0 when neither is set: pass
	// them to extract.OpenOptions, whose zero is its default).
	ConnectTimeout time.Duration `toml:"connect_timeout"`
	StallTimeout   time.Duration `toml:"stall_timeout"`
	// Rebind binds the installation name to this source even though it is
	// bound to another one (a store that moved or was replaced on
	// purpose). Set it for one run, then remove it: every rebind is
	// disclosed for ever after.
	Rebind bool `toml:"rebind"`
}

// Config is the whole configuration.
type Config struct {
	Warehouse string `toml:"warehouse"`
	Retention int    `toml:"retention"`
	Schedule  string `toml:"schedule"`
	LogFormat string `toml:"log_format"`
	// ConnectTimeout bounds connecting to a PostgreSQL server (each host in
	// turn); StallTimeout is how long a PostgreSQL read may wait for the
	// server's next bytes before the run fails (a frozen server). TOML
	// strings such as "30s" and "10m". 0 is not set: the DSN's
	// connect_timeout, else extract.DefaultConnectTimeout (30s), and
	// extract.DefaultStallTimeout (10m). SQLite sources ignore both.
	ConnectTimeout time.Duration `toml:"connect_timeout"`
	StallTimeout   time.Duration `toml:"stall_timeout"`
	// StaleAfter is the age beyond which an installation's current data
	// (and, in health, its newest subagent row) is disclosed as stale
	// (0: 36h).
	StaleAfter    time.Duration  `toml:"stale_after"`
	Installations []Installation `toml:"installation"`
	// File is where the configuration was read from ("" when none).
	File string `toml:"-"`
	// PublishTo is the bucket URL (s3://, gs://, azblob://, file://) when
	// the warehouse setting named one: the run then writes a local warehouse
	// (Warehouse, in the user's cache directory) and publishes each
	// committed run to the bucket's landing area.
	PublishTo string `toml:"-"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{Warehouse: DefaultWarehouse, Retention: DefaultRetention, Schedule: DefaultSchedule, LogFormat: "auto"}
}

// FieldError is a validation error naming the field and its value.
type FieldError struct {
	File, Field, Value, Problem string
}

func (e *FieldError) Error() string {
	where := "config"
	if e.File != "" {
		where = e.File
	}
	if e.Value != "" {
		return fmt.Sprintf("%s: %s = %q: %s", where, e.Field, e.Value, e.Problem)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Field, e.Problem)
}

// Load reads path over the defaults. Unknown keys are an error, so a typo
// never silently falls back to a default.
func Load(path string) (Config, error) {
	c := Default()
	md, err := toml.DecodeFile(path, &c)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return c, fmt.Errorf("%s: %s", path, perr.ErrorWithPosition())
		}
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return c, &FieldError{File: path, Field: strings.Join(keys, ", "), Problem: "unknown key (see config.example.toml)"}
	}
	c.File = path
	return c, nil
}

// fromEnvironment is where an error in a KANDEV_EXTRACT_* variable is
// said to be (not the config file, which may not even set the key).
const fromEnvironment = "environment"

// ApplyEnv applies environment variables over c.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if v := getenv(EnvWarehouse); v != "" {
		c.Warehouse = v
	}
	if v := getenv(EnvSchedule); v != "" {
		if _, err := ParseSchedule(v); err != nil {
			return &FieldError{File: fromEnvironment, Field: "$" + EnvSchedule, Value: v, Problem: err.Error()}
		}
		c.Schedule = v
	}
	if v := getenv(EnvRetention); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			return &FieldError{File: fromEnvironment, Field: "$" + EnvRetention, Value: v, Problem: "not a whole number"}
		}
		if n < 1 {
			return &FieldError{File: fromEnvironment, Field: "$" + EnvRetention, Value: v, Problem: "must be at least 1 (runs kept per installation)"}
		}
		c.Retention = n
	}
	for _, e := range []struct {
		name string
		dst  *time.Duration
	}{{EnvConnectTimeout, &c.ConnectTimeout}, {EnvStallTimeout, &c.StallTimeout}} {
		if v := getenv(e.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return &FieldError{File: fromEnvironment, Field: "$" + e.name, Value: v, Problem: "not a duration (write it like 30s, 10m or 1h30m)"}
			}
			if d < MinTimeout { // 0 too: set, it would not bound anything
				return &FieldError{File: fromEnvironment, Field: "$" + e.name, Value: v,
					Problem: "must be at least " + MinTimeout.String() + " (it bounds a wait; it cannot be turned off)"}
			}
			*e.dst = d
		}
	}
	return nil
}

// ForceTimeouts applies the PostgreSQL timeouts given on the command line:
// a non-zero value replaces the global setting and every installation's
// own. Validate (or Resolve) checks them afterwards.
func (c *Config) ForceTimeouts(connect, stall time.Duration) {
	for i := range c.Installations {
		if connect != 0 {
			c.Installations[i].ConnectTimeout = 0
		}
		if stall != 0 {
			c.Installations[i].StallTimeout = 0
		}
	}
	if connect != 0 {
		c.ConnectTimeout = connect
	}
	if stall != 0 {
		c.StallTimeout = stall
	}
}

// checkTimeout validates a connect or stall timeout setting (0: not set).
func checkTimeout(file, field string, d time.Duration) error {
	if d != 0 && d < MinTimeout {
		return &FieldError{File: file, Field: field, Value: d.String(),
			Problem: "must be at least " + MinTimeout.String() + `: write a duration string such as "30s" or "10m" (a bare number is nanoseconds)`}
	}
	return nil
}

// Resolve validates c and returns its installations with sources read
// from their environment variables.
func (c *Config) Resolve(getenv func(string) string) ([]Installation, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]Installation, 0, len(c.Installations))
	for i, in := range c.Installations {
		field := fmt.Sprintf("installation[%d]", i)
		if err := models.ValidName(in.Name); err != nil {
			return nil, &FieldError{File: c.File, Field: field + ".name", Value: in.Name,
				Problem: "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, not ending with '.', not a Windows device name"}
		}
		field = fmt.Sprintf("installation %q", in.Name)
		if seen[in.Name] {
			return nil, &FieldError{File: c.File, Field: field + ".name", Value: in.Name, Problem: "configured twice"}
		}
		seen[in.Name] = true
		switch {
		case in.Source != "" && in.SourceEnv != "":
			return nil, &FieldError{File: c.File, Field: field, Problem: "set source or source_env, not both"}
		case in.SourceEnv != "":
			v := getenv(in.SourceEnv)
			if v == "" {
				return nil, &FieldError{File: c.File, Field: field + ".source_env", Value: in.SourceEnv, Problem: "environment variable is not set or empty"}
			}
			in.Source = v
		case in.Source == "":
			return nil, &FieldError{File: c.File, Field: field + ".source", Problem: "missing: give a SQLite path or a PostgreSQL DSN (or source_env)"}
		}
		for _, t := range []struct {
			key      string
			d        *time.Duration
			fallback time.Duration
		}{{"connect_timeout", &in.ConnectTimeout, c.ConnectTimeout}, {"stall_timeout", &in.StallTimeout, c.StallTimeout}} {
			if err := checkTimeout(c.File, field+"."+t.key, *t.d); err != nil {
				return nil, err
			}
			if *t.d == 0 {
				*t.d = t.fallback
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// Validate checks every setting but the installations.
func (c *Config) Validate() error {
	if c.Warehouse == "" {
		return &FieldError{File: c.File, Field: "warehouse", Problem: "must not be empty"}
	}
	if c.Retention < 1 {
		return &FieldError{File: c.File, Field: "retention", Value: fmt.Sprint(c.Retention), Problem: "must be at least 1 (runs kept per installation)"}
	}
	if _, err := ParseSchedule(c.Schedule); err != nil {
		return &FieldError{File: c.File, Field: "schedule", Value: c.Schedule, Problem: err.Error()}
	}
	switch c.LogFormat {
	case "", "auto", "text", "json":
	default:
		return &FieldError{File: c.File, Field: "log_format", Value: c.LogFormat, Problem: "use auto, text or json"}
	}
	if err := checkTimeout(c.File, "connect_timeout", c.ConnectTimeout); err != nil {
		return err
	}
	if c.StaleAfter < 0 || (c.StaleAfter != 0 && c.StaleAfter < time.Minute) {
		return &FieldError{File: c.File, Field: "stale_after", Value: c.StaleAfter.String(), Problem: `must be at least 1m: write a duration string such as "36h"`}
	}
	return checkTimeout(c.File, "stall_timeout", c.StallTimeout)
}

// ParseSchedule parses a standard five-field cron expression (or a
// descriptor such as @daily).
func ParseSchedule(expr string) (cron.Schedule, error) {
	return cron.ParseStandard(expr)
}

// FileFromEnv returns the config file to read: the flag, else
// $KANDEV_EXTRACT_CONFIG, else "".
func FileFromEnv(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(EnvConfig)
}
