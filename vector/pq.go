package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// PQOptions configures the product quantization of an IVF with StorePQ.
// The zero value gives the defaults.
type PQOptions struct {
	// SubVectors is the number of sub-spaces a vector is split into; each
	// is encoded as one byte, so a row costs SubVectors bytes. It must
	// divide the dimension. Default: the largest divisor of the dimension
	// not above max(1, dim/8), i.e. dim/8 when 8 divides dim (sub-vectors
	// of 8 dimensions, 32× smaller than float32; 16 for 128 dimensions).
	SubVectors int
	// Bits is the code width per sub-vector: 8 (256 codewords per
	// sub-space, Lance's default; 0 means 8) or 4 (16 codewords, Lance's
	// num_bits=4: written to Lance's format two sub-vectors a byte, and
	// then SubVectors must be even). Codes are one byte a sub-vector in
	// the IVF either way.
	Bits int
	// SampleSize is how many rows train the codebooks. Default
	// min(n, 65536), Lance's 256 rows per codeword. Training costs about
	// SampleSize × dim × 256 operations per iteration; on the clustered
	// 200k×128 benchmark 16384 rows train four times faster and lose about
	// 0.01 of recall@10 (0.03 reranking 100 candidates).
	SampleSize int
	// MaxIters bounds the k-means iterations of each codebook. Default 15.
	MaxIters int
	// Raw quantizes the vectors themselves instead of their residuals to
	// the partition centroids: Lance's PQ for the dot metric. Only with
	// Dot. An IVF built so is written in Lance's format only (its
	// WriteTo is lancer.ErrUnsupported).
	Raw bool
}

const (
	pqCodebookSize    = 256
	defaultPQSample   = 256 * pqCodebookSize
	defaultPQMaxIters = 15
)

// resolve validates o for dimension dim and fills the defaults.
func (o PQOptions) resolve(dim int) (PQOptions, error) {
	if o.Bits == 0 {
		o.Bits = 8
	}
	if o.Bits != 8 && o.Bits != 4 {
		return o, fmt.Errorf("vector: PQ with %d bits per code (4 or 8): %w", o.Bits, lancer.ErrInvalidArgument)
	}
	if o.SubVectors < 0 || o.SampleSize < 0 || o.MaxIters < 0 {
		return o, fmt.Errorf("vector: PQ SubVectors %d, SampleSize %d, MaxIters %d must not be negative: %w", o.SubVectors, o.SampleSize, o.MaxIters, lancer.ErrInvalidArgument)
	}
	if o.SubVectors == 0 {
		o.SubVectors = DefaultPQSubVectors(dim)
	}
	if o.SubVectors > dim || dim%o.SubVectors != 0 {
		return o, fmt.Errorf("vector: PQ with %d sub-vectors does not divide dimension %d: %w", o.SubVectors, dim, lancer.ErrInvalidArgument)
	}
	if o.Bits == 4 && o.SubVectors%2 != 0 {
		// Lance packs two 4-bit codes a byte and refuses an odd count.
		return o, fmt.Errorf("vector: 4-bit PQ with %d sub-vectors (must be even): %w", o.SubVectors, lancer.ErrInvalidArgument)
	}
	if o.SubVectors > math.MaxUint16 {
		return o, fmt.Errorf("vector: PQ with %d sub-vectors, at most %d: %w", o.SubVectors, math.MaxUint16, lancer.ErrInvalidArgument)
	}
	if o.MaxIters == 0 {
		o.MaxIters = defaultPQMaxIters
	}
	return o, nil
}

// DefaultPQSubVectors returns PQOptions' default number of sub-vectors
// for dimension dim: the largest divisor of dim not above max(1, dim/8).
func DefaultPQSubVectors(dim int) int {
	for s := max(1, dim/8); s > 1; s-- {
		if dim%s == 0 {
			return s
		}
	}
	return 1
}

// pqCodebook is a product quantizer: m sub-spaces of sub = dim/m
// dimensions, each with k ≤ 2^bits codewords. A code is m bytes. It is
// immutable once built.
type pqCodebook struct {
	dim, m, sub, k int
	// bits is the code width it was trained for (8, or 4: k ≤ 16); 8 in an
	// index decoded from lancer's own format.
	bits int
	// books holds sub-space s's codeword j at [(s*k+j)*sub, (s*k+j+1)*sub).
	books []float32
	// bt is books by dimension for encoding (see transpose); nil in a
	// decoded index, which encodes nothing.
	bt []float32
}

// codeBits is the code width q was trained for: 8 unless 4.
func (q *pqCodebook) codeBits() int {
	if q.bits == 4 {
		return 4
	}
	return 8
}

