package vecindex

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// oracleHeap is container/heap's view of nodes, ordered by less: the
// order the typed heaps' push and pop must reproduce exactly, ties
// included (which node of equal distance comes out first decides which
// rows an HNSW search returns, and those must be Lance's).
type oracleHeap struct {
	nodes []node
	less  func(a, b float32) bool
}

func (h *oracleHeap) Len() int           { return len(h.nodes) }
func (h *oracleHeap) Less(i, j int) bool { return h.less(h.nodes[i].dist, h.nodes[j].dist) }
func (h *oracleHeap) Swap(i, j int)      { h.nodes[i], h.nodes[j] = h.nodes[j], h.nodes[i] }
func (h *oracleHeap) Push(x any)         { h.nodes = append(h.nodes, x.(node)) }
func (h *oracleHeap) Pop() any {
	x := h.nodes[len(h.nodes)-1]
	h.nodes = h.nodes[:len(h.nodes)-1]
	return x
}

// TestTypedHeapsMatchContainerHeap drives the typed heaps and
// container/heap with the same random pushes and pops, over few distinct
// distances so that ties abound, and checks that every pop and the heap
// itself stay identical.
func TestTypedHeapsMatchContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var mx maxHeap
		var mn minHeap
		omx := &oracleHeap{less: func(a, b float32) bool { return a > b }}
		omn := &oracleHeap{less: func(a, b float32) bool { return a < b }}
		for step := range 300 {
			if len(mx) > 0 && rng.IntN(3) == 0 {
				got, want := mx.pop(), heap.Pop(omx).(node)
				if got != want {
					t.Fatalf("round %d step %d: max pop %v, container/heap %v", round, step, got, want)
				}
				got, want = mn.pop(), heap.Pop(omn).(node)
				if got != want {
					t.Fatalf("round %d step %d: min pop %v, container/heap %v", round, step, got, want)
				}
				continue
			}
			x := node{id: uint32(step), dist: float32(rng.IntN(8))}
			mx.push(x)
			heap.Push(omx, x)
			mn.push(x)
			heap.Push(omn, x)
		}
		for i := range mx {
			if mx[i] != omx.nodes[i] || mn[i] != omn.nodes[i] {
				t.Fatalf("round %d: heaps differ at %d", round, i)
			}
		}
	}
}
