package vector

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// cand is a node and its distance to the current query.
type cand struct {
	d  float32
	id uint32
}

func candLess(a, b cand) bool { return a.d < b.d || (a.d == b.d && a.id < b.id) }

func candCmp(a, b cand) int {
	if candLess(a, b) {
		return -1
	}
	if candLess(b, a) {
		return 1
	}
	return 0
}

// minHeap pops the nearest candidate first.
type minHeap []cand

func (h *minHeap) push(c cand) {
	s := append(*h, c)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !candLess(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

func (h *minHeap) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && candLess(s[r], s[l]) {
			l = r
		}
		if !candLess(s[l], s[i]) {
			break
		}
		s[i], s[l] = s[l], s[i]
		i = l
	}
	*h = s
	return top
}

// maxHeap keeps the farthest candidate on top (the result set). It mirrors
// minHeap rather than sharing a generic heap with an order parameter: the
// search loop spends its time here, and a generic method call through a
// shape dictionary is an indirect call per comparison.
type maxHeap []cand

func (h *maxHeap) push(c cand) {
	s := append(*h, c)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !candLess(s[p], s[i]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

func (h *maxHeap) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && candLess(s[l], s[r]) {
			l = r
		}
		if !candLess(s[i], s[l]) {
			break
		}
		s[i], s[l] = s[l], s[i]
		i = l
	}
	*h = s
	return top
}

func (h maxHeap) top() cand { return h[0] }

// popSorted empties h into dst, nearest first.
func (h *maxHeap) popSorted(dst []cand) []cand {
	n := len(*h)
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := n - 1; i >= 0; i-- {
		dst[start+i] = h.pop()
	}
	return dst
}

// searcher is the per-goroutine scratch of a search: a visited set as an
// epoch array (a node is visited when visited[id] == epoch, so clearing is
// one increment), the two heaps and a neighbour buffer.
type searcher struct {
	visited []uint32
	epoch   uint32
	cands   minHeap
	results maxHeap
	buf     []uint32
	dists   []float32
	sink    uint32 // see HNSW.touch
	sorted  []cand
}

func newSearcher(n int) *searcher { return &searcher{visited: make([]uint32, n)} }

// reset starts a new visited set.
func (s *searcher) reset() {
	s.epoch++
	if s.epoch == 0 {
		clear(s.visited)
		s.epoch = 1
	}
	s.cands = s.cands[:0]
	s.results = s.results[:0]
}

func (s *searcher) visit(id uint32) bool {
	if s.visited[id] == s.epoch {
		return false
	}
	s.visited[id] = s.epoch
	return true
}

func (h *HNSW) getSearcher() *searcher {
	if s, ok := h.pool.Get().(*searcher); ok && len(s.visited) == h.n {
		return s
	}
	return newSearcher(h.n)
}

// graphLocks are the striped node locks of a build in progress; nil when
// the graph is immutable.
type graphLocks []sync.Mutex

const lockStripes = 1 << 12

func (g graphLocks) of(id uint32) *sync.Mutex { return &g[id%lockStripes] }

// lock locks node id's stripe; a no-op on nil locks.
func (g graphLocks) lock(id uint32) {
	if g != nil {
		g.of(id).Lock()
	}
}

// unlock unlocks node id's stripe; a no-op on nil locks.
func (g graphLocks) unlock(id uint32) {
	if g != nil {
		g.of(id).Unlock()
	}
}

// copyNeighbors appends node id's neighbours on layer l to dst, under its
// lock when a build is running.
func (h *HNSW) copyNeighbors(dst []uint32, id uint32, l int, locks graphLocks) []uint32 {
	if locks == nil {
		return append(dst, h.neighbors(id, l)...)
	}
	mu := locks.of(id)
	mu.Lock()
	dst = append(dst, h.neighbors(id, l)...)
	mu.Unlock()
	return dst
}

