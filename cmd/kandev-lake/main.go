// Command kandev-lake is the hub of the scale-out topology
// (docs/scale-out.md): it ingests the runs spokes published to a bucket
// into Apache Iceberg tables (catalog: PostgreSQL, JDBC-catalog layout),
// maintains them and builds the hub's warehouse.duckdb. It also publishes
// a local warehouse's runs, as a spoke does.
//
// It is a binary of its own so that kandev-extract, which every laptop
// runs, does not link Apache Iceberg and its dependencies.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/lake"
	"github.com/kandev/kandev-extract/lake/hub"
	"github.com/kandev/kandev-extract/load"
	"github.com/kandev/kandev-extract/pipeline"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a command failed
	exitUsage   = 2 // bad flags or arguments
	exitProblem = 3 // ingest: some landed runs were refused (the rest went in)
)

type usageError struct{ error }

type problemError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ue *usageError
	var pe *problemError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &pe):
		fmt.Fprintln(stderr, "kandev-lake:", err)
		return exitProblem
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown"), strings.Contains(err.Error(), "flag"):
		fmt.Fprintln(stderr, "kandev-lake:", err)
		return exitUsage
	default:
		fmt.Fprintln(stderr, "kandev-lake:", err)
		return exitFailure
	}
}

type hubFlags struct {
	bucket, catalog, catalogName, namespace, warehousePrefix string
}

func (f *hubFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.bucket, "bucket", os.Getenv("KANDEV_LAKE_BUCKET"), "bucket URL (s3://, gs://, azblob://, file://); $KANDEV_LAKE_BUCKET")
	cmd.Flags().StringVar(&f.catalog, "catalog", os.Getenv("KANDEV_LAKE_CATALOG"), "PostgreSQL URL or DSN of the Iceberg catalog database, without password (PGPASSWORD or ~/.pgpass); $KANDEV_LAKE_CATALOG")
	cmd.Flags().StringVar(&f.catalogName, "catalog-name", "kandev", "catalog_name of the catalog rows (Trino's iceberg.jdbc-catalog.catalog-name)")
	cmd.Flags().StringVar(&f.namespace, "namespace", "kandev", "Iceberg namespace of the tables")
	cmd.Flags().StringVar(&f.warehousePrefix, "warehouse-prefix", "iceberg/", "key prefix of the Iceberg warehouse in the bucket")
}

func (f *hubFlags) open(ctx context.Context, log *slog.Logger) (*hub.Hub, error) {
	if f.bucket == "" || f.catalog == "" {
		return nil, &usageError{errors.New("--bucket and --catalog (or $KANDEV_LAKE_BUCKET and $KANDEV_LAKE_CATALOG) are required")}
	}
	log.Info("opening the hub", "bucket", f.bucket, "catalog", location.PrintableLocation(f.catalog))
	h, err := hub.Open(ctx, hub.Config{Bucket: f.bucket, Catalog: f.catalog, CatalogName: f.catalogName,
		Namespace: f.namespace, WarehousePrefix: f.warehousePrefix, Logger: log})
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), f.catalog, location.PrintableLocation(f.catalog)))
	}
	return h, nil
}

