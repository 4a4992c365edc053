package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

const (
	defaultHNSWM              = 16
	defaultHNSWEfConstruction = 150
	// keepPrunedConnections fills a node's list up to its capacity with the
	// nearest candidates the heuristic rejected (Algorithm 4's
	// keepPrunedConnections): fuller lists keep clustered data connected.
	keepPrunedConnections = true
)

func (o HNSWOptions) withDefaults() HNSWOptions {
	if o.M == 0 {
		o.M = defaultHNSWM
	}
	if o.EfConstruction == 0 {
		o.EfConstruction = defaultHNSWEfConstruction
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o
}

// Validate reports options BuildHNSW would reject (after defaults).
func (o HNSWOptions) Validate() error {
	o = o.withDefaults()
	switch {
	case o.M < 2 || o.M > maxHNSWM:
		return fmt.Errorf("vector: HNSW M = %d, want 2..%d: %w", o.M, maxHNSWM, lancer.ErrInvalidArgument)
	case o.EfConstruction < 1 || o.EfConstruction > 1<<20:
		return fmt.Errorf("vector: HNSW EfConstruction = %d: %w", o.EfConstruction, lancer.ErrInvalidArgument)
	case o.Metric > Dot:
		return fmt.Errorf("vector: HNSW metric %v: %w", o.Metric, lancer.ErrInvalidArgument)
	case o.Workers < 1:
		return fmt.Errorf("vector: HNSW Workers = %d: %w", o.Workers, lancer.ErrInvalidArgument)
	}
	return nil
}

// BuildHNSW builds an HNSW graph over vectors, which holds n = len/dim
// vectors of dim floats one after another; node i is vectors[i*dim:][:dim].
// The graph keeps vectors (it does not copy them): the caller must not
// change them while the HNSW is in use. opts may be nil for the defaults.
//
// Nodes get levels from a generator seeded with opts.Seed (mL = 1/ln M);
// node 0 is inserted first, then Workers goroutines insert the rest, each
// with a best-first search of width EfConstruction per layer and the
// neighbour-selection heuristic (the paper's Algorithm 4). Node lists are
// guarded by striped mutexes.
func BuildHNSW(vectors []float32, dim int, opts *HNSWOptions) (*HNSW, error) {
	var o HNSWOptions
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if dim < 1 || len(vectors)%dim != 0 {
		return nil, fmt.Errorf("vector: HNSW of %d floats with dimension %d: %w", len(vectors), dim, lancer.ErrInvalidArgument)
	}
	n := len(vectors) / dim
	if uint64(n) >= math.MaxUint32 {
		return nil, fmt.Errorf("vector: HNSW of %d vectors, at most %d: %w", n, uint32(math.MaxUint32-1), lancer.ErrInvalidArgument)
	}
	h := &HNSW{dim: dim, n: n, metric: o.Metric, dist: o.Metric.Func(), m: o.M, m0: 2 * o.M, efc: o.EfConstruction, vectors: vectors}

	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	mL := 1 / math.Log(float64(o.M))
	levels := make([]uint8, n)
	for i := range levels {
		l := int(-math.Log(1-rng.Float64()) * mL)
		levels[i] = uint8(min(l, maxHNSWLevel))
	}
	h.alloc(levels)
	if n == 0 {
		return h, nil
	}
	h.entry, h.maxLevel = 0, int(levels[0])

	b := &builder{h: h, d0: make([]float32, len(h.layer0)), dU: make([]float32, len(h.upper))}
	workers := min(o.Workers, n-1)
	if workers > 1 {
		// A single worker has the graph to itself: no node locks.
		b.locks = make(graphLocks, lockStripes)
	}
	var next atomic.Int64
	next.Store(1)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &buildWorker{s: newSearcher(n)}
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				b.insert(w, uint32(i))
			}
		}()
	}
	wg.Wait()
	b.relinkOrphans(&buildWorker{s: newSearcher(n)})
	return h, nil
}

// relinkOrphans inserts again, into the finished graph, every node that no
// layer-0 list names, so that searches can reach it. In a parallel build a
// node whose insert is delayed (its goroutine descheduled between its
// search and its links) chooses its neighbours in the graph as it was
// when its search ran (for node 1, only the entry point), and no node
// inserted meanwhile can see it; once the few lists that name it shrink
// it out, it is unreachable (TestHNSWDuplicates lost one of ten equal
// vectors this way, under CPU load). A serial build can orphan a node too,
// when every list naming it prunes it. Finding them reads every layer-0
// list once; they are rare (none in 20,000 fixture vectors), so inserting
// them again costs nothing measurable. A node every list still prunes
// after that stays as it is.
func (b *builder) relinkOrphans(w *buildWorker) {
	h := b.h
	named := make([]bool, h.n)
	for id := range h.n {
		for _, x := range h.neighbors(uint32(id), 0) {
			named[x] = true
		}
	}
	for id, ok := range named {
		if !ok && uint32(id) != h.entry {
			b.insert(w, uint32(id))
		}
	}
}

// builder is the state of one build: the node locks (nil with one worker)
// and the lock of the entry point.
type builder struct {
	h     *HNSW
	locks graphLocks
	epMu  sync.Mutex
	// d0 and dU mirror h.layer0 and h.upper: the slot of each link holds
	// its distance to the list's owner, so shrinking a full list (connect)
	// does not recompute them. The kernels are symmetric bit for bit
	// (d(a,b) == d(b,a)), so a distance measured from either end serves.
	d0, dU []float32
}

