package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/config"
	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// settings are the flags shared by run, schedule and status, resolved over
// the config file and the environment: defaults → file → env → flags.
type settings struct {
	config, source, warehouse, installation, schedule string
	retention                                         int
	wait                                              time.Duration
	connectTimeout, stallTimeout, staleAfter          time.Duration
	rebind                                            bool
	// acknowledge: run --acknowledge-key-change (a flag only, never a
	// config key: a standing acknowledgement would silence the alarm).
	acknowledge bool
}

func (s *settings) addWarehouse(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.config, "config", "c", "", "configuration file (TOML; default $"+config.EnvConfig+"); see config.example.toml")
	cmd.Flags().StringVarP(&s.warehouse, "warehouse", "w", "", "warehouse directory (default $"+config.EnvWarehouse+", the config file, or ./"+config.DefaultWarehouse+")")
}

func (s *settings) addSources(cmd *cobra.Command) {
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&s.source, "source", "s", "", "one Kandev store: SQLite path or PostgreSQL URL (overrides the config's installations)")
	cmd.Flags().StringVarP(&s.installation, "installation", "i", "", "installation name: names --source's installation, or picks one from the config")
	cmd.Flags().IntVar(&s.retention, "retention", 0, fmt.Sprintf("committed runs kept per installation (default: config, or %d)", config.DefaultRetention))
	cmd.Flags().DurationVar(&s.wait, "wait", 0, "wait this long for another run holding the warehouse lock (default: fail at once)")
	cmd.Flags().BoolVar(&s.rebind, "rebind", false, "bind the installation name to this source although it is bound to another store (it moved or was replaced on purpose); disclosed for ever after")
	s.addSourceTimeouts(cmd)
	s.addStaleAfter(cmd)
}

// addSourceTimeouts adds the PostgreSQL timeouts (run, schedule, health).
func (s *settings) addSourceTimeouts(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&s.connectTimeout, "connect-timeout", 0, "PostgreSQL: bound on connecting (default: config, the DSN's connect_timeout, or 30s)")
	cmd.Flags().DurationVar(&s.stallTimeout, "stall-timeout", 0, "PostgreSQL: fail when the server sends nothing for this long (default: config, or 10m)")
}

// addStaleAfter adds the staleness threshold.
func (s *settings) addStaleAfter(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&s.staleAfter, "stale-after", 0, "data (or, for health, the newest subagent row) older than this is disclosed as stale (default: config, or 36h)")
}

