package vector

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// HNSW is a hierarchical navigable small world graph (Malkov & Yashunin,
// "Efficient and robust approximate nearest neighbor search using
// Hierarchical Navigable Small World graphs", 2016/2018) over n vectors of
// one dimension.
//
// Nodes are the dense ids 0..n-1: node i is the i-th vector given to
// BuildHNSW. The caller maps them to row ids; filters and results speak node
// ids.
//
// # Layout
//
// Vectors stay in the caller's contiguous []float32 (row-major, n*dim).
// Layer 0 is one flat []uint32 of n*(M0+1) slots: node i owns slots
// [i*(M0+1), (i+1)*(M0+1)), the first holding its neighbour count and the
// rest its neighbours (M0 = 2M). Upper layers share a second flat []uint32:
// a node of level L > 0 owns L consecutive blocks of M+1 slots there (count
// then neighbours, for layers 1..L), starting at upperOff[i]. Levels are one
// byte per node. So the graph costs about (2M+1)*4 + 5 + 4*(M+1)/(M-1) bytes
// per node: ≈ 142 bytes for M = 16, besides the vectors.
//
// # Concurrency
//
// Search may be called from many goroutines at once, also together with
// Delete. The graph is immutable after BuildHNSW; tombstones are atomic bits.
type HNSW struct {
	dim    int
	n      int
	metric Metric
	dist   func(a, b []float32) float32
	m, m0  int
	efc    int

	vectors []float32 // n*dim, not owned: the caller must not change it

	levels   []uint8
	layer0   []uint32 // n*(m0+1)
	upper    []uint32 // blocks of m+1 for layers >= 1
	upperOff []uint32 // per node: start of its layer-1 block in upper; noUpper if level 0

	entry    uint32
	maxLevel int

	deleted  []uint64 // tombstone bitset, accessed atomically
	ndeleted atomic.Int64

	pool sync.Pool // *searcher

	// exactFactor tunes the exact-search fallback of filtered searches (see
	// Search); tests set it to force one path or the other. Zero means
	// defaultExactFactor; negative disables the fallback.
	exactFactor float64
}

const (
	noUpper = ^uint32(0)
	// maxHNSWLevel caps node levels; with M ≥ 2 a level above 31 has
	// probability below 2^-31 per node.
	maxHNSWLevel = 31
	// maxHNSWM bounds M so that a decoded header cannot ask for absurd
	// per-node allocations.
	maxHNSWM = 256
)

// HNSWOptions configures BuildHNSW. The zero value (or a nil pointer) gives
// the defaults.
type HNSWOptions struct {
	// M is the number of neighbours a node links to on each upper layer;
	// layer 0 allows M0 = 2M. Larger M gives better recall at a given ef and
	// a bigger, slower-to-build graph. Must be in [2, 256]. Default: 16
	// (hnswlib's default; Lance's IVF_HNSW_* uses m = 20).
	M int
	// EfConstruction is the beam width used while inserting nodes. Default:
	// 150, as Lance's HnswBuildParams (m = 20, ef_construction = 150,
	// max_level = 7); LanceDB's createIndex passes 300, which the
	// lance-baseline run used.
	EfConstruction int
	// Metric is the distance. Default: L2 (squared).
	Metric Metric
	// Seed seeds the level generator. Zero is a valid seed. With Workers = 1
	// the graph is a pure function of the vectors and the options.
	Seed uint64
	// Workers is the number of goroutines inserting nodes. Default:
	// runtime.GOMAXPROCS(0). With more than one worker the graph depends on
	// scheduling (recall does not, within noise).
	Workers int
}

// Len returns the number of nodes, tombstoned ones included.
func (h *HNSW) Len() int { return h.n }

// Dim returns the vector dimension.
func (h *HNSW) Dim() int { return h.dim }

// Metric returns the graph's distance metric.
func (h *HNSW) Metric() Metric { return h.metric }

// GraphBytes returns the memory the graph holds, vectors excluded: the
// adjacency arrays, levels and tombstones.
func (h *HNSW) GraphBytes() int {
	return 4*(len(h.layer0)+len(h.upper)+len(h.upperOff)) + len(h.levels) + 8*len(h.deleted)
}

// Deleted returns the number of tombstoned nodes.
func (h *HNSW) Deleted() int { return int(h.ndeleted.Load()) }

// Delete tombstones node id: Search never returns it again, but still walks
// through it, so the graph stays connected. Deleting twice is a no-op. It
// panics if id is not a node.
func (h *HNSW) Delete(id uint32) {
	if int(id) >= h.n {
		panic(fmt.Sprintf("vector: HNSW.Delete(%d) with %d nodes", id, h.n))
	}
	w, bit := &h.deleted[id/64], uint64(1)<<(id%64)
	if atomic.OrUint64(w, bit)&bit == 0 {
		h.ndeleted.Add(1)
	}
}

// IsDeleted reports whether node id is tombstoned.
func (h *HNSW) IsDeleted(id uint32) bool {
	return int(id) < h.n && atomic.LoadUint64(&h.deleted[id/64])&(1<<(id%64)) != 0
}