// linkDists is the distance block parallel to h.links(id, l).
func (b *builder) linkDists(id uint32, l int) []float32 {
	h := b.h
	if l == 0 {
		o := int(id) * (h.m0 + 1)
		return b.d0[o : o+h.m0+1 : o+h.m0+1]
	}
	o := int(h.upperOff[id]) + (l-1)*(h.m+1)
	return b.dU[o : o+h.m+1 : o+h.m+1]
}

// buildWorker is one inserting goroutine's scratch.
type buildWorker struct {
	s      *searcher
	eps    []cand
	sel    []cand
	pruned []cand
	conn   []cand
	layers [][]cand // per layer, top first: the selected neighbours
	sink   uint32   // see HNSW.touch
}

// insert is the paper's Algorithm 1 for node q.
func (b *builder) insert(w *buildWorker, q uint32) {
	h := b.h
	lvl := int(h.levels[q])
	b.epMu.Lock()
	ep, maxL := h.entry, h.maxLevel
	if lvl > maxL {
		// A new top level: hold the entry lock for the whole insert so no
		// other insert starts from a half-linked entry point (rare: about
		// log_M n times per build).
		defer func() {
			h.entry, h.maxLevel = q, lvl
			b.epMu.Unlock()
		}()
	} else {
		b.epMu.Unlock()
	}
	qv := h.vec(q)
	cur := cand{h.dist(qv, h.vec(ep)), ep}
	for l := maxL; l > lvl; l-- {
		cur = h.greedy(w.s, qv, cur, l, b.locks)
	}
	w.eps = append(w.eps[:0], cur)
	// Search top-down, keeping each layer's selection; then link bottom-up,
	// so that when q becomes reachable on some layer (through a reverse
	// link) its lists on every layer below are already in place.
	top := min(lvl, maxL)
	w.layers = w.layers[:0]
	for l := top; l >= 0; l-- {
		h.searchLayer(w.s, qv, w.eps, h.efc, l, b.locks, nil)
		w.eps = w.s.results.popSorted(w.eps[:0])
		w.eps = slices.DeleteFunc(w.eps, func(c cand) bool { return c.id == q })
		sel := w.selectNeighbors(h, w.eps, h.m)
		if k := len(w.layers); k < cap(w.layers) {
			// Reuse the slice this layer slot had on an earlier insert.
			w.layers = w.layers[:k+1]
			w.layers[k] = append(w.layers[k][:0], sel...)
		} else {
			w.layers = append(w.layers, append([]cand(nil), sel...))
		}
		if len(w.eps) == 0 {
			w.eps = append(w.eps, cur)
		}
	}
	b.locks.lock(q)
	for i, sel := range w.layers {
		blk, ds := h.links(q, top-i), b.linkDists(q, top-i)
		blk[0] = uint32(len(sel))
		for j, c := range sel {
			blk[1+j], ds[1+j] = c.id, c.d
		}
	}
	b.locks.unlock(q)
	for i := len(w.layers) - 1; i >= 0; i-- {
		l := top - i
		capacity := h.m
		if l == 0 {
			capacity = h.m0
		}
		for _, c := range w.layers[i] {
			b.connect(w, c.id, cand{c.d, q}, l, capacity)
		}
	}
}

// connect adds the link nb → q (q at distance c.d from nb) on layer l,
// shrinking nb's list with the heuristic when it is full.
func (b *builder) connect(w *buildWorker, nb uint32, c cand, l, capacity int) {
	h := b.h
	b.locks.lock(nb)
	defer b.locks.unlock(nb)
	blk, ds := h.links(nb, l), b.linkDists(nb, l)
	cnt := int(blk[0])
	for _, x := range blk[1 : 1+cnt] {
		if x == c.id {
			return
		}
	}
	if cnt < capacity {
		blk[1+cnt], ds[1+cnt] = c.id, c.d
		blk[0]++
		return
	}
	// The heuristic below reads every neighbour's vector: start the loads.
	w.sink = h.touch(blk[1 : 1+cnt])
	cs := w.conn[:0]
	for j, x := range blk[1 : 1+cnt] {
		cs = append(cs, cand{ds[1+j], x})
	}
	cs = append(cs, c)
	slices.SortFunc(cs, candCmp)
	sel := w.selectNeighbors(h, cs, capacity)
	blk[0] = uint32(len(sel))
	for i, s := range sel {
		blk[1+i], ds[1+i] = s.id, s.d
	}
	w.conn = cs
}

// selectNeighbors is the paper's Algorithm 4 over cs (sorted nearest
// first): a candidate is kept when it is nearer to the base node than to
// every neighbour kept so far, so links spread in different directions
// instead of piling into the nearest cluster. With keepPrunedConnections the
// rejected candidates then fill the remaining slots, nearest first. The
// result aliases w.sel.
func (w *buildWorker) selectNeighbors(h *HNSW, cs []cand, m int) []cand {
	sel := w.sel[:0]
	pruned := w.pruned[:0]
	if len(cs) <= m && keepPrunedConnections {
		// Everything fits: the heuristic would only reorder.
		return append(sel, cs...)
	}
	for _, c := range cs {
		if len(sel) >= m {
			break
		}
		cv := h.vec(c.id)
		good := true
		for _, r := range sel {
			if h.dist(cv, h.vec(r.id)) < c.d {
				good = false
				break
			}
		}
		if good {
			sel = append(sel, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	if keepPrunedConnections {
		for _, c := range pruned {
			if len(sel) >= m {
				break
			}
			sel = append(sel, c)
		}
	}
	w.sel, w.pruned = sel, pruned
	return sel
}
