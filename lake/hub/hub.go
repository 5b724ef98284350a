// Package hub is the hub side of the scale-out topology
// (docs/scale-out.md): it registers the runs spokes published to a
// bucket's landing area into Apache Iceberg tables (iceberg-go's SQL
// catalog on PostgreSQL, the JDBC-catalog layout Trino and Spark read),
// maintains them, and builds the hub's warehouse.duckdb from the tables'
// snapshots.
//
// Tables, in the catalog namespace (default "kandev"), for each base table
// T of a run:
//
//	T_history   every ingested run's rows (append only; compacted)
//	T           the latest run of each installation (partitioned by
//	            installation_id; a new run replaces its installation's
//	            partition: an overwrite by filter on installation_id)
//
// Data files live in the table's own location under the bucket's Iceberg
// warehouse (default prefix iceberg/). Each landing file is read once,
// checked against the size and SHA-256 its manifest recorded while it is
// copied into the tables' locations, and registered by reference
// (AddDataFiles / ReplaceDataFilesWithDataFiles): only the catalog commit
// is ever retried, never the data write, so a conflict leaves no orphan
// data file. The commit retry handles iceberg-go v0.7.0's SQL-catalog
// conflicts ("branch main has changed", apache/iceberg-go#1079), which it
// does not retry itself, by reloading the table, checking again what is
// already there, and committing again.
//
// Ingest is idempotent: each snapshot's summary records the runs it added
// (kandev.runs), and once every table of a run is committed the hub writes
// hub/ingested/<i>/<r>.json; a run with that marker, or already named in a
// retained snapshot of a table, is not added to it again.
package hub

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/azure"      // abfs://
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"        // gs://
	icebergs3 "github.com/apache/iceberg-go/io/gocloud/s3" // s3://
	"github.com/apache/iceberg-go/table"
	icebergutils "github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver

	"github.com/kandev/kandev-extract/lake"
	_ "github.com/kandev/kandev-extract/lake/clouds" // s3://, gs://, azblob:// buckets
)

// Config configures a hub.
type Config struct {
	// Bucket is the bucket URL spokes publish to (lake.OpenBucket); the
	// Iceberg warehouse lives in the same bucket under WarehousePrefix.
	Bucket string
	// Catalog is the PostgreSQL connection string (URL or keyword DSN) of
	// the catalog database. Leave the password out: PGPASSWORD or
	// ~/.pgpass supply it, and it is never printed.
	Catalog string
	// CatalogName is the catalog_name of every catalog row (Trino's
	// iceberg.jdbc-catalog.catalog-name, Spark's catalog name); default
	// "kandev".
	CatalogName string
	// Namespace holds the tables; default "kandev".
	Namespace string
	// WarehousePrefix is the key prefix of the Iceberg warehouse in the
	// bucket; default "iceberg/".
	WarehousePrefix string
	// Logger receives progress; default none.
	Logger *slog.Logger
}

// Hub is an open hub: the bucket and the catalog.
type Hub struct {
	cfg    Config
	bucket *lake.Bucket
	db     *sql.DB
	cat    *sqlcat.Catalog
	ns     table.Identifier
	props  iceberg.Properties
	log    *slog.Logger
	// aws is the AWS configuration (standard credential chain) resolved
	// once at Open and handed to every Iceberg FileIO through the context;
	// iceberg-go would otherwise resolve it again (reading the CA bundle,
	// the shared config, ...) for every table it loads.
	aws *aws.Config
}

// Key prefixes the hub owns in the bucket.
const (
	hubPrefix      = "hub/"
	ingestedPrefix = hubPrefix + "ingested/"
)

