package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/config"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// settings are the flags shared by run, schedule and status, resolved over
// the config file and the environment: defaults → file → env → flags.
type settings struct {
	config, source, warehouse, installation, schedule string
	retention                                         int
	wait                                              time.Duration
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
		cfg.Retention = s.retention
	}
	if s.schedule != "" {
		cfg.Schedule = s.schedule
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
		cfg.Installations = []config.Installation{{Name: firstNonEmpty(name, deriveName(src, reason == "demo")), Source: src}}
	}
	ins, err := cfg.Resolve(os.Getenv)
	if err != nil {
		return cfg, nil, "", &exitError{code: exitUsage, err: err}
	}
	out := make([]pipeline.Installation, len(ins))
	for i, in := range ins {
		out[i] = pipeline.Installation{Name: in.Name, Source: in.Source}
	}
	return cfg, out, why, nil
}

// database resolves the warehouse and returns its DuckDB file, which must
// exist (query, status and report only read it).
func (s *settings) database(cmd *cobra.Command) (string, error) {
	cfg, _, _, err := s.resolve(cmd, false)
	if err != nil {
		return "", err
	}
	path := filepath.Join(cfg.Warehouse, load.DatabaseFile)
	if !fileExists(path) {
		return "", &exitError{code: exitUsage, err: fmt.Errorf("no warehouse at %s: run 'kandev-extract run' first or pass --warehouse", path)}
	}
	return path, nil
}
