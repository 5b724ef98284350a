package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/storegen"
)

// benchStore is the store BenchmarkRun extracts: $KANDEV_BENCH_STORE (e.g.
// a store `make bench` cached under .bench/), else a small generated one.
func benchStore(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("KANDEV_BENCH_STORE"); p != "" {
		return p
	}
	p := filepath.Join(b.TempDir(), "bench.db")
	if _, err := storegen.Generate(context.Background(), p, storegen.LargeOptions(0.005)); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchBatchRows is $KANDEV_BENCH_BATCH_ROWS (0, the default, when unset).
func benchBatchRows(b *testing.B) int {
	v := os.Getenv("KANDEV_BENCH_BATCH_ROWS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("KANDEV_BENCH_BATCH_ROWS: %v", err)
	}
	return n
}

// BenchmarkRun is one full run (snapshot, transform, Parquet, publish,
// DuckDB views) per iteration, each into a fresh warehouse. Profile it with
//
//	KANDEV_BENCH_STORE=.bench/store-medium-….db go test -run '^$' -bench Run -benchtime 1x -cpuprofile cpu.out ./pipeline
//
// $KANDEV_BENCH_BATCH_ROWS sets Options.BatchRows; $KANDEV_BENCH_HEAPPROFILE
// names a heap profile written at the run's peak of live heap.
func BenchmarkRun(b *testing.B) {
	store := benchStore(b)
	st, err := os.Stat(store)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	if p := os.Getenv("KANDEV_BENCH_HEAPPROFILE"); p != "" {
		stop := heapAtPeak(b, p)
		defer stop()
	}
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		wh := filepath.Join(b.TempDir(), "wh")
		b.StartTimer()
		res, err := Run(context.Background(), Options{Warehouse: wh, BatchRows: benchBatchRows(b),
			Installations: []Installation{{Name: "bench", Source: store}}})
		if err != nil || res.Failed() {
			b.Fatalf("run: %v %+v", err, res.Outcomes)
		}
		rows = res.Outcomes[0].Facts.Subagent.Rows
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "subagent_rows/s")
}

// heapAtPeak writes a heap profile to path each time the live heap reaches
// a new high, so the profile shows what a run holds at its peak.
func heapAtPeak(b *testing.B, path string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var peak uint64
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak+peak/20 {
				peak = ms.HeapInuse
				f, err := os.Create(path)
				if err != nil {
					b.Error(err)
					return
				}
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
				b.Logf("heap in use %d MiB", peak>>20)
			}
		}
	}()
	return func() { close(done); <-finished }
}