// trainPQ trains the codebooks on a deterministic sample of the residuals
// of vectors (row i minus its centroid cent[assign[i]]; rows normalized
// first for Cosine), one k-means per sub-space, the sub-spaces spread over
// workers goroutines.
func trainPQ(vectors []float32, dim int, cent []float32, assign []uint32, metric Metric, o PQOptions, seed uint64, workers int) (*pqCodebook, error) {
	rows := pqSample(len(vectors)/dim, o, seed)
	split := newPQSplit(len(rows), dim, o)
	for r, i := range rows {
		split.add(r, vectors[int(i)*dim:int(i+1)*dim], cent[int(assign[i])*dim:(int(assign[i])+1)*dim], metric)
	}
	return split.train(o, seed, workers), nil
}

// pqSample returns the rows (of n) trainPQ trains on, in order: a
// function of n, o and seed alone, so that a streaming build draws the
// sample an in-memory one does.
func pqSample(n int, o PQOptions, seed uint64) []uint32 {
	s := o.SampleSize
	if s == 0 {
		s = defaultPQSample
	}
	s = min(max(s, 1), n)
	rng := rand.New(rand.NewPCG(seed, 0x7071747261696e)) // "pqtrain"
	return selectRows(rng, n, s)
}

// pqSplit is trainPQ's sample of s residuals split by sub-space:
// sub-space j's rows packed at [j*s*sub, (j+1)*s*sub).
type pqSplit struct {
	s, dim, m, sub int
	rows           []float32
	row            []float32
}

func newPQSplit(s, dim int, o PQOptions) *pqSplit {
	m := o.SubVectors
	return &pqSplit{s: s, dim: dim, m: m, sub: dim / m, rows: make([]float32, s*dim), row: make([]float32, dim)}
}

// add sets sample row r to the residual of v to its centroid c.
func (q *pqSplit) add(r int, v, c []float32, metric Metric) {
	residual(q.row, v, c, metric)
	for j := 0; j < q.m; j++ {
		copy(q.rows[(j*q.s+r)*q.sub:(j*q.s+r+1)*q.sub], q.row[j*q.sub:(j+1)*q.sub])
	}
}

// train trains one codebook per sub-space over the sample.
func (ps *pqSplit) train(o PQOptions, seed uint64, workers int) *pqCodebook {
	s, dim, m, sub, split := ps.s, ps.dim, ps.m, ps.sub, ps.rows
	k := min(1<<o.Bits, s)
	q := &pqCodebook{dim: dim, m: m, sub: sub, k: k, bits: o.Bits, books: make([]float32, m*k*sub)}
	var next atomic.Int64
	runWorkers(min(workers, m), func() {
		for {
			j := int(next.Add(1) - 1)
			if j >= m {
				return
			}
			jr := rand.New(rand.NewPCG(seed, uint64(j)))
			c := pqKMeans(split[j*s*sub:(j+1)*s*sub], sub, k, o.MaxIters, jr)
			copy(q.books[j*k*sub:(j+1)*k*sub], c)
		}
	})
	q.transpose()
	return q
}

// transpose fills bt, the codebooks by dimension: bt[(j*sub+i)*256 + c]
// is dimension i of codeword c of sub-space j (0 for c ≥ k).
func (q *pqCodebook) transpose() {
	q.bt = make([]float32, q.m*q.sub*pqCodebookSize)
	for j := 0; j < q.m; j++ {
		transposeBook(q.bt[j*q.sub*pqCodebookSize:(j+1)*q.sub*pqCodebookSize], q.books[j*q.k*q.sub:(j+1)*q.k*q.sub], q.sub)
	}
}

// transposeBook writes the k = len(book)/sub codewords of book into bt by
// dimension (sub rows of 256).
func transposeBook(bt, book []float32, sub int) {
	clear(bt)
	for c := 0; c < len(book)/sub; c++ {
		for i := 0; i < sub; i++ {
			bt[i*pqCodebookSize+c] = book[c*sub+i]
		}
	}
}

// nearestT returns the nearest of the first k codewords of a transposed
// codebook bt (sub rows of 256) to r (sub floats) under L2, ties to the
// smaller index, with its squared distance. Summing dimension by dimension
// over 256 contiguous codewords is several times faster than a distance
// call per short codeword.
func nearestT(bt []float32, k int, r []float32, acc *[pqCodebookSize]float32) (int, float32) {
	if len(r) == 8 {
		return nearestT8(bt, k, r)
	}
	col := (*[pqCodebookSize]float32)(bt[:pqCodebookSize])
	v := r[0]
	for c := range acc {
		d := v - col[c]
		acc[c] = d * d
	}
	for i := 1; i < len(r); i++ {
		col = (*[pqCodebookSize]float32)(bt[i*pqCodebookSize : (i+1)*pqCodebookSize])
		v = r[i]
		for c := range acc {
			d := v - col[c]
			acc[c] += d * d
		}
	}
	best, bd := 0, acc[0]
	for c := 1; c < k; c++ {
		if acc[c] < bd {
			best, bd = c, acc[c]
		}
	}
	return best, bd
}

