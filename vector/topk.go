package vector

import "math"

// TopK keeps the k nearest neighbors seen so far: a bounded max-heap on
// (Distance, ID), so the root is the worst kept neighbor and a candidate
// replaces it only if it is nearer, or as near with a smaller ID. Ties are
// broken by ID, so the result does not depend on the order candidates
// arrive in: the parallel and sequential searches agree exactly.
//
// K is only a bound: the heap grows as candidates are kept, so a TopK holds
// memory for the neighbors it keeps, at most K, and a huge K (a caller's
// "every row") costs what the search finds, not K slots.
//
// The zero TopK keeps nothing; use NewTopK or Reset. A TopK is not safe for
// concurrent use.
type TopK struct {
	k int
	h []Neighbor
}

// NewTopK returns a TopK that keeps the k nearest neighbors.
func NewTopK(k int) *TopK {
	t := &TopK{}
	t.Reset(k)
	return t
}

// topKInitialCap is the most slots Reset allocates up front: enough for the
// usual k (10 to a few hundred) to never grow, small enough that a k the
// caller does not control costs nothing until neighbors arrive.
const topKInitialCap = 256

// Reset empties t and sets its bound to k, reusing its memory. It
// allocates at most topKInitialCap slots; Push grows the heap beyond.
func (t *TopK) Reset(k int) {
	t.k = max(k, 0)
	if want := min(t.k, topKInitialCap); cap(t.h) < want {
		t.h = make([]Neighbor, 0, want)
	}
	t.h = t.h[:0]
}

// K returns the bound.
func (t *TopK) K() int { return t.k }

// Len returns how many neighbors t holds, at most K.
func (t *TopK) Len() int { return len(t.h) }

// Full reports whether t holds K neighbors, so that Push rejects any
// candidate farther than Worst.
func (t *TopK) Full() bool { return len(t.h) >= t.k }

// Worst returns the largest kept distance; +Inf until t is full, so a
// search may skip any candidate with a distance above it.
func (t *TopK) Worst() float32 {
	if len(t.h) < t.k || t.k == 0 {
		return inf32
	}
	return t.h[0].Distance
}

var inf32 = float32(math.Inf(1))

// worse reports whether a ranks after b: farther, or as far with a larger ID.
func worse(a, b Neighbor) bool {
	return a.Distance > b.Distance || (a.Distance == b.Distance && a.ID > b.ID)
}

// Push offers a candidate and reports whether t kept it. NaN distances are
// never kept.
func (t *TopK) Push(id uint64, d float32) bool {
	if d != d {
		return false
	}
	n := Neighbor{ID: id, Distance: d}
	if len(t.h) < t.k {
		t.h = append(t.h, n)
		t.up(len(t.h) - 1)
		return true
	}
	if t.k == 0 || !worse(t.h[0], n) {
		return false
	}
	t.h[0] = n
	t.down(0, len(t.h))
	return true
}

func (t *TopK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *TopK) down(i, n int) {
	h := t.h
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			c = r
		}
		if !worse(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// Merge pushes every neighbor of u into t.
func (t *TopK) Merge(u *TopK) {
	for _, n := range u.h {
		t.Push(n.ID, n.Distance)
	}
}

// Sorted returns the kept neighbors nearest first (ties by smaller ID) and
// empties t. It sorts in place and hands t's memory to the caller; the next
// Reset allocates anew.
func (t *TopK) Sorted() []Neighbor {
	h := t.h
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		t.down(0, end)
	}
	t.h = nil
	return h
}
