package main

import (
	"strings"
	"testing"
)

const sampleBench = `goos: linux
goarch: amd64
pkg: github.com/kandev/kandev-extract/load
BenchmarkParquetWriteFact/batch=16384/workers=1-2         	      60	  31255251 ns/op	 246.24 MB/s	    524200 rows/s	23852651 B/op	   10845 allocs/op
BenchmarkParquetWriteFact/batch=16384/workers=2-2         	      60	  17074722 ns/op	 450.75 MB/s	    959547 rows/s
BenchmarkParquetWriteFact/batch=16384/workers=1-2         	      60	  33000000 ns/op	 230.00 MB/s	    500000 rows/s
BenchmarkParquetWriteFact/batch=16384/workers=2-2         	      60	  18000000 ns/op	 420.00 MB/s	    900000 rows/s
BenchmarkParquetWriteFact/batch=16384/workers=2-2         	      60	  16000000 ns/op	 480.00 MB/s	   1000000 rows/s
BenchmarkZstdFloor-2                                      	      60	   4967178 ns/op	 689.04 MB/s	   3298452 rows/s
PASS
ok  	github.com/kandev/kandev-extract/load	40.1s
`

// TestParseGoBench reads go test -bench output into per-benchmark medians
// and picks the production configuration's figure for the target.
func TestParseGoBench(t *testing.T) {
	bs := parseGoBench(sampleBench)
	if len(bs) != 3 {
		t.Fatalf("%d benchmarks, want 3: %+v", len(bs), bs)
	}
	w1, w2, z := bs[0], bs[1], bs[2]
	if w1.Name != "BenchmarkParquetWriteFact/batch=16384/workers=1" || w1.Runs != 2 || w1.RowsPerSec != 512100 {
		t.Errorf("workers=1: %+v, want median of 2 runs 512100 rows/s", w1)
	}
	if w2.Runs != 3 || w2.RowsPerSec != 959547 || w2.MBPerSec != 450.75 || w2.NsPerOp != 17074722 {
		t.Errorf("workers=2: %+v, want the median run's figures", w2)
	}
	if z.Name != "BenchmarkZstdFloor" || z.RowsPerSec != 3298452 {
		t.Errorf("zstd floor: %+v", z)
	}
	best, ok := parquetWriterFigure(bs)
	if !ok || best.Name != w2.Name {
		t.Errorf("target judged on %+v, want the two-worker 16Ki benchmark", best)
	}
	got := targets(nil, bs)
	if len(got) != 1 || got[0][1] != "959,547 rows/s" || got[0][2] != "NOT met" {
		t.Errorf("targets = %q", got)
	}
	if md := parquetMarkdown(bs); !strings.Contains(md, "| `ZstdFloor` | 3,298,452 rows/s |") {
		t.Errorf("markdown lacks the zstd floor row:\n%s", md)
	}
}
