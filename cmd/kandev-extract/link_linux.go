package main

// The DuckDB library is linked in statically, and Go's external link
// exports every symbol of the executable (-rdynamic): tens of thousands of
// C++ names the dynamic loader reads in full at every start (~6 MiB of the
// resident set, docs/benchmarks.md). Nothing resolves them at run time —
// DuckDB's extensions are bundled and nothing is dlopen'ed — so they are
// not exported.

// #cgo LDFLAGS: -Wl,--no-export-dynamic
import "C"
