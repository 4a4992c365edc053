package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cache"
)

// The server load test's search pattern (bench/server-load.mjs): a table
// indexed once, then growing by small appended fragments, each append a
// new version; every search opens the latest version afresh, so whatever
// a Dataset caches is cold. These benchmarks time the first search of each
// new version.

const (
	benchSearchRows  = 50_000
	benchSearchDim   = 128
	benchSearchFrags = 200
)

// benchSearchBase returns a folder holding the benchmark's table: 50k rows
// {id int64, vector [128]float32} with an ivf_hnsw_sq index, then 200
// appended fragments of 1–10 rows. It is built once and kept in the
// temporary folder (building the index takes a while), so callers copy it.
func benchSearchBase(b *testing.B) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lancer-search-bench-%d-%d-%d-v1", benchSearchRows, benchSearchDim, benchSearchFrags))
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return dir
	}
	_ = os.RemoveAll(dir)
	ctx := context.Background()
	store, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	r := benchRows(rng, 0, benchSearchRows)
	d, err := Write(ctx, store, r, nil)
	r.Release()
	if err != nil {
		b.Fatal(err)
	}
	if d, err = d.CreateIndex(ctx, "vector", &CreateIndexOptions{Type: IndexIVFHNSWSQ}); err != nil {
		b.Fatal(err)
	}
	next := int64(benchSearchRows)
	for range benchSearchFrags {
		n := 1 + rng.IntN(10)
		r := benchRows(rng, next, n)
		d, err = d.Append(ctx, r, nil)
		r.Release()
		if err != nil {
			b.Fatal(err)
		}
		next += int64(n)
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchRows returns n rows with ids from first and uniform random vectors,
// as the load test's clients insert.
func benchRows(rng *rand.Rand, first int64, n int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "vector", Type: arrow.FixedSizeListOf(benchSearchDim, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	vb := bld.Field(1).(*array.FixedSizeListBuilder)
	fb := vb.ValueBuilder().(*array.Float32Builder)
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(first + int64(i))
		vb.Append(true)
		for range benchSearchDim {
			fb.Append(rng.Float32())
		}
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return rr
}

func randomQuery(rng *rand.Rand) []float32 {
	q := make([]float32, benchSearchDim)
	for i := range q {
		q[i] = rng.Float32()
	}
	return q
}

// BenchmarkSearchNewVersion times the first search of each new version:
// every iteration appends a fragment of 1–10 rows (untimed), opens the
// latest version as a new Dataset (untimed) and searches it. Run with a
// fixed -benchtime (e.g. 100x): the table grows a fragment per iteration.
func BenchmarkSearchNewVersion(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    SearchOptions
	}{
		{"filter", SearchOptions{K: 10, Filter: "id % 10 != 3"}},
		{"nofilter", SearchOptions{K: 10}},
		{"postfilter", SearchOptions{K: 10, Filter: "id % 10 != 3", Postfilter: true}},
		{"selective", SearchOptions{K: 10, Filter: "id < 100"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base := benchSearchBase(b)
			dir := filepath.Join(b.TempDir(), "t.lance")
			copyTree(b, filepath.Join(base, "t.lance"), dir)
			store, err := blob.NewLocalStore(dir)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			// Every version is opened with one cache, as a server does.
			c, err := cache.New(DefaultCacheBytes)
			if err != nil {
				b.Fatal(err)
			}
			oo := &OpenOptions{Cache: c}
			d, err := Open(ctx, store, oo)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			next := int64(10_000_000)
			// One search on the first version warms the cache's index
			// parts, as a running server has.
			o := bc.o
			o.Columns = []string{"id"}
			if _, err := d.SearchRowIDs(ctx, "vector", randomQuery(rng), &o); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				n := 1 + rng.IntN(10)
				r := benchRows(rng, next, n)
				next += int64(n)
				if _, err := d.Append(ctx, r, nil); err != nil {
					b.Fatal(err)
				}
				r.Release()
				if d, err = Open(ctx, store, oo); err != nil {
					b.Fatal(err)
				}
				q := randomQuery(rng)
				b.StartTimer()
				rec, err := d.Search(ctx, "vector", q, &o)
				if err != nil {
					b.Fatal(err)
				}
				if rec.NumRows() != int64(o.K) && bc.name != "postfilter" {
					b.Fatalf("%d rows", rec.NumRows())
				}
				rec.Release()
			}
		})
	}
}

// BenchmarkSearchIndexed times searches of one IVF_HNSW_SQ index in
// Lance's format (50k x 128, no unindexed rows) at the core suite's
// settings: what the per-partition graph search costs.
func BenchmarkSearchIndexed(b *testing.B) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lancer-search-indexed-%d-%d-v1", benchSearchRows, benchSearchDim))
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		_ = os.RemoveAll(dir)
		store, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
		if err != nil {
			b.Fatal(err)
		}
		r := benchRows(rand.New(rand.NewPCG(1, 2)), 0, benchSearchRows)
		d, err := Write(ctx, store, r, nil)
		r.Release()
		if err != nil {
			b.Fatal(err)
		}
		if _, err = d.CreateIndex(ctx, "vector", &CreateIndexOptions{Type: IndexIVFHNSWSQ}); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	store, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
	if err != nil {
		b.Fatal(err)
	}
	d, err := Open(ctx, store, nil)
	if err != nil {
		b.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	queries := make([][]float32, 64)
	for i := range queries {
		queries[i] = randomQuery(rng)
	}
	for _, s := range []struct{ nprobes, ef int }{{1, 20}, {10, 100}, {20, 100}} {
		b.Run(fmt.Sprintf("np%d_ef%d", s.nprobes, s.ef), func(b *testing.B) {
			// Warm: every partition the queries probe is read once first.
			for _, q := range queries {
				rr, err := d.Search(ctx, "vector", q, &SearchOptions{K: 10, NProbes: s.nprobes, Ef: s.ef, Columns: []string{"id"}})
				if err != nil {
					b.Fatal(err)
				}
				rr.Release()
			}
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				rr, err := d.Search(ctx, "vector", queries[i%len(queries)], &SearchOptions{K: 10, NProbes: s.nprobes, Ef: s.ef, Columns: []string{"id"}})
				if err != nil {
					b.Fatal(err)
				}
				rr.Release()
				i++
			}
			// CPU time per search: what the search costs on a machine
			// whose other work makes wall time meaningless.
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
