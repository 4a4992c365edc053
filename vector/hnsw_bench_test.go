package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The HNSW benchmarks run on the lance-baseline workload
// (internal/baselinetest draws it): 128-d vectors around 256 gaussian
// centres plus noise, mulberry32 seed 12345, 100 queries drawn the same
// way. LANCER_HNSW_BENCH_N sets the row count; the default 20000 keeps
// `go test -bench HNSW` short, and 200000 is the baseline's table:
//
//	LANCER_HNSW_BENCH_N=200000 go test ./vector -run '^$' -bench HNSW -benchtime 1x
//
// BenchmarkHNSWSearch reports single-goroutine sequential QPS and recall@10
// against exact search for each ef, with the default options (M = 16,
// EfConstruction = 150, Workers = GOMAXPROCS).
func hnswBenchN(b *testing.B) int {
	n := 20000
	if s := os.Getenv("LANCER_HNSW_BENCH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 100 {
			b.Fatalf("LANCER_HNSW_BENCH_N=%q: want an integer ≥ 100", s)
		}
		n = v
	}
	return n
}

type hnswBenchSet struct {
	vecs, queries []float32
	truth         [][]Neighbor
	h             *HNSW
	build         time.Duration
}

var (
	hnswBenchOnce sync.Once
	hnswBenchData *hnswBenchSet
	hnswBenchErr  error
)

func hnswBenchSetup(b *testing.B) *hnswBenchSet {
	hnswBenchOnce.Do(func() {
		s := &hnswBenchSet{}
		s.vecs, s.queries = lanceBaselineData(hnswBenchN(b))
		for q := 0; q < 100; q++ {
			s.truth = append(s.truth, FlatSearch(s.vecs, 128, s.queries[q*128:(q+1)*128], 10, L2, nil))
		}
		t0 := time.Now()
		s.h, hnswBenchErr = BuildHNSW(s.vecs, 128, nil)
		s.build = time.Since(t0)
		if hnswBenchErr == nil {
			b.Logf("built %d×128 (M=16 efC=150, %d workers) in %.2fs; graph %d bytes, %.1f B/node", s.h.Len(), runtime.GOMAXPROCS(0), s.build.Seconds(), s.h.GraphBytes(), float64(s.h.GraphBytes())/float64(s.h.Len()))
		}
		hnswBenchData = s
	})
	if hnswBenchErr != nil {
		b.Fatal(hnswBenchErr)
	}
	return hnswBenchData
}

func BenchmarkHNSWBuild(b *testing.B) {
	vecs, _ := lanceBaselineData(hnswBenchN(b))
	var h *HNSW
	for b.Loop() {
		var err error
		if h, err = BuildHNSW(vecs, 128, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "build-s")
	b.ReportMetric(float64(h.Len())*float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
	b.ReportMetric(float64(h.GraphBytes())/float64(h.Len()), "graph-B/node")
}

func BenchmarkHNSWSearch(b *testing.B) {
	s := hnswBenchSetup(b)
	for _, ef := range []int{16, 32, 64, 128} {
		b.Run(fmt.Sprintf("ef=%d", ef), func(b *testing.B) {
			// Recall over the 100 queries, untimed.
			recall := 0.0
			for q := range s.truth {
				recall += recallAt(s.h.Search(s.queries[q*128:(q+1)*128], 10, ef, nil), s.truth[q])
			}
			b.ResetTimer()
			// Sequential queries on one goroutine, cycling through the 100.
			for i := 0; b.Loop(); i++ {
				q := i % 100
				s.h.Search(s.queries[q*128:(q+1)*128], 10, ef, nil)
			}
			b.ReportMetric(recall/float64(len(s.truth)), "recall@10")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
		})
	}
}

// BenchmarkHNSWSearchFiltered measures filtered search at ef = 64 for a
// range of selectivities, with the automatic rule (auto) and with each path
// forced (graph: filtered walk only; exact: scan only), to check where the
// exact-scan rule of Search switches.
func BenchmarkHNSWSearchFiltered(b *testing.B) {
	s := hnswBenchSetup(b)
	n := s.h.Len()
	for _, sel := range []float64{0.5, 0.1, 0.03, 0.01, 0.001} {
		r := rand.New(rand.NewPCG(uint64(sel*1e6), 7))
		allow, count := newIDSet(n, func(int) bool { return r.Float64() < sel })
		var truth [][]Neighbor
		for q := 0; q < 100; q++ {
			truth = append(truth, FlatSearch(s.vecs, 128, s.queries[q*128:(q+1)*128], 10, L2, allow))
		}
		for _, mode := range []string{"auto", "graph", "exact"} {
			b.Run(fmt.Sprintf("sel=%g/%s", sel, mode), func(b *testing.B) {
				switch mode {
				case "graph":
					s.h.exactFactor = -1
				case "exact":
					s.h.exactFactor = math.Inf(1)
				}
				defer func() { s.h.exactFactor = 0 }()
				recall := 0.0
				for q := range truth {
					recall += recallAt(s.h.Search(s.queries[q*128:(q+1)*128], 10, 64, allow), truth[q])
				}
				for i := 0; b.Loop(); i++ {
					q := i % 100
					s.h.Search(s.queries[q*128:(q+1)*128], 10, 64, allow)
				}
				b.ReportMetric(recall/float64(len(truth)), "recall@10")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
				b.ReportMetric(float64(count), "allowed")
			})
		}
	}
}
