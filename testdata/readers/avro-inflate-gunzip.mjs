// Avro's deflate codec is raw deflate (RFC 1951): node's zlib inflates it.
import { inflateRawSync } from 'node:zlib'

export function gunzip(input) {
  return new Uint8Array(inflateRawSync(input))
}
