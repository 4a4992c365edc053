package vecindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/vector"
)

// SearchOptions configures Search. The zero value means the defaults.
type SearchOptions struct {
	// NProbes is the number of partitions searched, nearest centroids
	// first. Default (0): every partition.
	NProbes int
	// Ef is the HNSW beam width per probed partition; it must be at least
	// k. Default k + k/2. The beam searched is Ef × the partitions probed,
	// as Lance 12 (doc.go, S4).
	Ef int
	// Allow, when not nil, keeps only the rows whose row id it contains
	// (Lance's prefilter, deletions included). It must be safe for
	// concurrent Contains calls (vector's filters are).
	Allow vector.Filter
	// Workers is how many probed partitions are searched at once.
	// Default (0): GOMAXPROCS. The answer does not depend on it: each
	// partition's rows are merged in rank order, as one by one.
	Workers int
}

// partition is one partition's storage (and graph) in memory.
type partition struct {
	rowIDs []uint64
	codes  []uint8   // PQ: transposed, [bytes a row][rows]; SQ: [rows][dim]
	vecs   []float32 // flat: [rows][dim]
	// levels[l][node] are the node's neighbours at level l, best first
	// (HNSW only); levels above 0 hold only their nodes.
	bottom [][]uint32
	upper  []map[uint32][]uint32
	bytes  int64
}

