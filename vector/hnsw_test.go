package vector

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
)

// hnswFixtureN is the size of the shared fixture: 20k, or 5k under -race or
// -short, where the build is many times slower.
func hnswFixtureN() int {
	if testing.Short() || hnswRace {
		return 5000
	}
	return 20000
}

// hnswFixture is the clustered 20k×128 set (see hnswFixtureN), its queries
// and their exact top-10, shared by the tests.
var hnswFixture = sync.OnceValue(func() (f struct {
	vecs, queries []float32
	truth         [][]Neighbor
}) {
	f.vecs, f.queries = clusteredData(hnswFixtureN(), 100, 128, 256, 12345)
	for q := 0; q < 100; q++ {
		f.truth = append(f.truth, hnswBrute(f.vecs, 128, f.queries[q*128:(q+1)*128], 10, L2, nil))
	}
	return f
})

var hnswFixtureGraph = sync.OnceValues(func() (*HNSW, error) {
	f := hnswFixture()
	return BuildHNSW(f.vecs, 128, &HNSWOptions{Workers: 1})
})

func meanRecall(t *testing.T, h *HNSW, queries []float32, truth [][]Neighbor, ef int, allow Filter) float64 {
	t.Helper()
	dim := h.Dim()
	sum := 0.0
	for q := range truth {
		got := h.Search(queries[q*dim:(q+1)*dim], 10, ef, allow)
		checkSorted(t, got)
		sum += recallAt(got, truth[q])
	}
	return sum / float64(len(truth))
}

func checkSorted(t *testing.T, got []Neighbor) {
	t.Helper()
	if !slices.IsSortedFunc(got, func(a, b Neighbor) int {
		if a.Distance < b.Distance {
			return -1
		}
		if a.Distance > b.Distance {
			return 1
		}
		return 0
	}) {
		t.Fatalf("results not sorted by distance: %v", got)
	}
}

func TestHNSWRecallL2(t *testing.T) {
	f := hnswFixture()
	h, err := hnswFixtureGraph()
	if err != nil {
		t.Fatal(err)
	}
	for _, ef := range []int{10, 16, 32, 64, 128, 256} {
		r := meanRecall(t, h, f.queries, f.truth, ef, nil)
		t.Logf("%d×128 L2, M=16 efC=150: ef=%d recall@10=%.3f", h.Len(), ef, r)
		if ef == 64 && r < 0.95 {
			t.Errorf("recall@10 at ef=64 = %.3f, want ≥ 0.95", r)
		}
	}
	// Distances are the metric's.
	q := f.queries[:128]
	for _, nb := range h.Search(q, 10, 64, nil) {
		if want := L2Squared(q, f.vecs[nb.ID*128:(nb.ID+1)*128]); nb.Distance != want {
			t.Fatalf("node %d distance %v, want %v", nb.ID, nb.Distance, want)
		}
	}
}

