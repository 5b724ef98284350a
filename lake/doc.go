// Package lake publishes kandev-extract runs to object storage: the spoke
// side of the scale-out topology (docs/scale-out.md).
//
// A spoke runs the ordinary local pipeline into a local warehouse (its
// cache), then calls Publish for each run it committed. Publish uploads the
// run's files to the landing area of a bucket and then, last, the run's
// manifest with a conditional create, so the manifest stays the commit
// marker it is locally:
//
//	landing/<table>/installation_id=<i>/run_id=<r>/part-0.parquet   one object per table
//	landing/_runs/<i>/<r>.json                                      the manifest (commit marker)
//
// The landing area has the layout of a local warehouse rooted at landing/,
// so a manifest's relative file paths mean the same thing in both places.
// Object keys are derived from validated installation and run names and
// this build's table names, never from manifest text. Every object is
// verified after its upload (size always; MD5 when the driver reports it)
// and every local file against the SHA-256 its manifest recorded before it
// is sent. A killed upload leaves objects without a manifest, which nothing
// reads; the next Publish of the same run resumes (objects already there
// with the same SHA-256 are kept). A run whose manifest already exists is
// refused (ErrDuplicateRun): a run id is published once.
//
// Buckets are gocloud.dev/blob URLs (s3://, gs://, azblob://, file://), one
// code path for all; credentials come from each provider's standard chain,
// and nothing secret is ever stored or printed. This package links only the
// file:// driver: a binary links the cloud drivers it wants by importing
// lake/clouds (all three) or a single gocloud driver package.
//
// The hub side (Iceberg tables, maintenance, the hub's warehouse.duckdb)
// is package lake/hub, kept apart so that the spoke binary does not link
// Apache Iceberg.
package lake
