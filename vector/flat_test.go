package vector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// bruteForce is the reference exact search: every distance, sorted.
func bruteForce(vectors []float32, dim int, query []float32, k int, m Metric, allow func(uint64) bool) []Neighbor {
	var all []Neighbor
	fn := m.Func()
	for i := 0; i*dim < len(vectors); i++ {
		if allow != nil && !allow(uint64(i)) {
			continue
		}
		all = append(all, Neighbor{ID: uint64(i), Distance: fn(query, vectors[i*dim:(i+1)*dim])})
	}
	return sortedNeighbors(all, k)
}

func TestFlatSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 3, 17, 128} {
		n := 1200
		vs := randVec(r, n*dim)
		// Duplicate rows make exact ties, broken by ID.
		copy(vs[10*dim:11*dim], vs[20*dim:21*dim])
		copy(vs[1100*dim:1101*dim], vs[20*dim:21*dim])
		ids := make([]uint64, 0, n/3)
		for i := 0; i < n; i += 3 {
			ids = append(ids, uint64(i))
		}
		ids = append(ids, 1<<40)      // beyond the rows: ignored
		allow := NewAllowList(ids...) // dense: scanned
		sparse := NewAllowList()      // walked
		for i := uint64(5); i < uint64(n); i += 11 {
			sparse.Bitmap().Add(i)
		}
		even := FilterFunc(func(id uint64) bool { return id%2 == 0 })
		for _, m := range []Metric{L2, Cosine, Dot} {
			for qi := range 3 {
				q := randVec(r, dim)
				if qi == 0 {
					q = slices.Clone(vs[20*dim : 21*dim])
				}
				cases := []struct {
					filter Filter
					ref    func(uint64) bool
				}{
					{nil, nil},
					{allow, allow.Contains},
					{sparse, sparse.Contains},
					{even, even},
				}
				for ci, c := range cases {
					all := bruteForce(vs, dim, q, n, m, c.ref)
					for _, k := range []int{0, 1, 10, 100, 2000} {
						name := fmt.Sprintf("dim %d %v k %d q %d filter %d", dim, m, k, qi, ci)
						want := all[:min(k, len(all))]
						got := FlatSearch(vs, dim, q, k, m, c.filter)
						if !slices.Equal(got, want) {
							t.Fatalf("%s: FlatSearch\n got %v\nwant %v", name, head(got), head(want))
						}
						for _, w := range []int{0, 2, 3, 7} {
							par := flatSearchParallel(vs, dim, q, k, m, c.filter, w, 256)
							if !slices.Equal(par, want) {
								t.Fatalf("%s workers %d: parallel\n got %v\nwant %v", name, w, head(par), head(want))
							}
						}
					}
				}
			}
		}
	}
}

func head(ns []Neighbor) []Neighbor { return ns[:min(len(ns), 12)] }

func TestFlatSearchParallelLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dim, n = 16, 40000
	vs := randVec(r, n*dim)
	q := randVec(r, dim)
	bm := roaring64.New()
	for i := range uint64(n) {
		if r.IntN(10) == 0 {
			bm.Add(i)
		}
	}
	for _, allow := range []Filter{nil, AllowBitmap(bm)} {
		want := FlatSearch(vs, dim, q, 25, L2, allow)
		got := FlatSearchParallel(vs, dim, q, 25, L2, allow, 4)
		if len(want) != 25 || !slices.Equal(got, want) {
			t.Fatalf("parallel %v, sequential %v", got, want)
		}
	}
}

// TestFlatSearchSets: searching the rows cut into sets (one empty, some
// tiny, one over a chunk) under mapped IDs gives FlatSearch's result over
// the whole with the IDs mapped, with no filter, a dense and a sparse allow
// list and a filter function, on one worker and several.
func TestFlatSearchSets(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const dim, n = 8, 3*flatMinChunk + 123
	vs := randVec(r, n*dim)
	q := randVec(r, dim)
	ids := make([]uint64, n) // increasing, so ties break alike
	for i := range ids {
		ids[i] = 1000 + 3*uint64(i)
	}
	dense, sparse := roaring64.New(), roaring64.New()
	for i := range uint64(n) {
		if r.IntN(2) == 0 {
			dense.Add(i)
		}
		if r.IntN(50) == 0 {
			sparse.Add(i)
		}
	}
	cuts := []int{0, 0, 1, 7, 500, 2*flatMinChunk + 900, n}
	for _, allow := range []Filter{nil, AllowBitmap(dense), AllowBitmap(sparse), FilterFunc(func(p uint64) bool { return p%7 != 0 })} {
		var sets []FlatSet
		for i := range len(cuts) - 1 {
			lo, hi := cuts[i], cuts[i+1]
			set := FlatSet{Vectors: vs[lo*dim : hi*dim], IDs: ids[lo:hi]}
			switch {
			case allow == nil:
			case lo == 0:
				set.Allow = allow // positions are the whole's: the allow lists' fast paths
			default:
				set.Allow = FilterFunc(func(p uint64) bool { return allow.Contains(p + uint64(lo)) })
			}
			sets = append(sets, set)
		}
		for _, m := range []Metric{L2, Cosine, Dot} {
			want := FlatSearch(vs, dim, q, 20, m, allow)
			for i := range want {
				want[i].ID = ids[want[i].ID]
			}
			for _, workers := range []int{1, 3} {
				if got := FlatSearchSets(sets, dim, q, 20, m, workers); !slices.Equal(got, want) {
					t.Fatalf("filter %T metric %v workers %d: %v, want %v", allow, m, workers, got, want)
				}
			}
		}
	}
	if got := FlatSearchSets(nil, dim, q, 5, L2, 2); len(got) != 0 {
		t.Fatalf("no sets: %v", got)
	}
}

func TestRerank(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim, n = 8, 100
	vs := randVec(r, n*dim)
	q := randVec(r, dim)
	all := make([]Neighbor, n)
	for i := range all {
		all[i] = Neighbor{ID: uint64(i)} // distances unknown
	}
	if got, want := Rerank(vs, dim, q, all, 5, Cosine), FlatSearch(vs, dim, q, 5, Cosine, nil); !slices.Equal(got, want) {
		t.Fatalf("Rerank %v, FlatSearch %v", got, want)
	}
}

// Benchmarks: go test -run XXX -bench FlatSearch ./vector

func BenchmarkFlatSearch(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const dim, n, k = 128, 200_000, 10
	vs := randVec(r, n*dim)
	qs := make([][]float32, 16)
	for i := range qs {
		qs[i] = randVec(r, dim)
	}
	bm := roaring64.New()
	for i := uint64(0); i < n; i += 10 {
		bm.Add(i)
	}
	tenth := AllowBitmap(bm)
	for _, m := range []Metric{L2, Cosine} {
		run := func(name string, search func(q []float32) []Neighbor) {
			b.Run(fmt.Sprintf("%s/%v", name, m), func(b *testing.B) {
				i := 0
				for b.Loop() {
					search(qs[i%len(qs)])
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
			})
		}
		run("200kx128/single", func(q []float32) []Neighbor { return FlatSearch(vs, dim, q, k, m, nil) })
		run("200kx128/parallel", func(q []float32) []Neighbor { return FlatSearchParallel(vs, dim, q, k, m, nil, 0) })
		run("200kx128/allow10pct", func(q []float32) []Neighbor { return FlatSearch(vs, dim, q, k, m, tenth) })
	}
}
