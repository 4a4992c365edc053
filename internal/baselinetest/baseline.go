// Package baselinetest generates the vector workload of the real-Lance
// baseline (shared/bench/lance-baseline.mjs) bit for bit, for the vector
// package's tests and the bench suites: one generator, so that the data
// tests tune against is the data the benchmarks compare on.
package baselinetest

import (
	"math"
	"strconv"
)

// RNG is the PRNG of lance-baseline.mjs (mulberry32), bit for bit:
// JavaScript's Math.imul is a wrapping uint32 product.
type RNG = mulberry32

// NewRNG returns the script's mulberry32(seed).
func NewRNG(seed uint32) *RNG { return &mulberry32{seed} }

// Float is the script's next uniform draw in [0, 1).
func (r *mulberry32) Float() float64 { return r.float() }

// Gauss is the script's Box–Muller N(0, 1) draw.
func (r *mulberry32) Gauss() float64 { return r.gauss() }

type mulberry32 struct{ a uint32 }

func (r *mulberry32) float() float64 {
	r.a += 0x6D2B79F5
	t := r.a
	t = (t ^ t>>15) * (t | 1)
	t ^= t + (t^t>>7)*(t|61)
	return float64(t^t>>14) / 4294967296
}

// gauss is the script's Box–Muller draw.
func (r *mulberry32) gauss() float64 {
	u := 0.0
	for u == 0 {
		u = r.float()
	}
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// Clustered draws the lance-baseline vector workload: centers centres with
// N(0,1) coordinates, then n vectors and nq queries, each a uniformly drawn
// centre plus N(0, 0.5²) noise per coordinate, all from one mulberry32
// stream seeded with seed, in the script's order. With n = 200000, dim =
// 128, centers = 256, nq = 100 and seed 12345 it reproduces the baseline's
// table and queries (up to last-bit libm differences between Go and V8 that
// rounding to float32 almost always hides).
//
// Both results are packed row-major: vector i is vectors[i*dim:(i+1)*dim].
func Clustered(n, dim, centers, nq int, seed uint32) (vectors, queries []float32) {
	vectors, queries, _ = draw(n, dim, centers, nq, seed, false)
	return vectors, queries
}

// TextBytes is the length of the workload's texts: "row <i>:" followed by
// words, cut at 50 characters (all ASCII).
const TextBytes = 50

// words are lance-baseline.mjs's WORDS, in its order.
var words = []string{"lance", "arrow", "vector", "column", "fragment", "manifest", "index", "query", "image", "video",
	"audio", "text", "blob", "dataset", "table", "scan", "filter", "search", "embedding", "model"}

// Workload draws the whole lance-baseline table from one stream: Clustered's
// vectors and queries, then the n texts ("row <i>:" plus words drawn
// uniformly from the script's 20 until the text is at least TextBytes
// long, cut there).
func Workload(n, dim, centers, nq int, seed uint32) (vectors, queries []float32, texts []string) {
	return draw(n, dim, centers, nq, seed, true)
}

func draw(n, dim, centers, nq int, seed uint32, withTexts bool) (vectors, queries []float32, texts []string) {
	r := &mulberry32{seed}
	c := make([]float32, centers*dim)
	for i := range c {
		c[i] = float32(r.gauss())
	}
	rows := func(count int) []float32 {
		out := make([]float32, count*dim)
		for i := 0; i < count; i++ {
			k := int(math.Floor(r.float() * float64(centers)))
			for d := 0; d < dim; d++ {
				out[i*dim+d] = float32(float64(c[k*dim+d]) + 0.5*r.gauss())
			}
		}
		return out
	}
	vectors = rows(n)
	queries = rows(nq)
	if !withTexts {
		return vectors, queries, nil
	}
	texts = make([]string, n)
	buf := make([]byte, 0, 64)
	for i := range texts {
		buf = append(buf[:0], "row "...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, ':')
		for len(buf) < TextBytes {
			buf = append(buf, ' ')
			buf = append(buf, words[int(math.Floor(r.float()*float64(len(words))))]...)
		}
		texts[i] = string(buf[:TextBytes])
	}
	return vectors, queries, texts
}