func logger(w io.Writer, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var logFormat string
	root := &cobra.Command{
		Use:           "kandev-lake",
		Short:         "Hub of the kandev-extract scale-out: landing area → Apache Iceberg tables (docs/scale-out.md)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")

	var ingestMaintain bool
	var ingestFlags hubFlags
	ingest := &cobra.Command{
		Use:   "ingest",
		Short: "Register every new committed run in the landing area into the Iceberg tables (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger(stderr, logFormat)
			h, err := ingestFlags.open(cmd.Context(), log)
			if err != nil {
				return err
			}
			defer h.Close()
			rep, err := h.Ingest(cmd.Context(), hub.IngestOptions{})
			fmt.Fprintf(stdout, "ingested %d run(s) (%d rows into the history tables, %d commits, %d conflict retries); %d already ingested\n",
				len(rep.Ingested), rep.Rows, rep.Commits, rep.Retries, rep.AlreadyIngested)
			fmt.Fprintf(stdout, "results tables: %d committed for %d installation(s) (%d commits, %d conflict retries)\n",
				rep.Results.Tables, len(rep.Results.Installations), rep.Results.Commits, rep.Results.Retries)
			for _, r := range rep.Ingested {
				fmt.Fprintf(stdout, "  %s/%s\n", r.Installation, r.Run)
			}
			for _, p := range rep.Problems {
				fmt.Fprintf(stdout, "not ingested: %s: %s\n", p.Key, p.Reason)
			}
			if err != nil {
				return err
			}
			if ingestMaintain {
				if err := maintain(cmd.Context(), h, hub.MaintainOptions{}, stdout); err != nil {
					return err
				}
			}
			if len(rep.Problems) > 0 {
				return &problemError{fmt.Errorf("%d landed run(s) not ingested (listed above)", len(rep.Problems))}
			}
			return nil
		},
	}
	ingestFlags.add(ingest)
	ingest.Flags().BoolVar(&ingestMaintain, "maintain", false, "run maintenance after the ingest")

	var mFlags hubFlags
	var mOpts hub.MaintainOptions
	maintainCmd := &cobra.Command{
		Use:   "maintain",
		Short: "Compact small files, expire old snapshots, delete orphan files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := mFlags.open(cmd.Context(), logger(stderr, logFormat))
			if err != nil {
				return err
			}
			defer h.Close()
			return maintain(cmd.Context(), h, mOpts, stdout)
		},
	}
	mFlags.add(maintainCmd)
	maintainCmd.Flags().Int64Var(&mOpts.CompactTargetBytes, "compact-target-bytes", 128<<20, "target size of compacted files")
	maintainCmd.Flags().UintVar(&mOpts.CompactMinInputFiles, "compact-min-files", 5, "fewest small files worth a rewrite")
	maintainCmd.Flags().DurationVar(&mOpts.ExpireOlderThan, "expire-older-than", 7*24*time.Hour, "expire snapshots older than this")
	maintainCmd.Flags().IntVar(&mOpts.RetainLast, "retain-last", 1, "snapshots always kept per table")
	maintainCmd.Flags().DurationVar(&mOpts.OrphansOlderThan, "orphans-older-than", 72*time.Hour, "delete unreferenced files older than this (never less than the longest commit)")

	var dFlags hubFlags
	var out string
	duck := &cobra.Command{
		Use:   "duckdb",
		Short: "Build the hub's warehouse.duckdb from the tables' current snapshots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := dFlags.open(cmd.Context(), logger(stderr, logFormat))
			if err != nil {
				return err
			}
			defer h.Close()
			b, err := h.BuildDuckDB(cmd.Context(), out)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %d tables, %d runs\n", b.Path, len(b.Tables), b.Runs)
			return nil
		},
	}
	dFlags.add(duck)
	duck.Flags().StringVar(&out, "out", "hub-warehouse", "directory of the hub's warehouse.duckdb (and its file cache)")

	var pBucket, pWarehouse, pInstallation, pRun string
	publish := &cobra.Command{
		Use:   "publish",
		Short: "Publish a local warehouse's committed runs of an installation to the bucket (what a spoke does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pBucket == "" || pInstallation == "" {
				return &usageError{errors.New("--bucket and --installation are required")}
			}
			if err := knownInstallation(pWarehouse, pInstallation); err != nil {
				return err
			}
			if pRun != "" {
				if err := lake.Publish(cmd.Context(), pBucket, pWarehouse, pInstallation, pRun); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "published %s/%s\n", pInstallation, pRun)
				return nil
			}
			done, err := lake.PublishPending(cmd.Context(), pBucket, pWarehouse, pInstallation)
			for _, r := range done {
				fmt.Fprintf(stdout, "published %s/%s\n", pInstallation, r)
			}
			if err == nil && len(done) == 0 {
				fmt.Fprintln(stdout, "nothing to publish")
			}
			return err
		},
	}
	publish.Flags().StringVar(&pBucket, "bucket", os.Getenv("KANDEV_LAKE_BUCKET"), "bucket URL; $KANDEV_LAKE_BUCKET")
	publish.Flags().StringVar(&pWarehouse, "warehouse", "warehouse", "local warehouse directory")
	publish.Flags().StringVar(&pInstallation, "installation", "", "installation whose runs to publish")
	publish.Flags().StringVar(&pRun, "run", "", "one run id (default: every committed run not yet published, oldest first)")

	version := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, "kandev-lake", pipeline.Version)
		},
	}
	root.AddCommand(ingest, maintainCmd, duck, publish, version)
	return root
}

func maintain(ctx context.Context, h *hub.Hub, opts hub.MaintainOptions, stdout io.Writer) error {
	tms, err := h.Maintain(ctx, opts)
	for _, tm := range tms {
		fmt.Fprintf(stdout, "%s: %d → %d files (%d compacted into %d), %d snapshots expired, %d orphan files deleted\n",
			tm.Table, tm.FilesBefore, tm.FilesAfter, tm.Compacted, tm.CompactedInto, tm.ExpiredSnapshots, tm.OrphansDeleted)
	}
	return err
}

// knownInstallation refuses, as a usage error, an installation the local
// warehouse has no run of (a typo would otherwise publish nothing and
// succeed), naming the ones it has.
func knownInstallation(warehouse, installation string) error {
	ms, err := load.ReadManifests(warehouse)
	if err != nil {
		return err
	}
	var names []string
	for _, m := range ms {
		if m.InstallationID == installation {
			return nil
		}
		if !slices.Contains(names, m.InstallationID) {
			names = append(names, m.InstallationID)
		}
	}
	if len(names) == 0 {
		return &usageError{fmt.Errorf("the warehouse %s has no runs (is it a kandev-extract warehouse?)", warehouse)}
	}
	slices.Sort(names)
	return &usageError{fmt.Errorf("the warehouse %s has no run of installation %q (it has %s)", warehouse, installation, strings.Join(names, ", "))}
}
