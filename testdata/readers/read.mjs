// Reads one Parquet file with hyparquet (a pure-JavaScript reader the
// project did not write) and prints what it saw as JSON, for the Go test in
// pipeline/e2e/dictionary_test.go to check against the source store:
//   node read.mjs FILE.parquet
// Output: {num_rows, row_groups: [{num_rows, columns}], schema: [{name,
// physical_type, logical_type, converted_type, repetition}], kv_keys,
// rows: [{column: value}]}. Timestamps are printed as "us:<integer
// microseconds since the epoch>" (no Date rounding), 64-bit integers as
// decimal strings, NULL as null.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const path = process.argv[2]
if (!path) {
  console.error('usage: node read.mjs FILE.parquet')
  process.exit(2)
}
const file = await asyncBufferFromFile(path)
const meta = await parquetMetadataAsync(file)
const rows = await parquetReadObjects({
  file,
  compressors,
  parsers: { timestampFromMicroseconds: us => 'us:' + BigInt(us).toString() },
})
const out = {
  num_rows: Number(meta.num_rows),
  row_groups: meta.row_groups.map(g => ({ num_rows: Number(g.num_rows), columns: g.columns.length })),
  schema: meta.schema.slice(1).map(e => ({
    name: e.name,
    physical_type: e.type ?? null,
    logical_type: e.logical_type ?? null,
    converted_type: e.converted_type ?? null,
    repetition: e.repetition_type ?? null,
  })),
  kv_keys: (meta.key_value_metadata ?? []).map(kv => kv.key),
  rows,
}
process.stdout.write(JSON.stringify(out, (_, v) => (typeof v === 'bigint' ? v.toString() : v)))