// greedy walks layer l from ep to a local minimum of the distance to q
// (the ef = 1 search of the upper layers).
func (h *HNSW) greedy(s *searcher, q []float32, ep cand, l int, locks graphLocks) cand {
	for changed := true; changed; {
		changed = false
		s.buf = h.copyNeighbors(s.buf[:0], ep.id, l, locks)
		for _, nb := range s.buf {
			if d := h.dist(q, h.vec(nb)); d < ep.d || (d == ep.d && nb < ep.id) {
				ep, changed = cand{d, nb}, true
			}
		}
	}
	return ep
}

// searchLayer is Algorithm 2 of the paper: a best-first beam search of
// width ef over layer l from the entry points eps. It leaves in s.results
// the (at most) ef nearest nodes found for which accept is true (all when
// accept is nil), and walks through the others. The search stops when the
// nearest unexpanded candidate is farther than the farthest of ef results.
func (h *HNSW) searchLayer(s *searcher, q []float32, eps []cand, ef, l int, locks graphLocks, accept func(uint32) bool) {
	s.reset()
	for _, ep := range eps {
		s.visit(ep.id)
		s.cands.push(ep)
		if accept == nil || accept(ep.id) {
			s.results.push(ep)
			if len(s.results) > ef {
				s.results.pop()
			}
		}
	}
	for len(s.cands) > 0 {
		c := s.cands.pop()
		if len(s.results) >= ef && c.d > s.results.top().d {
			break
		}
		// Score the unvisited neighbours in one tight loop before touching
		// the heaps: every unvisited neighbour is scored either way, and
		// the independent distance calls overlap their memory loads.
		s.buf = h.copyNeighbors(s.buf[:0], c.id, l, locks)
		fresh := s.buf[:0]
		for _, nb := range s.buf {
			if s.visit(nb) {
				fresh = append(fresh, nb)
			}
		}
		if len(fresh) > 1 {
			s.sink = h.touch(fresh)
		}
		ds := grow(s.dists, len(fresh))
		s.dists = ds
		for i, nb := range fresh {
			ds[i] = h.dist(q, h.vec(nb))
		}
		for i, nb := range fresh {
			d := ds[i]
			if len(s.results) < ef || d < s.results.top().d {
				s.cands.push(cand{d, nb})
				if accept == nil || accept(nb) {
					s.results.push(cand{d, nb})
					if len(s.results) > ef {
						s.results.pop()
					}
				}
			}
		}
	}
}

// defaultExactFactor is the constant c of the exact-search rule in Search.
const defaultExactFactor = 16

