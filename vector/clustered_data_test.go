package vector

import (
	"slices"

	"github.com/lancerdb/lancer/internal/baselinetest"
)

// clusteredData draws the lance-baseline workload (see package
// internal/baselinetest): ncenters centres, n vectors and nq queries.
func clusteredData(n, nq, dim, ncenters int, seed uint32) (vecs, queries []float32) {
	return baselinetest.Clustered(n, dim, ncenters, nq, seed)
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
