package vector

import (
	"math"
	"slices"
)

// mulberry32 is the PRNG of /work/shared/bench/lance-baseline.mjs, bit for
// bit: JavaScript's Math.imul is a wrapping uint32 product.
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

// clusteredData draws the lance-baseline workload: ncenters centres with
// N(0,1) coordinates, then n vectors and nq queries, each a random centre
// plus N(0, 0.5²) noise per coordinate, all from one mulberry32 stream in the
// script's order. With n = 200000, dim = 128, ncenters = 256, nq = 100 and
// seed 12345 it reproduces the script's table and queries (up to libm
// last-bit differences between Go and V8 that rounding to float32 almost
// always hides).
func clusteredData(n, nq, dim, ncenters int, seed uint32) (vecs, queries []float32) {
	r := &mulberry32{seed}
	centers := make([]float32, ncenters*dim)
	for i := range centers {
		centers[i] = float32(r.gauss())
	}
	draw := func(count int) []float32 {
		out := make([]float32, count*dim)
		for i := 0; i < count; i++ {
			c := int(math.Floor(r.float() * float64(ncenters)))
			for d := 0; d < dim; d++ {
				out[i*dim+d] = float32(float64(centers[c*dim+d]) + 0.5*r.gauss())
			}
		}
		return out
	}
	vecs = draw(n)
	queries = draw(nq)
	return vecs, queries
}

// lanceBaselineData is the lance-baseline workload with n rows (200000 in
// the baseline) and its 100 queries.
func lanceBaselineData(n int) (vecs, queries []float32) {
	return clusteredData(n, 100, 128, 256, 12345)
}

// hnswBrute returns the exact k nearest of q among vecs whose id accept
// admits (nil: all), ties broken by id, as FlatSearch would.
func hnswBrute(vecs []float32, dim int, q []float32, k int, m Metric, accept func(uint64) bool) []Neighbor {
	dist := m.Func()
	var all []Neighbor
	for i := 0; i < len(vecs)/dim; i++ {
		if accept != nil && !accept(uint64(i)) {
			continue
		}
		all = append(all, Neighbor{uint64(i), dist(q, vecs[i*dim:(i+1)*dim])})
	}
	slices.SortFunc(all, func(a, b Neighbor) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return all[:min(k, len(all))]
}

// recallAt returns |got ∩ want| / |want| over ids.
func recallAt(got, want []Neighbor) float64 {
	if len(want) == 0 {
		return 1
	}
	ids := make(map[uint64]bool, len(want))
	for _, w := range want {
		ids[w.ID] = true
	}
	hit := 0
	for _, g := range got {
		if ids[g.ID] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}
