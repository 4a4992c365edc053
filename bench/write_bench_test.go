package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format"
)

// The benchmarks' workload is smaller than the harness's default so that
// `go test -bench . ./bench` stays quick; pass -args -workload.rows 100000
// for the harness's size.
var (
	benchRows = flag.Int("workload.rows", 20_000, "rows of the workload the benchmarks write")
	benchDim  = flag.Int("workload.dim", DefaultDim, "embedding dimension of the benchmark workload")
)

var benchData struct {
	once   sync.Once
	w      Workload
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	raw    int64
}

// workload generates the benchmark workload once per test binary.
func workload() (Workload, *arrow.Schema, []arrow.RecordBatch, int64) {
	d := &benchData
	d.once.Do(func() {
		d.w = Workload{Rows: *benchRows, Dim: *benchDim}.withDefaults()
		d.schema = d.w.Schema()
		d.recs = d.w.Records(memory.DefaultAllocator)
		d.raw = RawBytes(d.recs)
	})
	return d.w, d.schema, d.recs, d.raw
}

func BenchmarkWriteV2_0(b *testing.B) { benchWrite(b, format.Version2_0) }
func BenchmarkWriteV2_1(b *testing.B) { benchWrite(b, format.Version2_1) }
func BenchmarkWriteV2_2(b *testing.B) { benchWrite(b, format.Version2_2) }

// benchWrite times dataset.Write of the workload as a new dataset on the
// local file system. MB/s refers to the Arrow buffers written (RawBytes);
// disk-B is the size of the data files; disk/raw their ratio.
func benchWrite(b *testing.B, v format.Version) {
	ctx := context.Background()
	w, schema, recs, raw := workload()
	root := b.TempDir()
	b.SetBytes(raw)
	var disk int64
	i := 0
	for b.Loop() {
		path := filepath.Join(root, fmt.Sprint(i), "t.lance")
		i++
		if _, err := lancerWrite(ctx, path, schema, recs, v); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if disk == 0 {
			s, err := DataFileSizes(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			disk = s.Total
		}
		if err := os.RemoveAll(filepath.Dir(path)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(w.Rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(disk), "disk-B")
	b.ReportMetric(float64(disk)/float64(raw), "disk/raw")
}

func BenchmarkScanV2_0(b *testing.B) { benchScan(b, format.Version2_0) }
func BenchmarkScanV2_1(b *testing.B) { benchScan(b, format.Version2_1) }
func BenchmarkScanV2_2(b *testing.B) { benchScan(b, format.Version2_2) }

// benchScan times opening the workload's dataset and scanning every
// column. MB/s refers to the Arrow buffers produced (RawBytes).
func benchScan(b *testing.B, v format.Version) {
	ctx := context.Background()
	w, schema, recs, raw := workload()
	path := filepath.Join(b.TempDir(), "t.lance")
	if _, err := lancerWrite(ctx, path, schema, recs, v); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(raw)
	for b.Loop() {
		_, n, err := lancerScan(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		if n != int64(w.Rows) {
			b.Fatalf("scanned %d rows, want %d", n, w.Rows)
		}
	}
	b.ReportMetric(float64(w.Rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
