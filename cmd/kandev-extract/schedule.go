package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/config"
)

// scheduleWait is how long a scheduled run waits for the warehouse lock
// unless --wait says otherwise.
const scheduleWait = 30 * time.Minute

func newScheduleCmd(g *globals) *cobra.Command {
	s := &settings{}
	var runNow bool
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Stay in the foreground and run on a cron schedule",
		Long: `Run the configured extraction on a cron schedule (five fields, UTC, e.g.
"0 2 * * *"; or @daily, @every 6h), staying in the foreground with JSON logs
— for systemd, a container or a terminal multiplexer. See docs/operations.md
for a systemd unit and for plain cron (which calls 'run' instead).

A scheduled run that finds the warehouse locked by another run waits up to
--wait (default 30m), then logs the failure and waits for the next tick; a
tick that arrives while the previous run is still going is skipped. SIGINT or
SIGTERM stops the schedule: a run in progress is abandoned cleanly (its
staging is discarded, the warehouse stays at the last committed run and the
interruption is recorded in the runs table).`,
		Example: `  kandev-extract schedule --config /etc/kandev-extract.toml
  kandev-extract schedule --source ~/.kandev/data/kandev.db --schedule '0 2 * * *' --run-now`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, installs, why, err := s.resolve(cmd, true)
			if err != nil {
				return err
			}
			if !g.logFormatSet && (cfg.LogFormat == "" || cfg.LogFormat == "auto") {
				cfg.LogFormat = "json"
			}
			g.applyConfig(cfg)
			log := g.logger()
			spec, err := config.ParseSchedule(cfg.Schedule)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			job := func() {
				start := time.Now()
				// No progress line under schedule: its logs are JSON lines.
				res, err := runOnce(cmd.Context(), g, runCall{cfg: cfg, installs: installs, wait: s.wait, demo: why == whyDemo})
				logSummary(log, res)
				attrs := []any{"run_id", res.RunID, "duration", time.Since(start).Round(time.Millisecond).String()}
				switch {
				case err != nil:
					log.Error("scheduled run failed", append(attrs, "err", err)...)
				case res.Failed():
					log.Error("scheduled run finished with failed installations", attrs...)
				default:
					log.Info("scheduled run committed", attrs...)
				}
				log.Info("next run", "at", spec.Next(time.Now().UTC()).Format(time.RFC3339))
			}
			return schedule(cmd.Context(), log, cfg.Schedule, runNow, job)
		},
	}
	s.addSources(cmd)
	// A scheduled run waits for the lock by default: another run holding
	// it (an operator's, or a slow previous tick's) is no reason to skip
	// a night.
	wait := cmd.Flags().Lookup("wait")
	wait.Usage = "wait this long for another run holding the warehouse lock, then log the failure and wait for the next tick"
	if err := wait.Value.Set(scheduleWait.String()); err != nil {
		panic(err)
	}
	wait.DefValue = wait.Value.String()
	cmd.Flags().StringVar(&s.schedule, "schedule", "", "cron expression (default $"+config.EnvSchedule+", the config, or \""+config.DefaultSchedule+"\")")
	cmd.Flags().BoolVar(&runNow, "run-now", false, "also run once immediately at start (a run like a tick's: SIGTERM interrupts it cleanly and it is recorded)")
	return cmd
}

// schedule runs job on expr until ctx ends, never two at once, and waits
// for a running job to wind down before returning. The --run-now run goes
// through the same wrapped job as a tick (so a tick during it is skipped)
// and is waited for like one: on a signal it is interrupted, records its
// failure and rebuilds the database before schedule returns.
func schedule(ctx context.Context, log *slog.Logger, expr string, runNow bool, job func()) error {
	c := cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.SkipIfStillRunning(cronLogger{log})))
	id, err := c.AddFunc(expr, job)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	var started sync.WaitGroup // runs started here rather than by cron
	c.Start()
	log.Info("schedule started", "schedule", expr, "next", c.Entry(id).Next.Format(time.RFC3339))
	if runNow {
		started.Go(c.Entry(id).WrappedJob.Run)
	}
	<-ctx.Done()
	log.Info("stopping: signal received; a run in progress is abandoned cleanly")
	<-c.Stop().Done()
	started.Wait()
	log.Info("schedule stopped")
	return nil
}

// cronLogger adapts slog to cron's logger (skipped overlapping ticks).
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Info("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}
