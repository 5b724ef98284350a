// Package e2e holds the end-to-end tests of a run and of the warehouse it
// serves: real Kandev stores from testdata, the real pipeline (pipeline.Run),
// real DuckDB. They were load's tests that ran the pipeline; they live here
// so that load's own tests never call a package above it. Faults (a full
// disk, an unwritable directory, a rebuild out of memory, an older
// template) are injected through internal/seams.
//
// The package has no code of its own: everything is in its _test.go files.
package e2e
