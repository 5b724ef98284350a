package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

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
}

func newHealthCmd(g *globals) *cobra.Command {
	var source string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check whether Kandev's subagent writer is keeping up (spec AC-28/29)",
		Long: `Evaluate the writer-health check against a Kandev store, in one read-only
snapshot, for activity at or after subagent_context_capture_since:

  shortfall   subagent-task messages with no subagent row — the alarm
  excess      subagent rows with no subagent-task message — attributed, not an alarm
  collisions  rows minus distinct (session, tool_call_id)
  last row    MAX(observed_at) since activation; none means the writer has
              produced nothing since activation (never "healthy")

The two directions are separate set differences and are never netted. When
capture_since is absent or unparseable the comparison is not run: the
missing key is the signal.

Exit status: 0 healthy, 3 shortfall, 4 nothing since activation,
5 not activated (capture_since absent), 6 capture_since unparseable,
7 no subagent table (Kandev too old), 1 error, 2 usage error.`,
		Example: `  kandev-extract health --source ~/.kandev/data/kandev.db
  kandev-extract health --source 'postgres://kandev_reader@db/kandev' --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, _, err := resolveSource(source)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			r, err := pipeline.CheckHealth(cmd.Context(), src)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				printHealth(g, r)
			}
			if code := healthExit[r.Health.Status]; code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&source, "source", "s", "", "Kandev store: SQLite path or PostgreSQL URL (default: as for run)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the evaluation as JSON (for monitors)")
	return cmd
}

func printHealth(g *globals, r pipeline.HealthReport) {
	w := g.stdout
	h := r.Health
	fmt.Fprintf(w, "writer health: %s\n", h.Status)
	fmt.Fprintf(w, "  source: %s %s (snapshot %s)\n", r.Dialect, r.Source, r.SnapshotAt)
	fmt.Fprintf(w, "  activation: %s\n", r.Activation)
	if h.Evaluated {
		c := h.Counts
		last := "none: nothing produced since activation"
		if c.LastObserved != nil {
			last = c.LastObserved.Format("2006-01-02T15:04:05.999999Z07:00")
		}
		fmt.Fprintf(w, "  since:      %s\n", h.CaptureSince.Format("2006-01-02T15:04:05.999999999Z07:00"))
		fmt.Fprintf(w, "  shortfall:  %d   (messages without a row: the alarm)\n", c.Shortfall)
		fmt.Fprintf(w, "  excess:     %d   (rows without a message: attributed)\n", c.Excess)
		fmt.Fprintf(w, "  expected:   %d distinct keys; observed %d; collisions %d\n", c.Expected, c.Observed, c.Collisions)
		fmt.Fprintf(w, "  last row:   %s\n", last)
		if c.MalformedMetadata > 0 {
			fmt.Fprintf(w, "  skipped:    %d messages with metadata that is not JSON\n", c.MalformedMetadata)
		}
	}
	fmt.Fprintf(w, "  %s\n", h.Reason)
}