// resolve returns the effective configuration and installations.
func (s *settings) resolve(cmd *cobra.Command, needSources bool) (config.Config, []pipeline.Installation, string, error) {
	cfg := config.Default()
	if file := config.FileFromEnv(s.config); file != "" {
		var err error
		if cfg, err = config.Load(file); err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: err}
		}
	}
	if err := cfg.ApplyEnv(os.Getenv); err != nil {
		return cfg, nil, "", &exitError{code: exitUsage, err: err}
	}
	if s.warehouse != "" {
		cfg.Warehouse = s.warehouse
	}
	if cmd.Flags().Changed("retention") {
		if s.retention < 1 {
			return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("--retention %d: must be at least 1 (runs kept per installation)", s.retention)}
		}
		cfg.Retention = s.retention
	}
	if s.schedule != "" {
		if _, err := config.ParseSchedule(s.schedule); err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("--schedule %q: %w", s.schedule, err)}
		}
		cfg.Schedule = s.schedule
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"connect-timeout", s.connectTimeout}, {"stall-timeout", s.stallTimeout}} {
		if cmd.Flags().Changed(f.name) && f.d < config.MinTimeout {
			return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("--%s %s: must be at least %s (it bounds a wait; it cannot be turned off)", f.name, f.d, config.MinTimeout)}
		}
	}
	cfg.ForceTimeouts(s.connectTimeout, s.stallTimeout)
	if s.staleAfter != 0 {
		cfg.StaleAfter = s.staleAfter
	}
	cfg.Warehouse = location.ExpandHome(cfg.Warehouse) // "~/kx" from a config file or the environment too
	if lake.IsBucketURL(cfg.Warehouse) {
		// A URL no publish could use is refused now, not after the run.
		if err := lake.CheckBucketURL(cfg.Warehouse); err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("warehouse: %w", err)}
		}
		local, err := spokeWarehouse(cfg.Warehouse)
		if err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: err}
		}
		cfg.PublishTo, cfg.Warehouse = cfg.Warehouse, local
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, "", &exitError{code: exitUsage, err: err}
	}
	name := firstNonEmpty(s.installation, os.Getenv(config.EnvInstallation))
	source := firstNonEmpty(s.source, os.Getenv(config.EnvSource))
	why := ""
	switch {
	case !needSources:
	case source != "":
		why = "--source"
		if s.source == "" {
			why = "$" + config.EnvSource
		}
		if err := location.CheckSource(source); err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: err}
		}
		if cmd.Flags().Changed("source") && location.InlinePassword(source) {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning: --source carries a password: other users of this machine can read it in ps and /proc, and it stays in your shell history. "+
				"Leave it out of the DSN and use PGPASSWORD, ~/.pgpass, or source_env in a config file (docs/postgres.md)")
		}
		cfg.Installations = []config.Installation{{Name: firstNonEmpty(name, deriveName(source, false)), Source: source}}
	case len(cfg.Installations) > 0:
		why = "config " + cfg.File
		if name != "" {
			var picked []config.Installation
			for _, in := range cfg.Installations {
				if in.Name == name {
					picked = append(picked, in)
				}
			}
			if len(picked) == 0 {
				return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("installation %q is not in %s", name, cfg.File)}
			}
			cfg.Installations = picked
		}
	default:
		src, reason, err := resolveSource("")
		if err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: err}
		}
		why = reason
		cfg.Installations = []config.Installation{{Name: firstNonEmpty(name, deriveName(src, reason == whyDemo)), Source: src}}
	}
	if !needSources {
		// query, status and report read the warehouse only: a source the
		// config names (or its source_env variable, unset in an operator's
		// shell) is none of their business.
		return cfg, nil, why, nil
	}
	ins, err := cfg.Resolve(os.Getenv)
	if err != nil {
		return cfg, nil, "", &exitError{code: exitUsage, err: err}
	}
	out := make([]pipeline.Installation, len(ins))
	for i, in := range ins {
		if err := location.CheckSource(in.Source); err != nil {
			return cfg, nil, "", &exitError{code: exitUsage, err: fmt.Errorf("installation %s: %w", in.Name, err)}
		}
		if cfg.File != "" && in.SourceEnv == "" && location.InlinePassword(in.Source) {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: installation %s's source in %s carries a password; prefer source_env or ~/.pgpass\n", in.Name, cfg.File)
		}
		out[i] = pipeline.Installation{Name: in.Name, Source: in.Source, ConnectTimeout: in.ConnectTimeout, StallTimeout: in.StallTimeout,
			Rebind: in.Rebind || s.rebind, AcknowledgeKeyChange: s.acknowledge}
	}
	return cfg, out, why, nil
}

// database resolves the warehouse and returns the DuckDB file to read
// (query, status and report only read it). What an earlier run left
// waiting because another process held a file open (Windows) is finished
// first when nothing holds it any more (load.SettlePending); the file
// returned is the newest database: the one still waiting in _pending/ when
// warehouse.duckdb could not be replaced yet.
func (s *settings) database(cmd *cobra.Command) (string, load.Settled, error) {
	path, _, settled, err := s.databaseIn(cmd)
	return path, settled, err
}

// databaseIn is database, with the warehouse directory.
func (s *settings) databaseIn(cmd *cobra.Command) (string, string, load.Settled, error) {
	var settled load.Settled
	cfg, _, _, err := s.resolve(cmd, false)
	if err != nil {
		return "", "", settled, err
	}
	path := filepath.Join(cfg.Warehouse, load.DatabaseFile)
	settled, newest, err := load.SettlePending(cmd.Context(), cfg.Warehouse)
	if err != nil {
		// Finishing what waits is not this command's job: read what is there.
		settled.Problem = err.Error()
		newest = load.NewestDatabase(cmd.Context(), cfg.Warehouse)
	}
	if !fileExists(newest) {
		return "", "", settled, &exitError{code: exitUsage, err: fmt.Errorf("no warehouse at %s: run 'kandev-extract run' first or pass --warehouse", path)}
	}
	return newest, cfg.Warehouse, settled, nil
}

// settledNotes prints to stderr what finishing the waiting work did and
// what still waits (query and report; status shows it in its output).
func settledNotes(g *globals, s load.Settled) {
	if g.quiet {
		return
	}
	for _, n := range s.Notes() {
		printSafe(g.stderr, "note: %s\n", n)
	}
	if s.Pending.Database != "" {
		printSafe(g.stderr, "note: warehouse.duckdb is still open in another process; reading the newer database waiting at %s\n", s.Pending.Database)
	}
}
