// Package e2e holds the end-to-end tests of a run and of the warehouse it
// serves: real Kandev stores from testdata (and the same stores loaded into
// PostgreSQL), the real pipeline (pipeline.Run), real DuckDB. Here are the
// spec's rules as a run applies them (classification, completeness, reason
// codes, writer health, runs across time), the warehouse's updates and
// their fallbacks, and the faults a run meets in the warehouse (a full
// disk, an unwritable directory, a rebuild out of memory, an older
// template), injected through internal/seams. load's own tests never call
// the pipeline; pipeline's own tests are those of its machinery (readers,
// snapshots, the scan plan, bad stores, both dialects), under -race.
//
// The package has no code of its own: everything is in its _test.go files.
package e2e
