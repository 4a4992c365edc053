package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExhaustiveBeamIsBeam: wherever exhaustiveBeam answers (ef at least
// the partition's nodes), it answers what beam does, cut to k: on random
// directed graphs with unreachable nodes, prefilters, and distances drawn
// from few values (ties) or with NaNs, where it must hand back to beam.
func TestExhaustiveBeamIsBeam(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	answered, declined := 0, 0
	for trial := range 3000 {
		n := 1 + r.IntN(300)
		part := &partition{bottom: make([][]uint32, n)}
		degree := 1 + r.IntN(12)
		for i := range part.bottom {
			for range r.IntN(degree + 1) {
				part.bottom[i] = append(part.bottom[i], uint32(r.IntN(n)))
			}
		}
		values := 1 << (1 + r.IntN(20)) // few distinct distances: ties
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(r.IntN(values))
			if trial%50 == 0 && r.IntN(40) == 0 {
				d[i] = float32(math.NaN())
			}
		}
		dist := func(i uint32) float32 { return d[i] }
		var allowed []bool
		if trial%3 == 1 {
			allowed = make([]bool, n)
			for i := range allowed {
				allowed[i] = r.IntN(3) != 0
			}
		}
		ep := uint32(r.IntN(n))
		k := 1 + r.IntN(20)
		ef := n + r.IntN(3)
		got := exhaustiveBeam(part, node{ep, d[ep]}, k, dist, allowed)
		if got == nil {
			declined++
			continue
		}
		answered++
		want := beam(part, node{ep, d[ep]}, max(ef, k), dist, allowed)
		if len(want) > k {
			want = want[:k]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (n %d, k %d, ef %d, filter %v): exhaustiveBeam %v, beam %v", trial, n, k, ef, allowed != nil, got, want)
		}
	}
	if answered < 500 || declined < 100 {
		t.Fatalf("answered %d, declined %d: the trials should exercise both", answered, declined)
	}

}
