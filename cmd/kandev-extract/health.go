package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/models"
	"github.com/kandev/kandev-extract/pipeline"
)

// Exit codes of `health`, one per status, so cron or a monitor can alarm.
var healthExit = map[models.HealthStatus]int{
	models.HealthHealthy:                0,
	models.HealthShortfall:              3,
	models.HealthNothingSinceActivation: 4,
	models.HealthNotActivated:           5,
	models.HealthKeyUnparseable:         6,
	models.HealthFeatureAbsent:          7,
	models.HealthStale:                  8,
	models.HealthKeyChanged:             9,
}

// healthRank orders statuses by urgency: with several installations the
// exit status is the most urgent one's.
var healthRank = map[models.HealthStatus]int{
	models.HealthKeyChanged: 7, models.HealthShortfall: 6, models.HealthNothingSinceActivation: 5,
	models.HealthKeyUnparseable: 4, models.HealthNotActivated: 3, models.HealthFeatureAbsent: 2, models.HealthStale: 1,
}

func newHealthCmd(g *globals) *cobra.Command {
	s := &settings{}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check whether Kandev's subagent writer is keeping up (spec AC-28/29)",
		Long: `Evaluate the writer-health check against each Kandev store, in one read-only
snapshot, for activity at or after subagent_context_capture_since:

  shortfall   subagent-task messages with no subagent row — the alarm
  excess      subagent rows with no subagent-task message — attributed, not an alarm
  collisions  rows minus distinct (session, tool_call_id)
  last row    MAX(observed_at) since activation; none means the writer has
              produced nothing since activation (never "healthy")

The two directions are separate set differences and are never netted. When
capture_since is absent or unparseable the comparison is not run: the
missing key is the signal. A healthy writer whose newest row is older than
--stale-after (default 36h) is reported stale: nothing shows it still works.
When the warehouse has a committed run of the installation, the activation
keys are compared with it: a changed key is the most urgent alarm (Kandev
writes them once). A change an earlier run recorded stays that alarm, with
both raw values and the run that first saw it, until it is acknowledged
with 'kandev-extract run --acknowledge-key-change'.

Installations come from where run takes them: --source, or every
[[installation]] of the config file (--config or $KANDEV_EXTRACT_CONFIG),
else Kandev's default store, else the demo store bundled in this binary.
--json prints one JSON object per installation, one per line.

Exit status (the most urgent installation's): 0 healthy, 3 shortfall,
4 nothing since activation, 5 not activated (capture_since absent),
6 capture_since unparseable, 7 no subagent table (Kandev too old), 8 stale,
9 an activation key changed (since the last run, or recorded earlier and
not acknowledged), 1 error, 2 usage error.`,
		Example: `  kandev-extract health --source ~/.kandev/data/kandev.db
  kandev-extract health --config /etc/kandev-extract.toml --json
  kandev-extract health --source 'postgres://kandev_reader@db/kandev' --installation team --warehouse /srv/kandev-wh`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, installs, _, err := s.resolve(cmd, true)
			if err != nil {
				return err
			}
			warehouse := ""
			if st, err := os.Stat(cfg.Warehouse); err == nil && st.IsDir() {
				warehouse = cfg.Warehouse
			}
			worst := models.HealthHealthy
			for _, in := range installs {
				r, err := pipeline.CheckHealth(cmd.Context(), in.Source, pipeline.HealthOptions{
					Open:      extract.OpenOptions{ConnectTimeout: in.ConnectTimeout, StallTimeout: in.StallTimeout},
					Warehouse: warehouse, Installation: in.Name, StaleAfter: cfg.StaleAfter})
				if err != nil {
					return fmt.Errorf("installation %s: %w", in.Name, err)
				}
				if asJSON {
					if err := writeJSONLine(g.stdout, r); err != nil {
						return err
					}
				} else {
					printHealth(g, r)
				}
				if healthRank[r.Status] > healthRank[worst] {
					worst = r.Status
				}
			}
			if code := healthExit[worst]; code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().StringVarP(&s.source, "source", "s", "", "one Kandev store: SQLite path or PostgreSQL URL (default: the config's installations, or as for run)")
	cmd.Flags().StringVarP(&s.installation, "installation", "i", "", "installation name: names --source's installation (for the key comparison), or picks one from the config")
	s.addSourceTimeouts(cmd)
	s.addStaleAfter(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per installation, one per line (for monitors)")
	return cmd
}

func printHealth(g *globals, r pipeline.HealthReport) {
	w := g.stdout
	h := r.Health
	printSafe(w, "writer health of %s: %s\n", r.Installation, r.Status)
	printSafe(w, "  source: %s %s (snapshot %s)\n", r.Dialect, r.Source, r.SnapshotAt)
	printSafe(w, "  activation: %s\n", r.Activation)
	if h.Evaluated {
		c := h.Counts
		last := "none: nothing produced since activation"
		if c.LastObserved != nil {
			last = c.LastObserved.Format("2006-01-02T15:04:05.999999Z07:00")
			if r.LastObservedAgeHours != nil {
				last += fmt.Sprintf(" (%.1f h ago; stale after %.0f h)", *r.LastObservedAgeHours, r.StaleAfterHours)
			}
		}
		printSafe(w, "  since:      %s\n", h.CaptureSince.Format("2006-01-02T15:04:05.999999999Z07:00"))
		printSafe(w, "  shortfall:  %d   (messages without a row: the alarm)\n", c.Shortfall)
		printSafe(w, "  excess:     %d   (rows without a message: attributed)\n", c.Excess)
		printSafe(w, "  expected:   %d distinct keys; observed %d; collisions %d\n", c.Expected, c.Observed, c.Collisions)
		printSafe(w, "  last row:   %s\n", last)
		if c.MalformedMetadata > 0 {
			printSafe(w, "  skipped:    %d messages with metadata that is not JSON\n", c.MalformedMetadata)
		}
	}
	for _, k := range r.KeyChanges {
		printSafe(w, "  KEY CHANGED: %s\n", k)
	}
	printSafe(w, "  %s\n", r.Reason)
}