// nearestT8 is nearestT for sub-vectors of 8 dimensions (the default
// sub-vectors of a dimension divisible by 8), with the query in registers
// and one pass over the codewords.
func nearestT8(bt []float32, k int, r []float32) (int, float32) {
	const w = pqCodebookSize
	r0, r1, r2, r3, r4, r5, r6, r7 := r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
	b := (*[8 * w]float32)(bt[:8*w])
	best, bd := 0, float32(math.Inf(1))
	for c := 0; c < k && c < w; c++ {
		d0 := r0 - b[c]
		d1 := r1 - b[w+c]
		d2 := r2 - b[2*w+c]
		d3 := r3 - b[3*w+c]
		d4 := r4 - b[4*w+c]
		d5 := r5 - b[5*w+c]
		d6 := r6 - b[6*w+c]
		d7 := r7 - b[7*w+c]
		d := (d0*d0 + d1*d1) + (d2*d2 + d3*d3) + ((d4*d4 + d5*d5) + (d6*d6 + d7*d7))
		if d < bd {
			best, bd = c, d
		}
	}
	return best, bd
}

// pqKMeans clusters the rows of sub floats into k ≤ 256 centroids (k*sub
// floats) by Lloyd's algorithm under L2, from k distinct rows picked by
// rng, for at most iters iterations (fewer when under 0.1% of the rows
// change cluster). A cluster left empty takes the row farthest from its
// centroid. Sums are in row order: the result is a function of the rows
// and rng.
func pqKMeans(rows []float32, sub, k, iters int, rng *rand.Rand) []float32 {
	s := len(rows) / sub
	cent := make([]float32, k*sub)
	for c, r := range rng.Perm(s)[:k] {
		copy(cent[c*sub:(c+1)*sub], rows[r*sub:(r+1)*sub])
	}
	assign := make([]int32, s)
	for i := range assign {
		assign[i] = -1
	}
	dists := make([]float32, s)
	bt := make([]float32, sub*pqCodebookSize)
	sums := make([]float64, k*sub)
	counts := make([]int, k)
	var acc [pqCodebookSize]float32
	for it := 0; it < iters; it++ {
		transposeBook(bt, cent, sub)
		changed := 0
		for r := 0; r < s; r++ {
			c, d := nearestT(bt, k, rows[r*sub:(r+1)*sub], &acc)
			if int32(c) != assign[r] {
				changed++
				assign[r] = int32(c)
			}
			dists[r] = d
		}
		clear(sums)
		clear(counts)
		for r := 0; r < s; r++ {
			c := int(assign[r])
			counts[c]++
			for i, v := range rows[r*sub : (r+1)*sub] {
				sums[c*sub+i] += float64(v)
			}
		}
		for c := 0; c < k; c++ {
			if counts[c] > 0 {
				for i := 0; i < sub; i++ {
					cent[c*sub+i] = float32(sums[c*sub+i] / float64(counts[c]))
				}
				continue
			}
			far := 0
			for r, d := range dists {
				if d > dists[far] {
					far = r
				}
			}
			copy(cent[c*sub:(c+1)*sub], rows[far*sub:(far+1)*sub])
			dists[far] = 0
		}
		if changed <= s/1000 {
			break
		}
	}
	return cent
}

// runWorkers runs fn on n ≥ 1 goroutines and waits for them.
func runWorkers(n int, fn func()) {
	n = max(n, 1)
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			fn()
		}()
	}
	for range n {
		<-done
	}
}

// residual sets dst to v minus centroid c; v is normalized first for
// Cosine (whose centroids are unit vectors).
func residual(dst, v, c []float32, metric Metric) {
	copy(dst, v)
	if metric == Cosine {
		normalize(dst)
	}
	for i := range dst {
		dst[i] -= c[i]
	}
}

// encode appends the code of residual r (dim floats) to dst: the nearest
// codeword of each sub-space.
func (q *pqCodebook) encode(dst []uint8, r []float32, acc *[pqCodebookSize]float32) []uint8 {
	st := q.sub * pqCodebookSize
	for j := 0; j < q.m; j++ {
		c, _ := nearestT(q.bt[j*st:(j+1)*st], q.k, r[j*q.sub:(j+1)*q.sub], acc)
		dst = append(dst, uint8(c))
	}
	return dst
}

