package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/inspect"
)

// Exit statuses of inspect beyond 0, 1 and 2 (3-9 are health's
// verdicts).
const (
	exitNotFound  = 10 // no such turn, session or installation
	exitAmbiguous = 11 // the id names objects in several installations
)

func newInspectCmd(g *globals) *cobra.Command {
	s := &settings{}
	var (
		asJSON       bool
		installation string
	)
	cmd := &cobra.Command{
		Use:   "inspect turn|session|installation ID",
		Short: "Show why a turn's, session's or installation's numbers are what they are",
		Long: `Show one turn, session or installation of the warehouse as a tree —
installation (activation keys raw and parsed, precision, activation state,
run and snapshot) → session → turns → subagent rows — with, at each level,
the claim (fanout_completeness, fanout, the lower bound), the reason codes
that decided it (docs/warehouse.md, "Reason codes") and the evidence:
tool calls with rows, the message tool calls without a row that writer
health measured, tool calls with more than one row (collisions), rows
deleted from the source since an earlier run and the run that last saw
them. Identifiers, counts and classes only: never content.

inspect reads warehouse.duckdb only; the source store is not needed.

  inspect turn ID           the turn, its session's claim, its rows
  inspect session ID        the session, every turn of it, and rows that
                            name no turn
  inspect installation NAME the installation, and each session's claim

An ID is matched exactly, or (8 characters or more) as a unique prefix, in
the current data of every installation; --installation restricts it to
one. --json prints the same read model as a versioned document
(kandev-extract.inspect.v1, docs/inspect.md); a value the warehouse does
not hold is null, never made up.

Exit status: 0 shown, 10 not found, 11 the id matches objects in several
installations (or, as a prefix, several objects: the candidates are
listed), 1 the warehouse could not be read, 2 usage error.`,
		Example: `  kandev-extract inspect turn 4326d0fd                 # a turn of the demo store, by a unique prefix
  kandev-extract inspect session 0373d4e3 --json
  kandev-extract inspect installation demo --warehouse ./warehouse`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, id := args[0], args[1]
			switch kind {
			case inspect.KindTurn, inspect.KindSession, inspect.KindInstallation:
			default:
				return &exitError{code: exitUsage, err: usageErr(cmd, fmt.Errorf("inspect %q: use turn, session or installation", kind))}
			}
			path, settled, err := s.database(cmd)
			if err != nil {
				return err
			}
			settledNotes(g, settled)
			db, err := openWarehouse(cmd.Context(), path, false)
			if err != nil {
				return fmt.Errorf("inspect: cannot open the warehouse %s: %w", path, err)
			}
			defer db.Close()
			doc, err := inspect.Inspect(cmd.Context(), db, kind, id, installation)
			var amb *inspect.AmbiguousError
			switch {
			case errors.Is(err, inspect.ErrNotFound):
				return &exitError{code: exitNotFound, err: err}
			case errors.As(err, &amb):
				return &exitError{code: exitAmbiguous, err: err}
			case err != nil:
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
			}
			return inspect.Render(g.stdout, doc, termSafe)
		},
	}
	s.addWarehouse(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the kandev-extract.inspect.v1 JSON document instead of the tree")
	cmd.Flags().StringVarP(&installation, "installation", "i", "", "look the id up in this installation only")
	return cmd
}
