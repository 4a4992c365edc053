package vector

import (
	"fmt"
	"math"

	"github.com/lancerdb/lancer"
)

// SQ8 is 8-bit scalar quantization: dimension i maps [Min[i], Max[i]]
// linearly onto the codes 0..255, so a vector of dim float32s becomes dim
// bytes, 4× smaller. Values outside the trained range clamp to its ends.
//
// Lance's SQ trains one range for all dimensions; SQ8 keeps one per
// dimension, which costs 8 bytes per dimension of metadata and loses less
// on data whose dimensions have different spreads.
//
// Searches score candidates against codes with an asymmetric distance (a
// float32 query against decoded codes, see SQ8Query) and re-rank the best
// few with exact distances (Rerank). An SQ8 is immutable and safe for
// concurrent use.
type SQ8 struct {
	min, max []float32
	step     []float32 // (max-min)/255: the decoded value is min + step*code
	inv      []float32 // 1/step, 0 where step is 0
}

// TrainSQ8 learns per-dimension ranges from sample, packed rows of dim
// float32s (a random sample of a few thousand rows is enough).
func TrainSQ8(sample []float32, dim int) (*SQ8, error) {
	if dim <= 0 || len(sample) == 0 || len(sample)%dim != 0 {
		return nil, fmt.Errorf("vector: SQ8 needs a non-empty sample of whole %d-dimension rows, got %d values: %w", dim, len(sample), lancer.ErrInvalidArgument)
	}
	lo := make([]float32, dim)
	hi := make([]float32, dim)
	copy(lo, sample[:dim])
	copy(hi, sample[:dim])
	for r := dim; r < len(sample); r += dim {
		row := sample[r : r+dim]
		for i, x := range row {
			lo[i] = min(lo[i], x)
			hi[i] = max(hi[i], x)
		}
	}
	return NewSQ8(lo, hi)
}

// NewSQ8 returns the quantizer with the given per-dimension ranges, as
// reported by Min and Max (for persistence). It keeps neither slice.
func NewSQ8(lo, hi []float32) (*SQ8, error) {
	if len(lo) == 0 || len(lo) != len(hi) {
		return nil, fmt.Errorf("vector: SQ8 ranges have %d minimums and %d maximums: %w", len(lo), len(hi), lancer.ErrInvalidArgument)
	}
	dim := len(lo)
	q := &SQ8{
		min:  append([]float32(nil), lo...),
		max:  append([]float32(nil), hi...),
		step: make([]float32, dim),
		inv:  make([]float32, dim),
	}
	for i := range dim {
		l, h := lo[i], hi[i]
		if !(l <= h) || math.IsInf(float64(l), 0) || math.IsInf(float64(h), 0) {
			return nil, fmt.Errorf("vector: SQ8 range %d is [%v, %v]: %w", i, l, h, lancer.ErrInvalidArgument)
		}
		if h > l {
			q.step[i] = (h - l) / 255
			q.inv[i] = 255 / (h - l)
		}
	}
	return q, nil
}

// Dim returns the vector dimension.
func (q *SQ8) Dim() int { return len(q.min) }

// Min returns the per-dimension minimums (do not modify).
func (q *SQ8) Min() []float32 { return q.min }

// Max returns the per-dimension maximums (do not modify).
func (q *SQ8) Max() []float32 { return q.max }

// Encode appends the code of v (Dim values) to dst and returns it.
func (q *SQ8) Encode(dst []uint8, v []float32) []uint8 {
	if len(v) != len(q.min) {
		panic("vector: SQ8.Encode: wrong dimension")
	}
	for i, x := range v {
		f := (x-q.min[i])*q.inv[i] + 0.5
		var c uint8
		switch {
		case f >= 255:
			c = 255
		case f > 0: // also false for NaN, which encodes as 0
			c = uint8(f)
		}
		dst = append(dst, c)
	}
	return dst
}

