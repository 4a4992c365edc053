package dataset

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lancerdb/lancer/vector"
)

// TestSearchFlatParts checks the search of per-fragment vector sets in
// place against an exact search of their concatenation: parts empty, small
// and larger than a chunk, with and without a filter, on one worker and
// several.
func TestSearchFlatParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const dim = 8
	for round := range 40 {
		var parts []*flatVectorSet
		var all []float32
		var allIDs []uint64
		nextID := uint64(rng.IntN(100))
		for range rng.IntN(6) {
			n := rng.IntN(20000)
			if rng.IntN(4) == 0 {
				n = rng.IntN(5)
			}
			p := &flatVectorSet{vecs: make([]float32, n*dim), ids: make([]uint64, n)}
			for i := range p.vecs {
				p.vecs[i] = rng.Float32()
			}
			for i := range p.ids {
				p.ids[i] = nextID
				nextID += 1 + uint64(rng.IntN(3))
			}
			parts = append(parts, p)
			all = append(all, p.vecs...)
			allIDs = append(allIDs, p.ids...)
		}
		var allow *roaring64.Bitmap
		if rng.IntN(2) == 0 {
			allow = roaring64.New()
			for _, id := range allIDs {
				if rng.IntN(3) == 0 {
					allow.Add(id)
				}
			}
		}
		query := make([]float32, dim)
		for i := range query {
			query[i] = rng.Float32()
		}
		k := 1 + rng.IntN(50)
		m := []vector.Metric{vector.L2, vector.Cosine, vector.Dot}[rng.IntN(3)]
		var f vector.Filter
		if allow != nil {
			f = flatFilter{ids: allIDs, allow: allow}
		}
		want := vector.FlatSearch(all, dim, query, k, m, f)
		for i := range want {
			want[i].ID = allIDs[want[i].ID]
		}
		for _, workers := range []int{1, 3, 0} {
			got := searchFlatParts(parts, dim, query, k, m, allow, workers)
			if len(got) != len(want) {
				t.Fatalf("round %d workers %d: %d results, want %d", round, workers, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d workers %d: result %d is %+v, want %+v", round, workers, i, got[i], want[i])
				}
			}
		}
	}
}
