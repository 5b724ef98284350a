// Reads Iceberg tables with icebird (a pure-JavaScript Iceberg reader the
// project did not write, on hyparquet) and prints what it saw as JSON, for
// the Go test in lake/e2e_test.go to compare with the hub's DuckDB:
//   node iceberg.mjs ENDPOINT [--as-published] < tables.json
// tables.json: [{name, metadata_location}], each metadata_location an
// s3://bucket/key URL from the catalog's iceberg_tables row. icebird reads
// s3:// URLs over HTTPS from <bucket>.s3.amazonaws.com; the only thing
// changed here is where those requests go: to the S3 server at ENDPOINT
// (path style), such as the tests' in-process one. Every metadata, Avro
// manifest list, manifest and Parquet file is read by icebird itself.
// Avro deflate blocks are inflated by node's zlib, not by the gunzip icebird
// imports, which fails on what Go writes (avro-inflate.mjs says why);
// --as-published leaves icebird as it is.
// Output: [{name, comment, fields: [{id, name, type, doc}], rows}] with
// 64-bit integers as decimal strings and instants as ISO strings
// (icebird gives Date objects: milliseconds).
import { register } from 'node:module'

const endpoint = process.argv[2]
if (!endpoint) {
  console.error('usage: node iceberg.mjs ENDPOINT [--as-published] < tables.json')
  process.exit(2)
}
if (!process.argv.includes('--as-published')) register('./avro-inflate.mjs', import.meta.url)
const { icebergMetadata, icebergRead } = await import('icebird')
const realFetch = globalThis.fetch
globalThis.fetch = (url, init) => {
  const u = new URL(typeof url === 'string' ? url : url.url)
  const m = u.hostname.match(/^(.+)\.s3\.amazonaws\.com$/)
  if (m) return realFetch(`${endpoint}/${m[1]}${u.pathname}${u.search}`, init)
  return realFetch(url, init)
}

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const tables = JSON.parse(Buffer.concat(chunks).toString('utf8'))
const out = []
for (const t of tables) {
  const i = t.metadata_location.lastIndexOf('/metadata/')
  if (i < 0) throw new Error(`${t.name}: not a metadata location: ${t.metadata_location}`)
  const tableUrl = t.metadata_location.slice(0, i)
  const metadataFileName = t.metadata_location.slice(i + '/metadata/'.length)
  try {
    const metadata = await icebergMetadata({ tableUrl, metadataFileName })
    const schema = metadata.schemas.find(s => s['schema-id'] === metadata['current-schema-id'])
    let rows = []
    const snap = metadata['current-snapshot-id']
    if (snap !== undefined && snap !== null && snap >= 0) {
      const current = metadata.snapshots.find(s => s['snapshot-id'] === snap)
      // icebird refuses a snapshot without data files; a table whose
      // every file is empty has one.
      if (current && Number(current.summary?.['total-data-files'] ?? 1) > 0) {
        rows = await icebergRead({ tableUrl, metadata })
      }
    }
    out.push({
      name: t.name,
      comment: metadata.properties?.comment ?? null,
      fields: schema.fields.map(f => ({ id: f.id, name: f.name, type: f.type, doc: f.doc ?? null })),
      rows,
    })
  } catch (err) {
    throw new Error(`${t.name}: ${err.stack ?? err}`)
  }
}
process.stdout.write(JSON.stringify(out, (_, v) => {
  if (typeof v === 'bigint') return v.toString()
  if (v === undefined) return null
  return v
}))
