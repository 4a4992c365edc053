package vector

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The IVF measurements run on the lance-baseline workload (200000×128
// around 256 centres, seed 12345, 100 queries; see clustered_data_test.go)
// and are off by default:
//
//	LANCER_IVF_BENCH=1 go test ./vector -run TestIVFClusteredBench -v -count=1
//
// builds IVF_HNSW_SQ with 447 partitions, logs the build time by stage,
// the serialized size and recall@10 / sequential single-goroutine QPS at
// several (nprobes, ef), and fails if the targets are missed: build ≤ 10 s,
// recall@10 ≥ 0.95 at ≥ 1500 QPS with the default search options, size ≤
// Lance's 62 MB. BenchmarkIVFSearch measures the same searches with the
// testing harness (LANCER_IVF_BENCH_N rows, default 20000).

func ivfBenchRows(tb testing.TB) int {
	n := 20000
	if s := os.Getenv("LANCER_IVF_BENCH_N"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil || n < 100 {
			tb.Fatalf("LANCER_IVF_BENCH_N=%q: want an integer ≥ 100", s)
		}
	}
	return n
}

type ivfBenchSet struct {
	vecs, queries []float32
	truth         [][]Neighbor
}

func ivfBenchData(n int) *ivfBenchSet {
	s := &ivfBenchSet{}
	s.vecs, s.queries = lanceBaselineData(n)
	for q := 0; q < 100; q++ {
		s.truth = append(s.truth, FlatSearchParallel(s.vecs, 128, s.queries[q*128:(q+1)*128], 10, L2, nil, 0))
	}
	return s
}

func seqIDs(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = uint64(i)
	}
	return ids
}

// ivfMeasure returns recall@10 over the queries and sequential QPS.
func ivfMeasure(x *IVF, s *ivfBenchSet, o *IVFSearchOptions, minTime time.Duration) (recall, qps float64) {
	for q := range s.truth {
		recall += recallAt(searchIVF(x, s.queries[q*128:(q+1)*128], 10, o, nil), s.truth[q])
	}
	recall /= float64(len(s.truth))
	start := time.Now()
	count := 0
	for time.Since(start) < minTime {
		for q := range s.truth {
			searchIVF(x, s.queries[q*128:(q+1)*128], 10, o, nil)
		}
		count += len(s.truth)
	}
	return recall, float64(count) / time.Since(start).Seconds()
}

func TestIVFClusteredBench(t *testing.T) {
	if os.Getenv("LANCER_IVF_BENCH") == "" {
		t.Skip("set LANCER_IVF_BENCH=1 to run the 200k×128 IVF measurement")
	}
	s := ivfBenchData(200000)
	type cfg struct {
		name    string
		sub     SubIndex
		storage Storage
	}
	for _, c := range []cfg{{"IVF_HNSW_SQ", SubHNSW, StoreSQ8}, {"IVF_HNSW_FLAT", SubHNSW, StoreFloat32}, {"IVF_SQ", SubFlat, StoreSQ8}, {"IVF_FLAT", SubFlat, StoreFloat32}} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			stageEnd := map[string]time.Time{}
			start := time.Now()
			x, err := BuildIVF(s.vecs, 128, seqIDs(200000), &IVFOptions{
				Partitions: 447, Sub: c.sub, Storage: c.storage, Seed: 1,
				Progress: func(stage string, done, total int) {
					mu.Lock()
					stageEnd[stage] = time.Now()
					mu.Unlock()
				},
			})
			build := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: build %.2fs on %d procs: kmeans %.2fs, assign %.2fs, partitions (SQ8+graphs) %.2fs",
				c.name, build.Seconds(), runtime.GOMAXPROCS(0),
				stageEnd["kmeans"].Sub(start).Seconds(), stageEnd["assign"].Sub(stageEnd["kmeans"]).Seconds(),
				stageEnd["partitions"].Sub(stageEnd["assign"]).Seconds())
			size := x.EncodedSize()
			t0 := time.Now()
			data, err := x.MarshalBinary()
			if err != nil || int64(len(data)) != size {
				t.Fatalf("MarshalBinary: %d bytes (EncodedSize %d), %v", len(data), size, err)
			}
			enc := time.Since(t0)
			t0 = time.Now()
			y, err := UnmarshalIVF(data)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: serialized %d bytes (%.1f MB; Lance IVF_HNSW_SQ 62 MB); marshal %.2fs, unmarshal %.2fs", c.name, size, float64(size)/1e6, enc.Seconds(), time.Since(t0).Seconds())
			for _, so := range []IVFSearchOptions{{}, {NProbes: 1, Ef: 20}, {NProbes: 2, Ef: 20}, {NProbes: 5, Ef: 20}, {NProbes: 5, Ef: 40}, {NProbes: 10, Ef: 40}, {NProbes: 20, Ef: 64}, {NProbes: 50, Ef: 100}} {
				r, qps := ivfMeasure(y, s, &so, 500*time.Millisecond)
				t.Logf("%s: nprobes=%d ef=%d: recall@10 %.3f, %.0f QPS", c.name, so.NProbes, so.Ef, r, qps)
			}
			if c.name == "IVF_HNSW_SQ" {
				r, qps := ivfMeasure(y, s, nil, time.Second)
				if build > 10*time.Second || r < 0.95 || qps < 1500 || size > 62e6 {
					t.Errorf("targets missed: build %.2fs (≤ 10), recall %.3f (≥ 0.95), %.0f QPS (≥ 1500), %d bytes (≤ 62e6)", build.Seconds(), r, qps, size)
				}
			}
		})
	}
}

