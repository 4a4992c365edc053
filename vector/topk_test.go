package vector

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// sortedNeighbors is the reference: sort everything, keep k.
func sortedNeighbors(ns []Neighbor, k int) []Neighbor {
	ns = slices.Clone(ns)
	slices.SortFunc(ns, func(a, b Neighbor) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	if k < len(ns) {
		ns = ns[:k]
	}
	return ns
}

func TestTopK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{0, 1, 2, 5, 10, 100, 1000} {
		for _, n := range []int{0, 1, 7, 50, 500} {
			ns := make([]Neighbor, n)
			for i := range ns {
				// Few distinct distances, so ties are common.
				ns[i] = Neighbor{ID: uint64(r.IntN(1000)), Distance: float32(r.IntN(8))}
			}
			want := sortedNeighbors(ns, k)
			for _, order := range []string{"forward", "shuffled"} {
				in := slices.Clone(ns)
				if order == "shuffled" {
					r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
				}
				tk := NewTopK(k)
				for _, x := range in {
					tk.Push(x.ID, x.Distance)
				}
				if tk.Len() != len(want) || tk.Full() != (len(want) == k) {
					t.Fatalf("k %d n %d: Len %d Full %v", k, n, tk.Len(), tk.Full())
				}
				if got := tk.Sorted(); !slices.Equal(got, want) {
					t.Fatalf("k %d n %d %s:\n got %v\nwant %v", k, n, order, got, want)
				}
			}
		}
	}
}

func TestTopKWorstAndNaN(t *testing.T) {
	tk := NewTopK(2)
	if !math.IsInf(float64(tk.Worst()), 1) {
		t.Fatal("Worst of empty TopK is not +Inf")
	}
	nan := float32(math.NaN())
	if tk.Push(1, nan) {
		t.Fatal("NaN kept")
	}
	tk.Push(1, 3)
	tk.Push(2, 1)
	if tk.Worst() != 3 {
		t.Fatalf("Worst %v", tk.Worst())
	}
	if tk.Push(3, 3) { // ties the worst but with a larger ID
		t.Fatal("tie with larger ID kept")
	}
	if !tk.Push(0, 3) {
		t.Fatal("tie with smaller ID rejected")
	}
	if got := tk.Sorted(); !slices.Equal(got, []Neighbor{{2, 1}, {0, 3}}) {
		t.Fatalf("got %v", got)
	}
	tk.Reset(1)
	tk.Push(9, 9)
	u := NewTopK(3)
	u.Push(4, 4)
	u.Push(5, 5)
	tk.Merge(u)
	if got := tk.Sorted(); !slices.Equal(got, []Neighbor{{4, 4}}) {
		t.Fatalf("merged %v", got)
	}
}

func BenchmarkTopKPush(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	ds := make([]float32, 1<<16)
	for i := range ds {
		ds[i] = r.Float32()
	}
	tk := NewTopK(10)
	for b.Loop() {
		tk.Reset(10)
		for i, d := range ds {
			tk.Push(uint64(i), d)
		}
	}
}

// allocatedBy returns the bytes f allocates on the heap.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTopKHugeK checks that a k the caller does not control (a request's
// 2^31-1) costs the neighbors kept, not k slots, and still means "every
// row, sorted".
func TestTopKHugeK(t *testing.T) {
	// A k of 2^20 would take 16 MiB up front; it must take a few KiB.
	// Checked first, so that code that allocates by k fails here rather
	// than asking for 32 GiB below.
	var tk *TopK
	if b := allocatedBy(func() { tk = NewTopK(1 << 20) }); b > 16<<10 {
		t.Fatalf("NewTopK(1<<20) allocated %d bytes", b)
	}
	if b := allocatedBy(func() { tk.Reset(math.MaxInt32) }); b > 16<<10 {
		t.Fatalf("Reset(MaxInt32) allocated %d bytes", b)
	}
	r := rand.New(rand.NewPCG(3, 4))
	ns := make([]Neighbor, 1000)
	for i := range ns {
		ns[i] = Neighbor{ID: uint64(i), Distance: float32(r.IntN(50))}
	}
	for _, k := range []int{math.MaxInt32, math.MaxInt} {
		tk := NewTopK(k)
		for _, n := range ns {
			tk.Push(n.ID, n.Distance)
		}
		if tk.Full() || tk.Worst() != inf32 {
			t.Fatalf("k %d: Full %v Worst %v with %d of k held", k, tk.Full(), tk.Worst(), tk.Len())
		}
		if got, want := tk.Sorted(), sortedNeighbors(ns, k); !slices.Equal(got, want) {
			t.Fatalf("k %d: got %d neighbors, want all %d sorted", k, len(got), len(want))
		}
	}
	vecs := make([]float32, 2*len(ns))
	for i := range vecs {
		vecs[i] = r.Float32()
	}
	q := []float32{0.5, 0.5}
	exact := FlatSearch(vecs, 2, q, len(ns), L2, nil)
	if got := FlatSearch(vecs, 2, q, math.MaxInt32, L2, nil); !slices.Equal(got, exact) {
		t.Fatalf("FlatSearch with k MaxInt32: %d neighbors, want all %d", len(got), len(exact))
	}
	if got := FlatSearchParallel(vecs, 2, q, math.MaxInt32, L2, nil, 4); !slices.Equal(got, exact) {
		t.Fatalf("FlatSearchParallel with k MaxInt32: %d neighbors, want all %d", len(got), len(exact))
	}
	if got := Rerank(vecs, 2, q, exact, math.MaxInt32, L2); !slices.Equal(got, exact) {
		t.Fatalf("Rerank with k MaxInt32: %d neighbors, want all %d", len(got), len(exact))
	}
	ids := make([]uint64, len(ns))
	for i := range ids {
		ids[i] = uint64(i)
	}
	huge := &IVFSearchOptions{NProbes: math.MaxInt32, Ef: math.MaxInt32}
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		x, err := BuildIVF(vecs, 2, ids, &IVFOptions{Partitions: 8, Sub: sub, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		// Every partition probed, every row found: the exact answer.
		if got := searchIVF(x, q, math.MaxInt32, huge, nil); !slices.Equal(got, exact) {
			t.Fatalf("IVF sub %v with k, nprobes, ef MaxInt32: %d neighbors, want all %d", sub, len(got), len(exact))
		}
		if got := searchIVF(x, q, math.MaxInt32, huge, FilterFunc(func(uint64) bool { return true })); len(got) != len(exact) {
			t.Fatalf("IVF sub %v filtered with k MaxInt32: %d neighbors, want %d", sub, len(got), len(exact))
		}
	}
	h, err := BuildHNSW(vecs, 2, &HNSWOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Search(q, math.MaxInt32, math.MaxInt32, nil); len(got) != len(exact) {
		t.Fatalf("HNSW with k, ef MaxInt32: %d neighbors, want %d", len(got), len(exact))
	}
}