func TestHNSWRecallCosineDot(t *testing.T) {
	n := 5000
	if hnswRace {
		n = 2000
	}
	vecs, queries := clusteredData(n, 50, 64, 64, 7)
	for _, m := range []Metric{Cosine, Dot} {
		h, err := BuildHNSW(vecs, 64, &HNSWOptions{Metric: m, Workers: 1, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		var truth [][]Neighbor
		for q := 0; q < 50; q++ {
			truth = append(truth, hnswBrute(vecs, 64, queries[q*64:(q+1)*64], 10, m, nil))
		}
		for _, ef := range []int{16, 64, 128} {
			r := meanRecall(t, h, queries, truth, ef, nil)
			t.Logf("%d×64 %v: ef=%d recall@10=%.3f", n, m, ef, r)
			if ef == 64 && r < 0.95 {
				t.Errorf("%v recall@10 at ef=64 = %.3f, want ≥ 0.95", m, r)
			}
		}
	}
}

func TestHNSWParallelBuildRecall(t *testing.T) {
	f := hnswFixture()
	serial, err := hnswFixtureGraph()
	if err != nil {
		t.Fatal(err)
	}
	par, err := BuildHNSW(f.vecs, 128, &HNSWOptions{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, par)
	for _, ef := range []int{16, 64} {
		rs := meanRecall(t, serial, f.queries, f.truth, ef, nil)
		rp := meanRecall(t, par, f.queries, f.truth, ef, nil)
		t.Logf("%d×128 ef=%d: serial %.3f, 4 workers %.3f", par.Len(), ef, rs, rp)
		if rp < rs-0.01 {
			t.Errorf("ef=%d: parallel recall %.3f more than 0.01 below serial %.3f", ef, rp, rs)
		}
	}
}

// checkGraph checks the graph's invariants: counts within capacity, ids in
// range and of a high enough level, no self or duplicate links.
func checkGraph(t *testing.T, h *HNSW) {
	t.Helper()
	for i := 0; i < h.n; i++ {
		for l := 0; l <= int(h.levels[i]); l++ {
			capacity := h.m
			if l == 0 {
				capacity = h.m0
			}
			blk := h.links(uint32(i), l)
			if int(blk[0]) > capacity {
				t.Fatalf("node %d layer %d: %d links", i, l, blk[0])
			}
			nb := slices.Clone(h.neighbors(uint32(i), l))
			if h.n > 1 && l == 0 && len(nb) == 0 {
				t.Fatalf("node %d has no layer-0 links", i)
			}
			slices.Sort(nb)
			for j, x := range nb {
				if int(x) >= h.n || x == uint32(i) || int(h.levels[x]) < l || (j > 0 && nb[j-1] == x) {
					t.Fatalf("node %d layer %d: bad links %v", i, l, nb)
				}
			}
		}
	}
}

func TestHNSWTiny(t *testing.T) {
	// n = 0.
	h, err := BuildHNSW(nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Len() != 0 || h.Search([]float32{1, 2, 3}, 5, 10, nil) != nil {
		t.Fatal("empty graph returned results")
	}
	roundTrip(t, h, nil)

	// n = 1, 2 and dim 1, then a dim-1 line of 100 points searched with
	// ef = n, which must be exact.
	for _, vecs := range [][]float32{{5}, {5, 1}, {1, 1}} {
		h, err := BuildHNSW(vecs, 1, &HNSWOptions{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		checkGraph(t, h)
		got := h.Search([]float32{0}, 3, 1, nil)
		want := hnswBrute(vecs, 1, []float32{0}, 3, L2, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("%v: got %v, want %v", vecs, got, want)
		}
		roundTrip(t, h, vecs)
	}
	r := rand.New(rand.NewPCG(1, 2))
	line := make([]float32, 100)
	for i := range line {
		line[i] = float32(r.NormFloat64())
	}
	h, err = BuildHNSW(line, 1, &HNSWOptions{M: 2, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, h)
	for _, q := range []float32{-3, 0, 0.5, 10} {
		got := h.Search([]float32{q}, 7, 100, nil)
		if want := hnswBrute(line, 1, []float32{q}, 7, L2, nil); !slices.Equal(got, want) {
			t.Fatalf("q=%v: got %v, want %v", q, got, want)
		}
	}
}

func TestHNSWBadArguments(t *testing.T) {
	for _, c := range []struct {
		vecs []float32
		dim  int
		opts *HNSWOptions
	}{
		{[]float32{1, 2, 3}, 2, nil},
		{[]float32{1}, 0, nil},
		{[]float32{1}, 1, &HNSWOptions{M: 1}},
		{[]float32{1}, 1, &HNSWOptions{M: 1000}},
		{[]float32{1}, 1, &HNSWOptions{EfConstruction: -1}},
		{[]float32{1}, 1, &HNSWOptions{Workers: -1}},
		{[]float32{1}, 1, &HNSWOptions{Metric: 9}},
	} {
		if _, err := BuildHNSW(c.vecs, c.dim, c.opts); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("BuildHNSW(%v, %d, %+v) = %v, want ErrInvalidArgument", c.vecs, c.dim, c.opts, err)
		}
	}
}

func TestHNSWDuplicates(t *testing.T) {
	// 200 distinct vectors, each 10 times.
	base, _ := clusteredData(200, 0, 16, 8, 99)
	var vecs []float32
	for range 10 {
		vecs = append(vecs, base...)
	}
	h, err := BuildHNSW(vecs, 16, &HNSWOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkGraph(t, h)
	for i := 0; i < 200; i++ {
		got := h.Search(base[i*16:(i+1)*16], 10, 64, nil)
		ids := make([]uint64, 0, 10)
		for _, nb := range got {
			if nb.Distance != 0 {
				t.Fatalf("vector %d: copy at distance %v: %v", i, nb.Distance, got)
			}
			ids = append(ids, nb.ID)
		}
		slices.Sort(ids)
		for c, id := range ids {
			if id != uint64(c*200+i) {
				t.Fatalf("vector %d: got ids %v", i, ids)
			}
		}
	}
}

func TestHNSWTombstones(t *testing.T) {
	f := hnswFixture()
	n := 5000
	if hnswRace {
		n = 2000
	}
	vecs := f.vecs[:n*128]
	h, err := BuildHNSW(vecs, 128, &HNSWOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < n; i++ {
		if r.IntN(10) < 3 {
			h.Delete(uint32(i))
		}
	}
	h.Delete(0)
	h.Delete(0)
	live := func(id uint64) bool { return !h.IsDeleted(uint32(id)) }
	var truth [][]Neighbor
	for q := 0; q < 100; q++ {
		truth = append(truth, hnswBrute(vecs, 128, f.queries[q*128:(q+1)*128], 10, L2, live))
	}
	for q := 0; q < 100; q++ {
		for _, nb := range h.Search(f.queries[q*128:(q+1)*128], 10, 64, nil) {
			if h.IsDeleted(uint32(nb.ID)) {
				t.Fatalf("query %d returned tombstoned node %d", q, nb.ID)
			}
		}
	}
	rec := meanRecall(t, h, f.queries, truth, 64, nil)
	t.Logf("%d×128, %d tombstoned: recall@10 at ef=64 = %.3f", n, h.Deleted(), rec)
	if rec < 0.95 {
		t.Errorf("recall with tombstones %.3f, want ≥ 0.95", rec)
	}
	// Tombstones survive a round trip.
	roundTrip(t, h, vecs)
	// Everything deleted: nothing returned.
	for i := 0; i < n; i++ {
		h.Delete(uint32(i))
	}
	if got := h.Search(f.queries[:128], 10, 64, nil); len(got) != 0 {
		t.Fatalf("all deleted, got %v", got)
	}
}

// idSet is a Filter over a bitset.
type idSet []uint64

func newIDSet(n int, keep func(int) bool) (idSet, int) {
	s := make(idSet, (n+63)/64)
	count := 0
	for i := 0; i < n; i++ {
		if keep(i) {
			s[i/64] |= 1 << (i % 64)
			count++
		}
	}
	return s, count
}

func (s idSet) Contains(id uint64) bool { return id/64 < uint64(len(s)) && s[id/64]&(1<<(id%64)) != 0 }

func TestHNSWFiltered(t *testing.T) {
	f := hnswFixture()
	h, err := hnswFixtureGraph()
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []float64{0.5, 0.01, 0.001} {
		r := rand.New(rand.NewPCG(uint64(sel*1e6), 1))
		allow, count := newIDSet(h.Len(), func(int) bool { return r.Float64() < sel })
		var truth [][]Neighbor
		for q := 0; q < 100; q++ {
			truth = append(truth, hnswBrute(f.vecs, 128, f.queries[q*128:(q+1)*128], 10, L2, allow.Contains))
		}
		exact := h.useExact(count, 10, 64)
		for _, mode := range []string{"auto", "graph"} {
			if mode == "graph" {
				h.exactFactor = -1
			}
			rec := 0.0
			for q := 0; q < 100; q++ {
				got := h.Search(f.queries[q*128:(q+1)*128], 10, 64, allow)
				for _, nb := range got {
					if !allow.Contains(nb.ID) {
						t.Fatalf("selectivity %v: returned node %d outside the filter", sel, nb.ID)
					}
				}
				if mode == "auto" && exact && !slices.Equal(got, truth[q]) {
					t.Fatalf("selectivity %v (%d allowed, exact scan): got %v, want %v", sel, count, got, truth[q])
				}
				rec += recallAt(got, truth[q])
			}
			rec /= 100
			h.exactFactor = 0
			t.Logf("selectivity %v (%d of %d allowed), %s (exact rule: %v): recall@10 at ef=64 = %.3f", sel, count, h.Len(), mode, exact, rec)
			if rec < 0.95 {
				t.Errorf("selectivity %v %s: recall %.3f, want ≥ 0.95", sel, mode, rec)
			}
		}
	}
}

// TestHNSWFilteredAllowList checks the AllowList path (exact count, the
// scan walks the list) together with tombstones.
func TestHNSWFilteredAllowList(t *testing.T) {
	vecs, queries := clusteredData(3000, 20, 32, 16, 11)
	h, err := BuildHNSW(vecs, 32, &HNSWOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for i := uint64(0); i < 3000; i += 97 {
		ids = append(ids, i)
	}
	ids = append(ids, 1<<40) // not a node: ignored
	allow := NewAllowList(ids...)
	h.Delete(97)
	in := func(id uint64) bool { return id%97 == 0 && id != 97 }
	for q := 0; q < 20; q++ {
		query := queries[q*32 : (q+1)*32]
		got := h.Search(query, 10, 32, allow)
		if want := hnswBrute(vecs, 32, query, 10, L2, in); !slices.Equal(got, want) {
			t.Fatalf("query %d: got %v, want %v", q, got, want)
		}
	}
}

func roundTrip(t *testing.T, h *HNSW, vecs []float32) {
	t.Helper()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g HNSW
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if g.Len() != h.Len() || g.Dim() != h.Dim() || g.Deleted() != h.Deleted() || g.Metric() != h.Metric() {
		t.Fatalf("round trip changed the header: %d/%d/%d/%v vs %d/%d/%d/%v", g.Len(), g.Dim(), g.Deleted(), g.Metric(), h.Len(), h.Dim(), h.Deleted(), h.Metric())
	}
	b2, _ := g.MarshalBinary()
	if !slices.Equal(b, b2) {
		t.Fatal("re-marshalling changed the bytes")
	}
	if h.Len() == 0 {
		return
	}
	if err := g.SetVectors(vecs); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	q := make([]float32, h.Dim())
	for range 20 {
		i := r.IntN(h.Len())
		for d := range q {
			q[d] = vecs[i*h.Dim()+d] + float32(r.NormFloat64())*0.1
		}
		if a, b := h.Search(q, 10, 32, nil), g.Search(q, 10, 32, nil); !slices.Equal(a, b) {
			t.Fatalf("search after round trip differs: %v vs %v", a, b)
		}
	}
}

func TestHNSWMarshalRoundTrip(t *testing.T) {
	f := hnswFixture()
	h, err := hnswFixtureGraph()
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, h, f.vecs)
	var g HNSW
	if err := g.SetVectors(nil); err != nil {
		t.Fatal(err) // zero graph, zero vectors
	}
	b, _ := h.MarshalBinary()
	_ = g.UnmarshalBinary(b)
	if err := g.SetVectors(f.vecs[:128]); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("SetVectors with the wrong length: %v", err)
	}
	t.Logf("%d×128 graph: %d bytes marshalled (%.1f B/node)", h.Len(), len(b), float64(len(b))/float64(h.Len()))
}

func TestHNSWUnmarshalCorrupt(t *testing.T) {
	vecs, _ := clusteredData(50, 0, 4, 4, 1)
	h, err := BuildHNSW(vecs, 4, &HNSWOptions{M: 4, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.Delete(3)
	good, _ := h.MarshalBinary()
	var g HNSW
	// Every truncation fails.
	for i := 0; i < len(good); i++ {
		if err := g.UnmarshalBinary(good[:i]); !errors.Is(err, lancer.ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v", i, err)
		}
	}
	// Trailing bytes fail.
	if err := g.UnmarshalBinary(append(slices.Clone(good), 0)); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("trailing byte: %v", err)
	}
	// A link to a node out of range fails.
	bad := slices.Clone(good)
	off := hnswHeader + 50 + 2 // first node's first link
	bad[off], bad[off+1], bad[off+2], bad[off+3] = 50, 0, 0, 0
	if err := g.UnmarshalBinary(bad); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("link out of range: %v", err)
	}
	// A newer version is unsupported, not corrupt.
	bad = slices.Clone(good)
	bad[6] = 9
	if err := g.UnmarshalBinary(bad); !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("version 9: %v", err)
	}
}

func FuzzHNSWUnmarshal(f *testing.F) {
	vecs, _ := clusteredData(40, 0, 3, 4, 2)
	h, err := BuildHNSW(vecs, 3, &HNSWOptions{M: 2, Workers: 1})
	if err != nil {
		f.Fatal(err)
	}
	h.Delete(7)
	b, _ := h.MarshalBinary()
	f.Add(b)
	empty, _ := BuildHNSW(nil, 3, nil)
	b, _ = empty.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g HNSW
		if err := g.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrUnsupported", err)
			}
			return
		}
		// A graph that decodes re-encodes to the same bytes and can be
		// searched without panicking.
		again, _ := g.MarshalBinary()
		if !slices.Equal(again, data) {
			t.Fatalf("decode/encode not the identity")
		}
		if g.Len()*g.Dim() > 1<<16 {
			return
		}
		vs := make([]float32, g.Len()*g.Dim())
		for i := range vs {
			vs[i] = float32(i % 7)
		}
		if err := g.SetVectors(vs); err != nil {
			t.Fatal(err)
		}
		if g.Len() > 0 {
			q := make([]float32, g.Dim())
			got := g.Search(q, 3, 8, nil)
			for _, nb := range got {
				if nb.ID >= uint64(g.Len()) || g.IsDeleted(uint32(nb.ID)) {
					t.Fatalf("bad result %v", nb)
				}
			}
		}
	})
}

func TestHNSWConcurrentSearchDelete(t *testing.T) {
	vecs, queries := clusteredData(2000, 20, 16, 16, 4)
	h, err := BuildHNSW(vecs, 16, &HNSWOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if g == 0 {
					h.Delete(uint32(i * 7 % 2000))
					continue
				}
				q := queries[(i%20)*16 : (i%20+1)*16]
				for _, nb := range h.Search(q, 5, 32, nil) {
					_ = nb
				}
			}
		}()
	}
	wg.Wait()
	if h.Deleted() != 200 {
		t.Fatalf("deleted %d, want 200", h.Deleted())
	}
}