var (
	ivfBenchOnce sync.Once
	ivfBenchSetV *ivfBenchSet
	ivfBenchIdx  *IVF
)

func BenchmarkIVFSearch(b *testing.B) {
	n := ivfBenchRows(b)
	ivfBenchOnce.Do(func() {
		ivfBenchSetV = ivfBenchData(n)
		x, err := BuildIVF(ivfBenchSetV.vecs, 128, seqIDs(n), &IVFOptions{Sub: SubHNSW, Storage: StoreSQ8})
		if err != nil {
			b.Fatal(err)
		}
		ivfBenchIdx = x
	})
	s, x := ivfBenchSetV, ivfBenchIdx
	for _, so := range []IVFSearchOptions{{}, {NProbes: 5, Ef: 20}, {NProbes: 20, Ef: 64}} {
		b.Run(fmt.Sprintf("nprobes=%d/ef=%d", so.NProbes, so.Ef), func(b *testing.B) {
			recall, _ := ivfMeasure(x, s, &so, 0)
			for i := 0; b.Loop(); i++ {
				q := i % 100
				searchIVF(x, s.queries[q*128:(q+1)*128], 10, &so, nil)
			}
			b.ReportMetric(recall, "recall@10")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
		})
	}
}

func BenchmarkIVFBuild(b *testing.B) {
	n := ivfBenchRows(b)
	vecs, _ := lanceBaselineData(n)
	ids := seqIDs(n)
	for b.Loop() {
		if _, err := BuildIVF(vecs, 128, ids, &IVFOptions{Sub: SubHNSW, Storage: StoreSQ8}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "build-s")
}

// TestIVFPQClusteredBench measures IVF_PQ (16 sub-vectors, 447
// partitions) on the same workload, without and with re-ranking by exact
// vectors (refine factor 10: 100 candidates), as Lance's IVF_PQ benchmark:
//
//	LANCER_IVF_BENCH=1 go test ./vector -run TestIVFPQClusteredBench -v -count=1
func TestIVFPQClusteredBench(t *testing.T) {
	if os.Getenv("LANCER_IVF_BENCH") == "" {
		t.Skip("set LANCER_IVF_BENCH=1 to run the 200k×128 IVF_PQ measurement")
	}
	s := ivfBenchData(200000)
	sample := 0 // LANCER_PQ_SAMPLE overrides PQOptions.SampleSize
	if v := os.Getenv("LANCER_PQ_SAMPLE"); v != "" {
		if _, err := fmt.Sscan(v, &sample); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	x, err := BuildIVF(s.vecs, 128, seqIDs(200000), &IVFOptions{Partitions: 447, Storage: StorePQ, PQ: PQOptions{SubVectors: 16, SampleSize: sample}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	build := time.Since(start)
	data, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("IVF_PQ: build %.2fs on %d procs, %d bytes (%.1f MB; Lance 4.7 MB, 21.7 s)", build.Seconds(), runtime.GOMAXPROCS(0), len(data), float64(len(data))/1e6)
	for _, np := range []int{10, 20} {
		so := &IVFSearchOptions{NProbes: np}
		r, qps := ivfMeasure(x, s, so, 500*time.Millisecond)
		t.Logf("IVF_PQ nprobes=%d: recall@10 %.3f, %.0f QPS", np, r, qps)
		for _, refine := range []int{10} {
			search := func(q int) []Neighbor {
				query := s.queries[q*128 : (q+1)*128]
				return Rerank(s.vecs, 128, query, searchIVF(x, query, 10*refine, so, nil), 10, L2)
			}
			recall := 0.0
			for q := range s.truth {
				recall += recallAt(search(q), s.truth[q])
			}
			recall /= float64(len(s.truth))
			t0 := time.Now()
			count := 0
			for time.Since(t0) < 500*time.Millisecond {
				for q := range s.truth {
					search(q)
				}
				count += len(s.truth)
			}
			t.Logf("IVF_PQ nprobes=%d refine=%d: recall@10 %.3f, %.0f QPS", np, refine, recall, float64(count)/time.Since(t0).Seconds())
		}
	}
}