// EncodeAll appends the codes of vectors (packed rows of Dim float32s) to
// dst and returns it.
func (q *SQ8) EncodeAll(dst []uint8, vectors []float32) []uint8 {
	dim := len(q.min)
	if len(vectors)%dim != 0 {
		panic("vector: SQ8.EncodeAll: not whole rows")
	}
	dst = growBytes(dst, len(vectors))
	for r := 0; r < len(vectors); r += dim {
		dst = q.Encode(dst, vectors[r:r+dim])
	}
	return dst
}

func growBytes(b []uint8, n int) []uint8 {
	if cap(b)-len(b) < n {
		nb := make([]uint8, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}

// Decode appends the vector code stands for to dst and returns it.
func (q *SQ8) Decode(dst []float32, code []uint8) []float32 {
	if len(code) != len(q.min) {
		panic("vector: SQ8.Decode: wrong dimension")
	}
	for i, c := range code {
		dst = append(dst, q.min[i]+q.step[i]*float32(c))
	}
	return dst
}

// SQ8Query scores codes against one float32 query: the distance under its
// metric between the query and the decoded code, with the per-dimension
// terms that depend only on the query computed once. It is immutable and
// safe for concurrent use.
type SQ8Query struct {
	q      *SQ8
	m      Metric
	query  []float32 // cosine: the query
	pre    []float32 // L2: query - min; dot: query * step
	konst  float32   // dot: Σ query*min
	qnorm2 float32   // cosine: |query|²
}

// Query prepares the asymmetric distance under m from query to codes.
func (q *SQ8) Query(m Metric, query []float32) *SQ8Query {
	if len(query) != len(q.min) {
		panic("vector: SQ8.Query: wrong dimension")
	}
	s := &SQ8Query{q: q, m: m}
	switch m {
	case Cosine:
		s.query = append([]float32(nil), query...)
		s.qnorm2 = dot(query, query)
	case Dot:
		s.pre = make([]float32, len(query))
		for i, x := range query {
			s.pre[i] = x * q.step[i]
		}
		s.konst = dot(query, q.min)
	default:
		s.pre = make([]float32, len(query))
		for i, x := range query {
			s.pre[i] = x - q.min[i]
		}
	}
	return s
}

// Distance returns the distance from the query to the vector code decodes
// to. len(code) must be the quantizer's dimension.
func (s *SQ8Query) Distance(code []uint8) float32 {
	switch s.m {
	case Cosine:
		d, nx := sq8Cosine(s.query, s.q.min, s.q.step, code)
		return cosineFromParts(d, s.qnorm2, nx)
	case Dot:
		return 1 - (s.konst + sq8Dot(s.pre, code))
	}
	return sq8L2(s.pre, s.q.step, code)
}

// Search returns the k codes (packed, Dim bytes each; IDs are row
// positions) nearest to query under the asymmetric distance, nearest
// first, restricted to allow when it is not nil. Follow it with Rerank over
// a few times k candidates for exact distances.
func (q *SQ8) Search(codes []uint8, query []float32, k int, m Metric, allow Filter) []Neighbor {
	dim := len(q.min)
	if len(codes)%dim != 0 {
		panic("vector: SQ8.Search: not whole codes")
	}
	s := q.Query(m, query)
	t := NewTopK(k)
	if k <= 0 {
		return t.Sorted()
	}
	n := len(codes) / dim
	score := func(i int) {
		t.Push(uint64(i), s.Distance(codes[i*dim:(i+1)*dim]))
	}
	switch f := allow.(type) {
	case nil:
		worst := t.Worst()
		for i := range n {
			if d := s.Distance(codes[i*dim : (i+1)*dim]); d <= worst && t.Push(uint64(i), d) {
				worst = t.Worst()
			}
		}
	case *AllowList:
		it := f.iter(0)
		var ids [64]uint64
		for {
			c := nextIDs(it, uint64(n), ids[:])
			if c == 0 {
				break
			}
			for _, id := range ids[:c] {
				score(int(id))
			}
		}
	default:
		for i := range n {
			if f.Contains(uint64(i)) {
				score(i)
			}
		}
	}
	return t.Sorted()
}