// BuildHNSW keeps each link's distance as measured from the other end
// (builder.d0/dU), which relies on every metric's kernel being symmetric
// bit for bit.
func TestHNSWDistanceSymmetric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range []Metric{L2, Cosine, Dot} {
		f := m.Func()
		for _, dim := range []int{1, 3, 7, 8, 9, 16, 31, 33, 128, 131} {
			for range 50 {
				a, b := make([]float32, dim), make([]float32, dim)
				for i := range a {
					a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
				}
				if x, y := f(a, b), f(b, a); math.Float32bits(x) != math.Float32bits(y) {
					t.Fatalf("%v dim %d: d(a,b) = %v, d(b,a) = %v", m, dim, x, y)
				}
			}
		}
	}
}

// TestHNSWRelinkOrphans: a node that no list names, as a delayed insert of
// a parallel build leaves it (its one link the entry point, every list that
// named it since shrunk), is unreachable; relinkOrphans makes it
// reachable again and leaves a well-formed graph.
func TestHNSWRelinkOrphans(t *testing.T) {
	vecs, _ := clusteredData(2000, 0, 16, 8, 3)
	h, err := BuildHNSW(vecs, 16, &HNSWOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{h: h, d0: make([]float32, len(h.layer0)), dU: make([]float32, len(h.upper))}
	const orphan = 1
	for id := range h.n {
		for l := 0; l <= int(h.levels[id]); l++ {
			blk, ds := h.links(uint32(id), l), b.linkDists(uint32(id), l)
			kept := 0
			for _, x := range blk[1 : 1+blk[0]] {
				if x == orphan {
					continue
				}
				blk[1+kept], ds[1+kept] = x, h.dist(h.vec(uint32(id)), h.vec(x))
				kept++
			}
			blk[0] = uint32(kept)
		}
	}
	if h.entry == orphan {
		t.Fatal("the orphan is the entry point")
	}
	for l := 0; l <= int(h.levels[orphan]); l++ {
		blk := h.links(orphan, l)
		blk[0], blk[1] = 1, h.entry
		if int(h.levels[h.entry]) < l {
			blk[0] = 0
		}
	}
	q := h.vec(orphan)
	if got := h.Search(q, 1, 64, nil); len(got) == 1 && got[0].ID == orphan {
		t.Fatal("the orphan is reachable before relinking: the test shows nothing")
	}
	b.relinkOrphans(&buildWorker{s: newSearcher(h.n)})
	checkGraph(t, h)
	if got := h.Search(q, 1, 64, nil); len(got) != 1 || got[0].ID != orphan || got[0].Distance != 0 {
		t.Fatalf("after relinking, the orphan's own vector finds %v", got)
	}
}