// decode appends the residual code stands for to dst.
func (q *pqCodebook) decode(dst []float32, code []uint8) []float32 {
	for j, c := range code {
		off := (j*q.k + int(c)) * q.sub
		dst = append(dst, q.books[off:off+q.sub]...)
	}
	return dst
}

// l2Table fills t (m*256 floats; entry j*256+c) with the squared L2
// distance from sub-vector j of r to codeword c of sub-space j.
func (q *pqCodebook) l2Table(t, r []float32) {
	for j := 0; j < q.m; j++ {
		Distances(L2, r[j*q.sub:(j+1)*q.sub], q.books[j*q.k*q.sub:(j+1)*q.k*q.sub], q.sub, t[j*pqCodebookSize:j*pqCodebookSize+q.k])
	}
}

// dotTable fills t (m*256 floats) with the dot product of sub-vector j of
// r with codeword c of sub-space j.
func (q *pqCodebook) dotTable(t, r []float32) {
	for j := 0; j < q.m; j++ {
		rs := r[j*q.sub : (j+1)*q.sub]
		for c := 0; c < q.k; c++ {
			t[j*pqCodebookSize+c] = dot(rs, q.books[(j*q.k+c)*q.sub:(j*q.k+c+1)*q.sub])
		}
	}
}

// pqSum is the table lookup of one code: Σ_j t[j*256 + code[j]].
func pqSum(t []float32, code []uint8) float32 {
	var s0, s1 float32
	j := 0
	for ; j+1 < len(code); j += 2 {
		s0 += t[j*pqCodebookSize+int(code[j])]
		s1 += t[(j+1)*pqCodebookSize+int(code[j+1])]
	}
	if j < len(code) {
		s0 += t[j*pqCodebookSize+int(code[j])]
	}
	return s0 + s1
}

// pqQuery scores PQ codes (residuals to partition centroids) against one
// query. Its distance is the metric's distance from the query to the
// decoded vector x̂ = centroid + decoded residual: for L2 ‖q − x̂‖² from a
// table per partition; for Dot 1 − q·x̂ from one table per query plus
// q·centroid; for Cosine 1 − q̂·x̂/‖x̂‖ (q̂ the normalized query), with
// ‖x̂‖² = 1 + Σ (2 c·codeword + ‖codeword‖²) from a second table per
// partition. It is not safe for concurrent use.
type pqQuery struct {
	x     *IVF
	q     []float32 // the query, normalized for Cosine
	tab   []float32 // m*256: per partition for L2, per query otherwise
	norm  []float32 // Cosine, m*256 per partition: 2 c·codeword + ‖codeword‖²
	r     []float32 // L2 scratch: query minus centroid
	part  int       // partition tab and konst are for; -1 none
	konst float32   // Dot/Cosine: q·centroid of part
}

func newPQQuery(x *IVF, query []float32) *pqQuery {
	pq := &pqQuery{x: x, q: query, tab: make([]float32, x.pq.m*pqCodebookSize), part: -1}
	if x.metric == Cosine {
		pq.q = append([]float32(nil), query...)
		normalize(pq.q)
	}
	if x.metric == Cosine {
		pq.norm = make([]float32, x.pq.m*pqCodebookSize)
	}
	if x.metric == L2 {
		pq.r = make([]float32, x.dim)
	} else {
		x.pq.dotTable(pq.tab, pq.q)
	}
	return pq
}

// setPartition prepares scoring codes of partition p.
func (pq *pqQuery) setPartition(p int) {
	if pq.part == p {
		return
	}
	pq.part = p
	x := pq.x
	c := x.centroids[p*x.dim : (p+1)*x.dim]
	if x.metric == L2 {
		for i, v := range pq.q {
			pq.r[i] = v - c[i]
		}
		x.pq.l2Table(pq.tab, pq.r)
		return
	}
	if x.pqRaw {
		return // pq.konst stays 0: the codes are of the vectors
	}
	pq.konst = dot(pq.q, c)
	if pq.norm != nil {
		b := x.pq
		for j := 0; j < b.m; j++ {
			cs := c[j*b.sub : (j+1)*b.sub]
			for k := 0; k < b.k; k++ {
				w := b.books[(j*b.k+k)*b.sub : (j*b.k+k+1)*b.sub]
				pq.norm[j*pqCodebookSize+k] = 2*dot(cs, w) + dot(w, w)
			}
		}
	}
}

// distance scores a code of the current partition.
func (pq *pqQuery) distance(code []uint8) float32 {
	s := pqSum(pq.tab, code)
	switch pq.x.metric {
	case Dot:
		return 1 - (pq.konst + s)
	case Cosine:
		n2 := 1 + pqSum(pq.norm, code)
		if n2 <= 0 {
			return 1
		}
		return 1 - (pq.konst+s)/float32(math.Sqrt(float64(n2)))
	}
	return s
}