// Open opens the bucket and the catalog, creating the catalog tables
// (iceberg_tables, iceberg_namespace_properties) and the namespace if they
// do not exist.
func Open(ctx context.Context, cfg Config) (*Hub, error) {
	cfg.CatalogName = cmp.Or(cfg.CatalogName, "kandev")
	cfg.Namespace = cmp.Or(cfg.Namespace, "kandev")
	cfg.WarehousePrefix = cmp.Or(cfg.WarehousePrefix, "iceberg/")
	if !strings.HasSuffix(cfg.WarehousePrefix, "/") || strings.HasPrefix(cfg.WarehousePrefix, hubPrefix) ||
		strings.HasPrefix(cfg.WarehousePrefix, lake.LandingPrefix) {
		return nil, fmt.Errorf("warehouse prefix %q: must end in \"/\" and be apart from %s and %s", cfg.WarehousePrefix, lake.LandingPrefix, hubPrefix)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Catalog == "" {
		return nil, errors.New("no catalog connection string")
	}
	b, err := lake.OpenBucket(ctx, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	h := &Hub{cfg: cfg, bucket: b, ns: table.Identifier{cfg.Namespace}, log: cfg.Logger}
	h.props = ioProps(b)
	h.props["warehouse"] = strings.TrimSuffix(b.URI(cfg.WarehousePrefix), "/")
	if b.Scheme == "s3" {
		if h.aws, err = icebergs3.ParseAWSConfig(ctx, h.props); err != nil {
			b.Close()
			return nil, fmt.Errorf("aws configuration: %w", err)
		}
	}
	ctx = h.IO(ctx)
	db, err := sql.Open("pgx", cfg.Catalog)
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		b.Close()
		return nil, fmt.Errorf("catalog: %w", err) // pgx never prints the password
	}
	cat, err := sqlcat.NewCatalog(cfg.CatalogName, db, sqlcat.Postgres, h.props)
	if err != nil {
		db.Close()
		b.Close()
		return nil, fmt.Errorf("catalog: %w", err)
	}
	h.db, h.cat = db, cat
	if ok, err := cat.CheckNamespaceExists(ctx, h.ns); err != nil {
		h.Close()
		return nil, fmt.Errorf("catalog: %w", err)
	} else if !ok {
		if err := cat.CreateNamespace(ctx, h.ns, iceberg.Properties{"comment": "kandev-extract runs from every installation (docs/scale-out.md)"}); err != nil &&
			!errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			h.Close()
			return nil, fmt.Errorf("catalog: %w", err)
		}
	}
	return h, nil
}

// Close releases the catalog and the bucket.
func (h *Hub) Close() error {
	var errs []error
	if h.cat != nil {
		errs = append(errs, h.cat.Close())
	}
	if h.db != nil {
		errs = append(errs, h.db.Close())
	}
	errs = append(errs, h.bucket.Close())
	return errors.Join(errs...)
}

// IO returns ctx carrying the hub's storage configuration: pass it to
// every operation on Catalog() tables (the hub's own methods do), so that
// credentials are resolved once, not per table.
func (h *Hub) IO(ctx context.Context) context.Context {
	if h.aws != nil && icebergutils.GetAwsConfig(ctx) == nil {
		return icebergutils.WithAwsConfig(ctx, h.aws)
	}
	return ctx
}

// Catalog is the Iceberg catalog (for reads: scans, inspection).
func (h *Hub) Catalog() catalog.Catalog { return h.cat }

// Bucket is the hub's bucket.
func (h *Hub) Bucket() *lake.Bucket { return h.bucket }

// HistoryTable and CurrentTable are the identifiers of a base table's two
// Iceberg tables.
func (h *Hub) HistoryTable(base string) table.Identifier {
	return table.Identifier{h.cfg.Namespace, base + "_history"}
}

// CurrentTable is the identifier of a base table's current-state table.
func (h *Hub) CurrentTable(base string) table.Identifier {
	return table.Identifier{h.cfg.Namespace, base}
}

// BaseTables lists the base tables the hub has Iceberg tables for (both
// T_history and T in the namespace, T a table this build publishes), in
// name order. Other tables in the namespace are left alone.
func (h *Hub) BaseTables(ctx context.Context) ([]string, error) {
	names := map[string]bool{}
	for id, err := range h.cat.ListTables(ctx, h.ns) {
		if err != nil {
			return nil, fmt.Errorf("catalog: list tables: %w", err)
		}
		names[id[len(id)-1]] = true
	}
	var out []string
	for n := range names {
		if lake.IsTable(n) && names[n+"_history"] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ioProps are the Iceberg FileIO properties for the bucket: the driver
// options of its URL (endpoint, region), never credentials, which the
// provider's standard chain supplies to iceberg-go as to gocloud.
func ioProps(b *lake.Bucket) iceberg.Properties {
	p := iceberg.Properties{}
	switch b.Scheme {
	case "s3":
		if v := b.Query.Get("endpoint"); v != "" {
			if b.Query.Get("disable_https") == "true" && !strings.Contains(v, "://") {
				v = "http://" + v
			}
			p[icebergio.S3EndpointURL] = v
			if b.Query.Get("use_path_style") == "false" {
				p[icebergio.S3ForceVirtualAddressing] = "true"
			}
		}
		if v := b.Query.Get("region"); v != "" {
			p[icebergio.S3Region] = v
		}
	case "gs":
		if v := b.Query.Get("endpoint"); v != "" {
			p[icebergio.GCSEndpoint] = v
		}
	}
	return p
}

// loadTable loads a table, or returns nil when it does not exist.
func (h *Hub) loadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	t, err := h.cat.LoadTable(ctx, id)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, nil
	}
	return t, err
}

func (h *Hub) now() time.Time { return time.Now().UTC() }