// Search returns the k nearest rows to query among the probed partitions,
// nearest first, with row ids and distances as Lance computes them (S1-S6
// of doc.go).
func (ix *Index) Search(ctx context.Context, query []float32, k int, opts *SearchOptions) ([]vector.Neighbor, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if len(query) != ix.dim {
		return nil, fmt.Errorf("vecindex: index %s: query of %d dimensions for an index of %d: %w", ix.location, len(query), ix.dim, lancer.ErrInvalidArgument)
	}
	if k <= 0 {
		return nil, nil
	}
	q := query
	if ix.Metric == vector.Cosine {
		q = normalize(query)
	}
	ranked := ix.findPartitions(q, 0)
	nprobes := o.NProbes
	if nprobes <= 0 || nprobes > len(ranked) {
		nprobes = len(ranked)
	}
	probes := ranked[:nprobes]
	ef := o.Ef
	if ef == 0 {
		ef = k + k/2
	}
	if ix.Sub == SubHNSW && ef < k {
		return nil, fmt.Errorf("vecindex: index %s: ef %d below k %d: %w", ix.location, ef, k, lancer.ErrInvalidArgument)
	}
	// Lance 12's beam (S4): ef times the probes asked for, even beyond
	// the partitions there are; no wider than any partition can use.
	ef = min(ef, 1<<24) * max(len(probes), min(o.NProbes, 1<<10))
	if ix.Sub != SubHNSW {
		return ix.searchFlat(ctx, ranked, nprobes, q, k, o)
	}
	top := vector.NewTopK(k)
	found := 0
	probed, err := ix.searchProbes(ctx, probes, q, k, ef, o)
	if err != nil {
		return nil, err
	}
	for _, ns := range probed {
		for _, n := range ns {
			top.Push(n.ID, n.Distance)
			found++
		}
	}
	// Lance's late search (S7): past nprobes, partitions are searched
	// one after another only while fewer than k rows are found.
	for _, p := range ranked[nprobes:] {
		if found >= k {
			break
		}
		part, err := ix.loadPartition(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, n := range ix.searchPartition(part, p, q, k, ef, o.Allow) {
			top.Push(n.ID, n.Distance)
			found++
		}
	}
	return top.Sorted(), nil
}

// searchProbes searches the probed partitions, o.Workers at a time, and
// returns each one's rows in the order of probes, so that merging them
// one after another gives what a search of one partition at a time gives.
func (ix *Index) searchProbes(ctx context.Context, probes []int, q []float32, k, ef int, o SearchOptions) ([][]vector.Neighbor, error) {
	out := make([][]vector.Neighbor, len(probes))
	one := func(i int) error {
		part, err := ix.loadPartition(ctx, probes[i])
		if err != nil {
			return err
		}
		if len(part.rowIDs) > 0 {
			out[i] = ix.searchPartition(part, probes[i], q, k, ef, o.Allow)
		}
		return nil
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if err := parallel(ctx, len(probes), workers, one); err != nil {
		return nil, err
	}
	return out, nil
}

// parallel runs f(0) … f(n-1), workers at a time (in order on the calling
// goroutine when workers is 1), and returns their errors joined, or the
// context's.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			if err := f(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, workers)
	)
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// normalize returns v / |v| (v itself when zero), as Lance's
// normalize_arrow.
func normalize(v []float32) []float32 { return normalizeTo(nil, v) }

// normalizeTo is normalize writing into dst when it has room (a writer
// normalizing row after row reuses one), else into a new slice.
func normalizeTo(dst, v []float32) []float32 {
	var s float32
	for _, x := range v {
		s += x * x
	}
	if s == 0 {
		return v
	}
	n := float32(math.Sqrt(float64(s)))
	out := dst[:0:cap(dst)]
	if cap(out) < len(v) {
		out = make([]float32, len(v))
	}
	out = out[:len(v)]
	for i, x := range v {
		out[i] = x / n
	}
	return out
}

// findPartitions ranks the centroids by distance to q (L2 for l2 and
// cosine, dot for dot) and returns the nprobes nearest (S1).
func (ix *Index) findPartitions(q []float32, nprobes int) []int {
	if nprobes <= 0 || nprobes > ix.nparts {
		nprobes = ix.nparts
	}
	type pd struct {
		p int
		d float32
	}
	ds := make([]pd, ix.nparts)
	for p := range ds {
		c := ix.centroids[p*ix.dim : (p+1)*ix.dim]
		var d float32
		if ix.Metric == vector.Dot {
			d = 1 - vector.DotProduct(q, c)
		} else {
			d = vector.L2Squared(q, c)
		}
		ds[p] = pd{p, d}
	}
	// Nearest first, equal distances in partition order: what a stable
	// sort by distance gives, at an unstable sort's cost (ds is in
	// partition order, so p breaks ties as stability would). A NaN
	// distance sorts last.
	slices.SortFunc(ds, func(a, b pd) int {
		if c := compareDist(a.d, b.d); c != 0 {
			return c
		}
		return a.p - b.p
	})
	out := make([]int, nprobes)
	for i := range out {
		out[i] = ds[i].p
	}
	return out
}

// distFunc returns the distance from the (preprocessed) query to node i
// of part.
func (ix *Index) distFunc(part *partition, p int, q []float32) func(i uint32) float32 {
	n := len(part.rowIDs)
	switch ix.Quant {
	case QuantPQ:
		table, sub := ix.pqTable(p, q)
		nc := 1 << ix.pq.nbits
		m := ix.pq.m
		codes := part.codes
		var bias float32
		if ix.Metric == vector.Dot {
			bias = float32(m) - 1
		}
		if ix.pq.nbits == 4 {
			return func(i uint32) float32 {
				var d float32
				for b := range m / 2 {
					c := codes[b*n+int(i)]
					d += table[(2*b)*nc+int(c&0x0f)] + table[(2*b+1)*nc+int(c>>4)]
				}
				return d - bias
			}
		}
		_ = sub
		return func(i uint32) float32 {
			var d float32
			for s := range m {
				d += table[s*nc+int(codes[s*n+int(i)])]
			}
			return d - bias
		}
	case QuantSQ:
		dim := ix.dim
		if ix.Metric == vector.Dot {
			// Lance 12 scores dot against the decoded vector: 1 - q·x̂,
			// x̂ = start + code × (end-start)/255 (S3).
			var deq [256]float32
			for c := range deq {
				deq[c] = float32(ix.sq.lo + float64(c)*(ix.sq.hi-ix.sq.lo)/255)
			}
			return func(i uint32) float32 {
				code := part.codes[int(i)*dim : (int(i)+1)*dim]
				var s float32
				for j, c := range code {
					s += q[j] * deq[c]
				}
				return 1 - s
			}
		}
		qc := scaleToU8(q, ix.sq.lo, ix.sq.hi)
		rng := float32(ix.sq.hi - ix.sq.lo)
		scale := rng * rng
		return func(i uint32) float32 {
			// An integer sum: the SIMD kernel's bits are the loop's.
			s := vector.L2SquaredU8(part.codes[int(i)*dim:(int(i)+1)*dim], qc)
			return float32(s) * scale / (255 * 255)
		}
	default:
		dim := ix.dim
		f := vector.L2Squared
		switch ix.Metric {
		case vector.Cosine:
			f = vector.CosineDistance
		case vector.Dot:
			f = func(a, b []float32) float32 { return 1 - vector.DotProduct(a, b) }
		}
		return func(i uint32) float32 {
			return f(q, part.vecs[int(i)*dim:(int(i)+1)*dim])
		}
	}
}

// pqTable builds the query's distance table to partition p's PQ
// centroids: per sub-vector, the distance from the residual (query minus
// the partition's centroid, for l2 and cosine) to each of the 2^nbits
// centroids (S2).
func (ix *Index) pqTable(p int, q []float32) ([]float32, int) {
	dim, m := ix.dim, ix.pq.m
	r := q
	if ix.Metric != vector.Dot {
		r = make([]float32, dim)
		c := ix.centroids[p*dim : (p+1)*dim]
		for i := range r {
			r[i] = q[i] - c[i]
		}
	}
	nc := 1 << ix.pq.nbits
	sub := dim / m
	table := make([]float32, m*nc)
	for s := range m {
		rs := r[s*sub : (s+1)*sub]
		cb := ix.pq.codebook[s*nc*sub : (s+1)*nc*sub]
		for j := range nc {
			c := cb[j*sub : (j+1)*sub]
			if ix.Metric == vector.Dot {
				table[s*nc+j] = 1 - vector.DotProduct(rs, c)
			} else {
				table[s*nc+j] = vector.L2Squared(rs, c)
			}
		}
	}
	return table, sub
}

// scaleToU8 maps v to SQ codes as Lance's scale_to_u8: (v-lo)*255/(hi-lo)
// in float64, truncated and saturated to [0, 255].
func scaleToU8(v []float32, lo, hi float64) []uint8 {
	return appendSQ(make([]uint8, 0, len(v)), v, lo, hi)
}

// appendSQ appends scaleToU8(v, lo, hi) to dst.
func appendSQ(dst []uint8, v []float32, lo, hi float64) []uint8 {
	if lo == hi {
		for range v {
			dst = append(dst, 0)
		}
		return dst
	}
	rng := hi - lo
	for _, x := range v {
		y := (float64(x) - lo) * 255 / rng
		switch {
		case y != y || y <= 0:
			dst = append(dst, 0)
		case y >= 255:
			dst = append(dst, 255)
		default:
			dst = append(dst, uint8(y))
		}
	}
	return dst
}

// searchPartition returns partition p's k nearest rows (row ids) to q,
// by its HNSW graph; flat sub-indices are searched by searchFlat.
func (ix *Index) searchPartition(part *partition, p int, q []float32, k, ef int, allow vector.Filter) []vector.Neighbor {
	return ix.searchHNSW(part, p, ix.distFunc(part, p, q), k, ef, allow)
}

// searchFlat is the search of a flat sub-index (S5, S6, S7): Lance 12
// keeps one Rust BinaryHeap of the k nearest for the whole search (its
// flat sub-index accumulates every partition into a heap the caller
// owns), offers it the rows of each probed partition in probe order, and
// replaces its top only by a strictly nearer row; so of rows as far as
// the k-th, which ones survive depends on that heap's moves across
// partitions, and they are replayed (rustHeap) to keep the rows Lance
// keeps (a heap per partition, merged after, kept others: the interop
// test found 1 search in 200 differing on 4-bit PQ, whose quantized
// distances tie often). The kept rows come out by distance, then row id,
// as Lance's sort of the results does. The partitions' distances are
// computed o.Workers at a time; only the offering to the heap is one
// partition after another.
func (ix *Index) searchFlat(ctx context.Context, ranked []int, nprobes int, q []float32, k int, o SearchOptions) ([]vector.Neighbor, error) {
	h := rustHeap{}
	offer := func(part *partition, dists []float32) {
		for i, d := range dists {
			if d != d { // NaN: not allowed, or no distance
				continue
			}
			if len(h) < k {
				h.push(vector.Neighbor{ID: part.rowIDs[i], Distance: d})
			} else if h[0].Distance > d {
				h.pop()
				h.push(vector.Neighbor{ID: part.rowIDs[i], Distance: d})
			}
		}
	}
	probes := ranked[:nprobes]
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// A window of workers partitions at a time: their distances are held
	// until offered, so at most that many partitions' worth.
	for from := 0; from < len(probes); from += workers {
		window := probes[from:min(from+workers, len(probes))]
		parts := make([]*partition, len(window))
		dists := make([][]float32, len(window))
		err := parallel(ctx, len(window), workers, func(i int) error {
			part, err := ix.loadPartition(ctx, window[i])
			if err != nil {
				return err
			}
			parts[i], dists[i] = part, ix.flatDistances(part, window[i], q, k, o.Allow)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i := range window {
			offer(parts[i], dists[i])
		}
	}
	// Lance's late search (S7): past nprobes, partitions are searched
	// one after another only while fewer than k rows are found.
	for _, p := range ranked[nprobes:] {
		if len(h) >= k {
			break
		}
		part, err := ix.loadPartition(ctx, p)
		if err != nil {
			return nil, err
		}
		offer(part, ix.flatDistances(part, p, q, k, o.Allow))
	}
	top := vector.NewTopK(k)
	for _, n := range h {
		top.Push(n.ID, n.Distance)
	}
	return top.Sorted(), nil
}

// flatDistances returns the distance from q to every row of partition p,
// NaN for rows allow excludes. 4-bit PQ without a prefilter is scored as
// Lance's distance_all (quantized distances, S5); every other row as
// Lance's per-row distance.
func (ix *Index) flatDistances(part *partition, p int, q []float32, k int, allow vector.Filter) []float32 {
	if ix.Quant == QuantPQ && ix.pq.nbits == 4 && allow == nil {
		table, _ := ix.pqTable(p, q)
		dists := pq4DistanceAll(table, ix.pq.m, part.codes, len(part.rowIDs), k)
		if ix.Metric == vector.Dot {
			// Lance's distance_all subtracts m-1 from the dot sums too (S2).
			bias := float32(ix.pq.m) - 1
			for i := range dists {
				dists[i] -= bias
			}
		}
		return dists
	}
	dist := ix.distFunc(part, p, q)
	dists := make([]float32, len(part.rowIDs))
	nan := float32(math.NaN())
	for i, id := range part.rowIDs {
		if allow != nil && !allow.Contains(id) {
			dists[i] = nan
			continue
		}
		dists[i] = dist(uint32(i))
	}
	return dists
}

// rustHeap is a max-heap by distance that moves elements exactly as Rust's
// std BinaryHeap does (sift_up on push; sift_down_to_bottom then sift_up on
// pop), so that ties end where they end in Lance.
type rustHeap []vector.Neighbor

func (h *rustHeap) push(x vector.Neighbor) {
	*h = append(*h, x)
	h.siftUp(0, len(*h)-1)
}

func (h *rustHeap) siftUp(start, pos int) {
	d := *h
	elem := d[pos]
	for pos > start {
		parent := (pos - 1) / 2
		if elem.Distance <= d[parent].Distance {
			break
		}
		d[pos] = d[parent]
		pos = parent
	}
	d[pos] = elem
}

func (h *rustHeap) pop() {
	d := *h
	last := d[len(d)-1]
	d = d[:len(d)-1]
	*h = d
	if len(d) == 0 {
		return
	}
	d[0] = last
	end := len(d)
	pos := 0
	elem := d[0]
	child := 1
	for end >= 2 && child <= end-2 {
		if d[child].Distance <= d[child+1].Distance {
			child++
		}
		d[pos] = d[child]
		pos = child
		child = 2*pos + 1
	}
	if child == end-1 {
		d[pos] = d[child]
		pos = child
	}
	d[pos] = elem
	h.siftUp(0, pos)
}

// node is a graph node and its distance to the query.
type node struct {
	id   uint32
	dist float32
}

// maxHeap keeps the farthest node on top; minHeap the nearest. Their
// push and pop move elements exactly as container/heap's Push and Pop do
// (sift up from the end; swap the top with the last, sift down, remove
// the last), so that ties between equal distances end where they always
// have, without container/heap's boxing of every node into an interface.
type maxHeap []node

func (h *maxHeap) push(x node) {
	*h = append(*h, x)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !(s[j].dist > s[i].dist) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *maxHeap) pop() node {
	s := *h
	n := len(s) - 1
	s[0], s[n] = s[n], s[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && s[j2].dist > s[j].dist {
			j = j2
		}
		if !(s[j].dist > s[i].dist) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	x := s[n]
	*h = s[:n]
	return x
}

type minHeap []node

func (h *minHeap) push(x node) {
	*h = append(*h, x)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !(s[j].dist < s[i].dist) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

func (h *minHeap) pop() node {
	s := *h
	n := len(s) - 1
	s[0], s[n] = s[n], s[0]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j2 := j + 1; j2 < n && s[j2].dist < s[j].dist {
			j = j2
		}
		if !(s[j].dist < s[i].dist) {
			break
		}
		s[i], s[j] = s[j], s[i]
		i = j
	}
	x := s[n]
	*h = s[:n]
	return x
}

// searchHNSW is Lance's HNSW search of one partition (S4): greedy descent
// from the entry point through levels max_level-1 down to 0, then a beam search of
// width ef on the bottom level, keeping the k nearest; a prefilter leaving
// fewer than a tenth of the nodes scores the allowed nodes exactly instead.
func (ix *Index) searchHNSW(part *partition, p int, dist func(uint32) float32, k, ef int, allow vector.Filter) []vector.Neighbor {
	n := len(part.rowIDs)
	var allowed []bool
	remained := n
	if allow != nil {
		allowed = make([]bool, n)
		remained = 0
		for i, id := range part.rowIDs {
			if allow.Contains(id) {
				allowed[i] = true
				remained++
			}
		}
	}
	var res []node
	if allowed != nil && remained < n*10/100 {
		h := make(maxHeap, 0, k+1)
		for i := range n {
			if !allowed[i] {
				continue
			}
			d := dist(uint32(i))
			if len(h) < k {
				h.push(node{uint32(i), d})
			} else if d < h[0].dist {
				h.pop()
				h.push(node{uint32(i), d})
			}
		}
		res = sortedNodes(h)
	} else {
		// Lance 12 starts at the recorded entry point (the snapshot of
		// Lance's source read starts at node 0; Lance 12's answers match
		// only the entry point).
		start := ix.hnswMeta[p].EntryPoint
		ep := node{start, dist(start)}
		for level := ix.hnswMeta[p].Params.MaxLevel - 1; level >= 0; level-- {
			ep = greedy(part, level, ep, dist)
		}
		if ef >= len(part.bottom) {
			res = exhaustiveBeam(part, ep, k, dist, allowed)
		}
		if res == nil {
			res = beam(part, ep, ef, dist, allowed)
		}
		if len(res) > k {
			res = res[:k]
		}
	}
	out := make([]vector.Neighbor, 0, len(res))
	seen := make(map[uint64]bool, len(res))
	for _, r := range res {
		id := part.rowIDs[r.id]
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, vector.Neighbor{ID: id, Distance: r.dist})
	}
	return out
}

// sortedNodes returns h's nodes nearest first, equal distances in h's
// order (a stable sort, as always: the order ties come out in is part of
// Lance's answer).
func sortedNodes(h []node) []node {
	type ranked struct {
		node
		pos int
	}
	rs := make([]ranked, len(h))
	for i, n := range h {
		rs[i] = ranked{n, i}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := compareDist(a.dist, b.dist); c != 0 {
			return c
		}
		return a.pos - b.pos
	})
	out := make([]node, len(rs))
	for i, r := range rs {
		out[i] = r.node
	}
	return out
}

// compareDist orders distances ascending with NaN after every number
// (and equal to another NaN), a total order for the sorts above.
func compareDist(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	case a != a && b != b:
		return 0
	case a != a:
		return 1
	}
	return -1
}

func (part *partition) neighbors(level int, id uint32) []uint32 {
	if level == 0 {
		return part.bottom[id]
	}
	if level-1 < len(part.upper) {
		return part.upper[level-1][id]
	}
	return nil
}

// greedy moves to the nearest neighbour while one is nearer (Lance's
// greedy_search).
func greedy(part *partition, level int, start node, dist func(uint32) float32) node {
	cur, best := start.id, start.dist
	for {
		next, moved := cur, false
		for _, nb := range part.neighbors(level, cur) {
			if d := dist(nb); d < best {
				best, next, moved = d, nb, true
			}
		}
		if !moved {
			return node{cur, best}
		}
		cur = next
	}
}

// beam is Lance's beam_search on the bottom level: note that the bound a
// neighbour is compared with is the farthest result when its node was
// expanded, as Lance does.
func beam(part *partition, ep node, ef int, dist func(uint32) float32, allowed []bool) []node {
	// visited is a bitset over the partition's nodes: one bit each, where
	// a map cost a hash lookup per edge.
	visited := make([]uint64, (len(part.bottom)+63)/64)
	visit := func(id uint32) bool {
		w, b := id/64, uint64(1)<<(id%64)
		if visited[w]&b != 0 {
			return false
		}
		visited[w] |= b
		return true
	}
	visit(ep.id)
	cands := make(minHeap, 1, min(ef, len(part.bottom))+1)
	cands[0] = ep
	results := make(maxHeap, 0, min(ef, len(part.bottom))+1)
	if allowed == nil || allowed[ep.id] {
		results.push(ep)
	}
	for len(cands) > 0 {
		cur := cands.pop()
		furthest := float32(math.Inf(1))
		if len(results) > 0 {
			furthest = results[0].dist
		}
		if cur.dist > furthest && len(results) == ef {
			break
		}
		for _, nb := range part.bottom[cur.id] {
			if !visit(nb) {
				continue
			}
			d := dist(nb)
			if d <= furthest || len(results) < ef {
				if allowed == nil || allowed[nb] {
					if len(results) < ef {
						results.push(node{nb, d})
					} else if d < results[0].dist {
						results.pop()
						results.push(node{nb, d})
					}
				}
				cands.push(node{nb, d})
			}
		}
	}
	return sortedNodes(results)
}

// exhaustiveBeam is beam's answer, cut to k, when ef is at least the
// partition's nodes, found without the beam's heaps: then beam never
// prunes (its results never hold ef nodes while a node is left to
// expand), so it scores every node reachable from ep and returns the
// allowed ones nearest first. Only the order of equal distances depends
// on beam's heap moves; so when two of the k+1 nearest are equal (or a
// distance is NaN) it returns nil and the caller runs beam itself.
func exhaustiveBeam(part *partition, ep node, k int, dist func(uint32) float32, allowed []bool) []node {
	visited := make([]uint64, (len(part.bottom)+63)/64)
	visited[ep.id/64] |= 1 << (ep.id % 64)
	stack := make([]uint32, 1, 64)
	stack[0] = ep.id
	// best is a max-heap of the k+1 nearest allowed nodes so far.
	best := make(maxHeap, 0, k+2)
	offer := func(n node) bool {
		if n.dist != n.dist {
			return false
		}
		if len(best) <= k {
			best.push(n)
		} else if n.dist < best[0].dist {
			best.pop()
			best.push(n)
		}
		return true
	}
	if allowed == nil || allowed[ep.id] {
		if !offer(ep) {
			return nil
		}
	}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, nb := range part.bottom[cur] {
			w, b := nb/64, uint64(1)<<(nb%64)
			if visited[w]&b != 0 {
				continue
			}
			visited[w] |= b
			stack = append(stack, nb)
			if allowed == nil || allowed[nb] {
				if !offer(node{nb, dist(nb)}) {
					return nil
				}
			}
		}
	}
	out := sortedNodes(best)
	for i := 1; i < len(out); i++ {
		if out[i].dist == out[i-1].dist {
			return nil
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	if out == nil {
		out = []node{}
	}
	return out
}

// loadPartition returns partition p, reading it on first use.
func (ix *Index) loadPartition(ctx context.Context, p int) (*partition, error) {
	if ix.cache != nil {
		pt, err := ix.cache.Partition(ctx, p, func(ctx context.Context) (*Partition, error) {
			part, err := ix.readPartition(ctx, p)
			if err != nil {
				return nil, err
			}
			return &Partition{part}, nil
		})
		if err != nil {
			return nil, err
		}
		return pt.part, nil
	}
	ix.mu.Lock()
	part, ok := ix.parts[p]
	ix.mu.Unlock()
	if ok {
		return part, nil
	}
	part, err := ix.readPartition(ctx, p)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old, ok := ix.parts[p]; ok {
		return old, nil
	}
	ix.parts[p] = part
	ix.bytes += part.bytes
	return part, nil
}

func fieldsNamed(r *format.Reader, names ...string) []*schema.Field {
	out := make([]*schema.Field, 0, len(names))
	for _, want := range names {
		for _, f := range r.Schema().Fields {
			if f.Name == want {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

func (ix *Index) readPartition(ctx context.Context, p int) (*partition, error) {
	if ix.legacy != nil {
		return ix.readLegacyPartition(ctx, p)
	}
	col := colFlat
	switch ix.Quant {
	case QuantPQ:
		col = colPQ
	case QuantSQ:
		col = colSQ
	}
	start, n := ix.auxStart[p], ix.auxLen[p]
	part := &partition{}
	if n > 0 {
		fields := fieldsNamed(ix.aux, colRowID, col)
		if len(fields) != 2 {
			return nil, ix.corrupt(AuxiliaryFile, "no %s or %s column", colRowID, col)
		}
		arrs, err := readRows(ctx, ix.aux, fields, start, start+n)
		if err != nil {
			return nil, fmt.Errorf("vecindex: index %s: %s: partition %d: %w", ix.location, AuxiliaryFile, p, err)
		}
		defer release(arrs)
		ids, ok := arrs[0].(*array.Uint64)
		if !ok || uint64(ids.Len()) != n || ids.NullN() > 0 {
			return nil, ix.corrupt(AuxiliaryFile, "partition %d: %s is not %d uint64s", p, colRowID, n)
		}
		part.rowIDs = append([]uint64(nil), ids.Values()...)
		fsl, ok := arrs[1].(*array.FixedSizeList)
		if !ok || uint64(fsl.Len()) != n {
			return nil, ix.corrupt(AuxiliaryFile, "partition %d: %s is not a fixed-size list of %d rows", p, col, n)
		}
		w := int(fsl.DataType().(*arrow.FixedSizeListType).Len())
		lo := fsl.Offset() * w
		hi := lo + int(n)*w
		switch vals := fsl.ListValues().(type) {
		case *array.Uint8:
			if ix.Quant == QuantFlat || hi > vals.Len() {
				return nil, ix.corrupt(AuxiliaryFile, "partition %d: %s holds %d values", p, col, vals.Len())
			}
			part.codes = append([]uint8(nil), vals.Uint8Values()[lo:hi]...)
			if ix.Quant == QuantPQ && !ix.pq.transposed {
				part.codes = transpose(part.codes, int(n), w)
			}
		case *array.Float32:
			if ix.Quant != QuantFlat || hi > vals.Len() {
				return nil, ix.corrupt(AuxiliaryFile, "partition %d: %s holds %d float32 values", p, col, vals.Len())
			}
			part.vecs = append([]float32(nil), vals.Float32Values()[lo:hi]...)
		default:
			return nil, fmt.Errorf("vecindex: index %s: %s: partition %d: %s of %s: %w", ix.location, AuxiliaryFile, p, col, fsl.ListValues().DataType(), lancer.ErrUnsupported)
		}
		part.bytes = int64(8*len(part.rowIDs) + len(part.codes) + 4*len(part.vecs))
	}
	if ix.Sub == SubHNSW {
		if err := ix.readGraph(ctx, p, part); err != nil {
			return nil, err
		}
	}
	return part, nil
}

// transpose turns row-major codes ([rows][w]) into Lance's transposed
// layout ([w][rows]).
func transpose(codes []uint8, rows, w int) []uint8 {
	out := make([]uint8, len(codes))
	for r := range rows {
		for c := range w {
			out[c*rows+r] = codes[r*w+c]
		}
	}
	return out
}

func readRows(ctx context.Context, r *format.Reader, fields []*schema.Field, start, end uint64) ([]arrow.Array, error) {
	c, err := r.NewCursor(r.FileProjection(fields))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// A take of the range's rows, not ReadRange: a range read decodes
	// every page it touches whole, and a partition is a small slice of a
	// page (loading each of a 50k-row index's 224 partitions cost 33 ms of
	// CPU that way); a take decodes only the mini-block chunks holding
	// the rows.
	rows := make([]uint64, end-start)
	for i := range rows {
		rows[i] = start + uint64(i)
	}
	return c.Take(ctx, rows)
}

func release(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// readGraph reads partition p's HNSW levels from index.idx (I5).
func (ix *Index) readGraph(ctx context.Context, p int, part *partition) error {
	nodes := len(part.rowIDs)
	hm := ix.hnswMeta[p]
	if nodes == 0 || ix.subLen[p] == 0 {
		if nodes > 0 {
			return ix.corrupt(IndexFile, "partition %d: no HNSW graph over %d vectors", p, nodes)
		}
		return nil
	}
	if len(hm.LevelOffsets) < 2 {
		return ix.corrupt(IndexFile, "partition %d: HNSW of %d level offsets", p, len(hm.LevelOffsets))
	}
	start := ix.subStart[p]
	fields := fieldsNamed(ix.idx, colVectorID, colNeighbors)
	if len(fields) != 2 {
		return ix.corrupt(IndexFile, "no %s or %s column", colVectorID, colNeighbors)
	}
	arrs, err := readRows(ctx, ix.idx, fields, start, start+ix.subLen[p])
	if err != nil {
		return fmt.Errorf("vecindex: index %s: %s: partition %d: %w", ix.location, IndexFile, p, err)
	}
	defer release(arrs)
	vid, ok1 := arrs[0].(*array.Uint32)
	nbl, ok2 := arrs[1].(*array.List)
	if !ok1 || !ok2 || uint64(vid.Len()) != ix.subLen[p] || nbl.Len() != vid.Len() {
		return ix.corrupt(IndexFile, "partition %d: %s / %s are not uint32 / list<uint32> of %d rows", p, colVectorID, colNeighbors, ix.subLen[p])
	}
	bottom, upper, total, err := ix.buildGraph(p, nodes, hm.LevelOffsets, vid, nbl)
	if err != nil {
		return err
	}
	part.bottom, part.upper = bottom, upper
	part.bytes += total
	return nil
}

// buildGraph turns partition p's graph rows (I5) into neighbour lists,
// checking every id against the partition's nodes.
func (ix *Index) buildGraph(p, nodes int, levelOffsets []int, vid *array.Uint32, nbl *array.List) (bottom [][]uint32, upper []map[uint32][]uint32, total int64, err error) {
	vals, ok := nbl.ListValues().(*array.Uint32)
	if !ok {
		return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: %s is not list<uint32>", p, colNeighbors)
	}
	offs := nbl.Offsets()
	levels := len(levelOffsets) - 1
	bottom = make([][]uint32, nodes)
	upper = make([]map[uint32][]uint32, max(levels-1, 0))
	for l := range levels {
		lo, hi := levelOffsets[l], levelOffsets[l+1]
		if lo < 0 || hi < lo || hi > vid.Len() || hi >= len(offs) {
			return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: level %d rows [%d, %d) of %d", p, l, lo, hi, vid.Len())
		}
		if l > 0 {
			upper[l-1] = make(map[uint32][]uint32, hi-lo)
		}
		for row := lo; row < hi; row++ {
			if vid.IsNull(row) || nbl.IsNull(row) {
				return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: null graph row %d", p, row)
			}
			id := vid.Value(row)
			if int(id) >= nodes {
				return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: HNSW node %d of %d", p, id, nodes)
			}
			a, b := int(offs[row]), int(offs[row+1])
			if a < 0 || a > b || b > vals.Len() {
				return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: neighbour list [%d, %d) of %d values", p, a, b, vals.Len())
			}
			nb := append([]uint32(nil), vals.Uint32Values()[a:b]...)
			for _, x := range nb {
				if int(x) >= nodes {
					return nil, nil, 0, ix.corrupt(IndexFile, "partition %d: HNSW neighbour %d of %d nodes", p, x, nodes)
				}
			}
			total += int64(4*len(nb) + 32)
			if l == 0 {
				bottom[id] = nb
			} else {
				upper[l-1][id] = nb
			}
		}
	}
	return bottom, upper, total, nil
}

// pq4Flat is how many rows (at least) 4-bit PQ scores exactly to bound
// its quantized distances, as Lance's FLAT_NUM_4BIT_PQ.
const pq4Flat = 200

// pq4DistanceAll is Lance's compute_pq_distance_4bit, the distances of
// every row of a partition when no prefilter applies (S2): the first
// max(200, k) rows and the rows past the last whole block of 16 are scored
// exactly; the others through the distance table quantized to bytes
// between its minimum and the largest exact distance, summed with
// saturation and mapped back.
func pq4DistanceAll(table []float32, m int, codes []uint8, n, k int) []float32 {
	const nc = 16
	dists := make([]float32, n)
	if n == 0 {
		return dists
	}
	bytesPerRow := m / 2
	exact := func(from, to int) {
		for b := range bytesPerRow {
			lo, hi := table[2*b*nc:], table[(2*b+1)*nc:]
			col := codes[b*n : (b+1)*n]
			for i := from; i < to; i++ {
				c := col[i]
				dists[i] += lo[c&0x0f]
				dists[i] += hi[c>>4]
			}
		}
	}
	flat := min(max(pq4Flat, min(k, n)), n)
	exact(0, flat)
	qmax := dists[0]
	for _, d := range dists[1:flat] {
		qmax = max(qmax, d)
	}
	qmin := float32(math.Inf(1))
	for _, d := range table {
		qmin = min(qmin, d)
	}
	factor := 255 / (qmax - qmin)
	qt := make([]uint8, len(table))
	for i, d := range table {
		qt[i] = satU8(math.Round(float64((d - qmin) * factor)))
	}
	rem := n % nc
	full := n - rem
	rng := (qmax - qmin) / 255
	for i := flat; i < full; i++ {
		var acc uint8
		for b := range bytesPerRow {
			c := codes[b*n+i]
			acc = addSat(acc, qt[2*b*nc+int(c&0x0f)])
			acc = addSat(acc, qt[(2*b+1)*nc+int(c>>4)])
		}
		dists[i] = float32(float32(acc)*rng) + qmin // no fused multiply-add: Lance rounds twice
	}
	if rem > 0 {
		exact(max(full, flat), n)
	}
	return dists
}

func addSat(a, b uint8) uint8 {
	if s := uint16(a) + uint16(b); s < 256 {
		return uint8(s)
	}
	return 255
}

// satU8 is Rust's float-to-u8 `as`: saturating, NaN to 0.
func satU8(x float64) uint8 {
	switch {
	case x != x || x <= 0:
		return 0
	case x >= 255:
		return 255
	}
	return uint8(x)
}