// SetVectors attaches the vectors of a graph read by UnmarshalBinary (which
// stores no vectors): len(vectors) must be Len()*Dim(), in node order. The
// HNSW keeps the slice; the caller must not change it.
func (h *HNSW) SetVectors(vectors []float32) error {
	if len(vectors) != h.n*h.dim {
		return fmt.Errorf("vector: HNSW has %d nodes of dim %d, got %d floats: %w", h.n, h.dim, len(vectors), lancer.ErrInvalidArgument)
	}
	h.vectors = vectors
	return nil
}

func (h *HNSW) vec(id uint32) []float32 {
	o := int(id) * h.dim
	return h.vectors[o : o+h.dim : o+h.dim]
}

// links returns node id's slot block on layer l: slot 0 is the count, the
// rest the neighbours.
func (h *HNSW) links(id uint32, l int) []uint32 {
	if l == 0 {
		o := int(id) * (h.m0 + 1)
		return h.layer0[o : o+h.m0+1 : o+h.m0+1]
	}
	o := int(h.upperOff[id]) + (l-1)*(h.m+1)
	return h.upper[o : o+h.m+1 : o+h.m+1]
}

// neighbors returns node id's neighbours on layer l (valid only when no
// build is running).
func (h *HNSW) neighbors(id uint32, l int) []uint32 {
	b := h.links(id, l)
	return b[1 : 1+b[0]]
}

// alloc sizes the graph for levels (one per node).
func (h *HNSW) alloc(levels []uint8) {
	h.levels = levels
	h.layer0 = make([]uint32, h.n*(h.m0+1))
	h.upperOff = make([]uint32, h.n)
	total := 0
	for i, l := range levels {
		if l == 0 {
			h.upperOff[i] = noUpper
			continue
		}
		h.upperOff[i] = uint32(total)
		total += int(l) * (h.m + 1)
	}
	h.upper = make([]uint32, total)
	h.deleted = make([]uint64, (h.n+63)/64)
}

// Binary form of the graph (little endian), written by MarshalBinary:
//
//	magic "LHNSW\x00" (6 bytes), version u16 = 1
//	dim u32, metric u8, M u16, efConstruction u32, n u32
//	entry u32, maxLevel u8 (both 0 when n = 0)
//	levels [n]u8
//	for each node, for each of its layers 0..level: count u16, then count u32 ids
//	ndeleted u32, then ndeleted u32 ids, strictly increasing
//
// Vectors are not included.
const (
	hnswMagic   = "LHNSW\x00"
	hnswVersion = 1
	hnswHeader  = 6 + 2 + 4 + 1 + 2 + 4 + 4 + 4 + 1
)

// MarshalBinary encodes the graph (without its vectors) and tombstones.
func (h *HNSW) MarshalBinary() ([]byte, error) {
	size := hnswHeader + h.n + 4
	for i := 0; i < h.n; i++ {
		for l := 0; l <= int(h.levels[i]); l++ {
			size += 2 + 4*int(h.links(uint32(i), l)[0])
		}
	}
	size += 4 * h.Deleted()
	b := make([]byte, 0, size)
	b = append(b, hnswMagic...)
	b = binary.LittleEndian.AppendUint16(b, hnswVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.dim))
	b = append(b, byte(h.metric))
	b = binary.LittleEndian.AppendUint16(b, uint16(h.m))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.efc))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.n))
	b = binary.LittleEndian.AppendUint32(b, h.entry)
	b = append(b, byte(h.maxLevel))
	b = append(b, h.levels...)
	for i := 0; i < h.n; i++ {
		for l := 0; l <= int(h.levels[i]); l++ {
			nb := h.neighbors(uint32(i), l)
			b = binary.LittleEndian.AppendUint16(b, uint16(len(nb)))
			for _, id := range nb {
				b = binary.LittleEndian.AppendUint32(b, id)
			}
		}
	}
	var dels []uint32
	for w := range h.deleted {
		x := atomic.LoadUint64(&h.deleted[w])
		for x != 0 {
			dels = append(dels, uint32(w*64+bits.TrailingZeros64(x)))
			x &= x - 1
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(dels)))
	for _, id := range dels {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	return b, nil
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("vector: hnsw graph: "+format+": %w", append(args, lancer.ErrCorrupt)...)
}