// Search returns the k nearest live nodes to query that allow admits (nil
// admits all; it is asked about node ids, not row ids), nearest first, with
// their distances. ef is the beam width of
// the layer-0 search; it is raised to k when smaller. Larger ef gives better
// recall and slower queries.
//
// Tombstoned nodes and nodes allow rejects are never returned, but the
// search walks through them (hnswlib-style filtering: only eligible nodes
// enter the result set, every node can be a stepping stone). When few nodes
// are eligible such a walk visits most of the graph for a handful of hits,
// so Search switches to an exact scan (FlatSearch over the eligible nodes).
// The rule: with A the number of eligible nodes (exact when allow is nil or
// an *AllowList, otherwise estimated from 256 evenly spaced sample nodes),
// scan exactly when A < k or A*A ≤ 16*ef*n. A filtered walk computes about
// c*ef*n/A distances, the scan A distances plus n filter calls; the rule
// puts the switch near their crossover: A ≤ 7 % of n at n = 200k, ef = 64,
// A ≤ 23 % at n = 20k. A walk that still finds fewer than k nodes (the
// estimate was too high, or the filter misses the walk's region) is redone
// as a scan. So results are exact for selective filters (0.1 %, 1 %) and
// approximate, like an unfiltered search, for broad ones.
//
// It panics if len(query) != Dim(). Search is safe for concurrent use.
func (h *HNSW) Search(query []float32, k, ef int, allow Filter) []Neighbor {
	if len(query) != h.dim {
		panic(fmt.Sprintf("vector: HNSW.Search with a %d-dim query on a %d-dim graph", len(query), h.dim))
	}
	if k <= 0 || h.n == 0 {
		return nil
	}
	if h.vectors == nil {
		panic("vector: HNSW.Search before SetVectors")
	}
	ef = max(ef, k)
	nd := int(h.ndeleted.Load())
	var accept func(uint32) bool
	switch {
	case allow != nil:
		accept = func(id uint32) bool { return !h.isDeletedFast(id) && allow.Contains(uint64(id)) }
	case nd > 0:
		accept = func(id uint32) bool { return !h.isDeletedFast(id) }
	}
	if accept != nil {
		est := h.n - nd
		if allow != nil {
			est = h.estimate(allow, accept)
		}
		if h.useExact(est, k, ef) {
			return h.exact(query, k, allow)
		}
	}
	s := h.getSearcher()
	defer h.pool.Put(s)
	ep := cand{h.dist(query, h.vec(h.entry)), h.entry}
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(s, query, ep, l, nil)
	}
	h.searchLayer(s, query, []cand{ep}, ef, 0, nil, accept)
	if accept != nil && len(s.results) < k && h.exactFactor >= 0 {
		return h.exact(query, k, allow)
	}
	for len(s.results) > k {
		s.results.pop()
	}
	s.sorted = s.results.popSorted(s.sorted[:0])
	out := make([]Neighbor, len(s.sorted))
	for i, c := range s.sorted {
		out[i] = Neighbor{ID: uint64(c.id), Distance: c.d}
	}
	return out
}

func (h *HNSW) useExact(est, k, ef int) bool {
	c := h.exactFactor
	if c < 0 {
		return false
	}
	if c == 0 {
		c = defaultExactFactor
	}
	return est < k || float64(est)*float64(est) <= c*float64(ef)*float64(h.n)
}

// estimate estimates how many nodes accept admits: exactly for an
// AllowList (scaled by the live fraction), otherwise from up to 256 evenly
// spaced nodes.
func (h *HNSW) estimate(allow Filter, accept func(uint32) bool) int {
	if al, ok := allow.(*AllowList); ok {
		live := float64(h.n-int(h.ndeleted.Load())) / float64(h.n)
		return int(float64(min(al.Len(), uint64(h.n))) * live)
	}
	samples := min(h.n, 256)
	hits := 0
	for i := 0; i < samples; i++ {
		if accept(uint32(i * h.n / samples)) {
			hits++
		}
	}
	return int(math.Round(float64(hits) * float64(h.n) / float64(samples)))
}

// exact is FlatSearch over the live nodes that allow admits.
func (h *HNSW) exact(q []float32, k int, allow Filter) []Neighbor {
	f := allow
	if h.ndeleted.Load() > 0 {
		f = FilterFunc(func(id uint64) bool {
			return !h.isDeletedFast(uint32(id)) && (allow == nil || allow.Contains(id))
		})
	}
	return FlatSearch(h.vectors, h.dim, q, k, h.metric, f)
}

// isDeletedFast is IsDeleted without the bounds check (id < n).
func (h *HNSW) isDeletedFast(id uint32) bool {
	return atomic.LoadUint64(&h.deleted[id/64])&(1<<(id%64)) != 0
}

// touch loads one word from every cache line of the vectors of ids, so
// that the misses are in flight together before the distance loop needs
// them (Go has no prefetch instruction; independent loads serve). Callers
// keep the result in a sink field so the loads are not dropped. It works on
// the bits, not the floats: no FP latency chain, no subnormal slow paths.
func (h *HNSW) touch(ids []uint32) uint32 {
	var acc uint32
	dim := h.dim
	for _, id := range ids {
		v := h.vec(id)
		for j := 0; j < dim; j += 16 {
			acc ^= math.Float32bits(v[j])
		}
	}
	return acc
}
