package vector

import (
	"math"
	"math/rand/v2"
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