// UnmarshalBinary decodes a graph written by MarshalBinary, replacing h.
// Every count and id is checked, and allocations are bounded by the input
// length (at most 4*(2M+1)+9 bytes per node, and each node costs at least 3
// input bytes), so hostile input yields an error wrapping lancer.ErrCorrupt,
// never a panic or a huge allocation. The graph has no vectors: call
// SetVectors before Search.
func (h *HNSW) UnmarshalBinary(data []byte) error {
	if len(data) < hnswHeader {
		return corruptf("%d bytes, shorter than the %d-byte header", len(data), hnswHeader)
	}
	if string(data[:6]) != hnswMagic {
		return corruptf("bad magic %q", data[:6])
	}
	le := binary.LittleEndian
	if v := le.Uint16(data[6:]); v != hnswVersion {
		return fmt.Errorf("vector: hnsw graph version %d (want %d): %w", v, hnswVersion, lancer.ErrUnsupported)
	}
	dim := le.Uint32(data[8:])
	metric := Metric(data[12])
	m := int(le.Uint16(data[13:]))
	efc := le.Uint32(data[15:])
	n := le.Uint32(data[19:])
	entry := le.Uint32(data[23:])
	maxLevel := int(data[27])
	p := data[hnswHeader:]
	switch {
	case dim == 0 || dim > 1<<20:
		return corruptf("dimension %d", dim)
	case metric > Dot:
		return corruptf("metric %d", metric)
	case m < 2 || m > maxHNSWM:
		return corruptf("M = %d", m)
	case efc > 1<<20:
		return corruptf("efConstruction %d", efc)
	case maxLevel > maxHNSWLevel:
		return corruptf("max level %d", maxLevel)
	// Each node needs a level byte and a 2-byte layer-0 count.
	case uint64(n) > uint64(len(p))/3:
		return corruptf("%d nodes in %d bytes", n, len(p))
	case n == 0 && (entry != 0 || maxLevel != 0):
		return corruptf("empty graph with entry point %d level %d", entry, maxLevel)
	case n > 0 && entry >= n:
		return corruptf("entry point %d of %d nodes", entry, n)
	}
	levels := p[:n]
	p = p[n:]
	for i, l := range levels {
		if int(l) > maxLevel {
			return corruptf("node %d level %d above max level %d", i, l, maxLevel)
		}
	}
	if n > 0 && int(levels[entry]) != maxLevel {
		return corruptf("entry point %d has level %d, not the max level %d", entry, levels[entry], maxLevel)
	}
	// First pass: check the adjacency lists without allocating.
	q := p
	for i := uint32(0); i < n; i++ {
		for l := 0; l <= int(levels[i]); l++ {
			capacity := m
			if l == 0 {
				capacity = 2 * m
			}
			if len(q) < 2 {
				return corruptf("truncated at node %d layer %d", i, l)
			}
			c := int(le.Uint16(q))
			if c > capacity {
				return corruptf("node %d layer %d has %d neighbours, more than %d", i, l, c, capacity)
			}
			if len(q) < 2+4*c {
				return corruptf("truncated at node %d layer %d", i, l)
			}
			for j := 0; j < c; j++ {
				id := le.Uint32(q[2+4*j:])
				if id >= n {
					return corruptf("node %d layer %d links to node %d of %d", i, l, id, n)
				}
				if int(levels[id]) < l {
					return corruptf("node %d layer %d links to node %d of level %d", i, l, id, levels[id])
				}
			}
			q = q[2+4*c:]
		}
	}
	if len(q) < 4 {
		return corruptf("truncated tombstone count")
	}
	nd := le.Uint32(q)
	q = q[4:]
	if uint64(nd) > uint64(n) || uint64(len(q)) != 4*uint64(nd) {
		return corruptf("%d tombstones of %d nodes in %d bytes", nd, n, len(q))
	}
	for j := uint32(0); j < nd; j++ {
		id := le.Uint32(q[4*j:])
		if id >= n || (j > 0 && id <= le.Uint32(q[4*(j-1):])) {
			return corruptf("tombstone %d: node %d out of order or range", j, id)
		}
	}

	g := &HNSW{dim: int(dim), n: int(n), metric: metric, dist: metric.Func(), m: m, m0: 2 * m, efc: int(efc), entry: entry, maxLevel: maxLevel}
	g.alloc(append([]uint8(nil), levels...))
	for i := uint32(0); i < n; i++ {
		for l := 0; l <= int(levels[i]); l++ {
			c := int(le.Uint16(p))
			blk := g.links(i, l)
			blk[0] = uint32(c)
			for j := 0; j < c; j++ {
				blk[1+j] = le.Uint32(p[2+4*j:])
			}
			p = p[2+4*c:]
		}
	}
	for j := uint32(0); j < nd; j++ {
		g.Delete(le.Uint32(q[4*j:]))
	}
	h.reset(g)
	return nil
}

// reset makes h a copy of g (g's fields, a fresh pool).
func (h *HNSW) reset(g *HNSW) {
	h.dim, h.n, h.metric, h.dist, h.m, h.m0, h.efc = g.dim, g.n, g.metric, g.dist, g.m, g.m0, g.efc
	h.vectors = g.vectors
	h.levels, h.layer0, h.upper, h.upperOff = g.levels, g.layer0, g.upper, g.upperOff
	h.entry, h.maxLevel = g.entry, g.maxLevel
	h.deleted = g.deleted
	h.ndeleted.Store(g.ndeleted.Load())
	h.pool = sync.Pool{}
	h.exactFactor = g.exactFactor
}
