// Module hooks for iceberg.mjs: icebird 0.3.1 inflates Avro "deflate"
// blocks with hyparquet-compressors' gunzip (1.1.1; 1.1.2 is the same),
// which cannot read a raw deflate stream that ends with an empty stored
// block — what Go's compress/flate writes at every Close, so every Avro
// manifest and manifest list iceberg-go writes (it hardcodes the deflate
// codec). gunzip, finding no gzip header after the stream, decodes it again
// from byte 0 as if it were a second gzip member, into its full buffer, and
// the empty stored block's copy past the buffer's end throws "RangeError:
// offset is out of bounds". Here only that import of icebird's Avro reader
// is resolved to node's own raw inflate (zlib); everything else icebird
// and hyparquet do is theirs. lake/icebird_test.go checks that icebird as
// published still fails so, to know when this can go.
export async function resolve(specifier, context, next) {
  if (specifier === 'hyparquet-compressors' && context.parentURL?.includes('/icebird/src/avro/')) {
    return { url: new URL('./avro-inflate-gunzip.mjs', import.meta.url).href, shortCircuit: true }
  }
  return next(specifier, context)
}
