package load

import "testing"

// FileSink is what a Parquet file is written to, for external tests.
type FileSink = fileSink

// SetCreateFile replaces the Parquet file opener for one test (the seam for
// a full disk or an unwritable warehouse) and restores it afterwards.
func SetCreateFile(t testing.TB, create func(path string) (FileSink, error)) {
	t.Helper()
	saved := createFile
	createFile = create
	t.Cleanup(func() { createFile = saved })
}

// SingleCreate exposes singleCreate to the external tests.
var SingleCreate = singleCreate
