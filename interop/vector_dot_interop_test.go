package interop_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/vector"
)

// TestDotDistanceMatchesLance: Lance's "dot" distance is 1 − a·b
// (lance-linalg's dot_distance). Real Lance's flat search with metric dot
// and lancer's, exact and through its own IVF index probing every
// partition, return the same rows in the same order with the same
// _distance on the same data. Before lancer reported −a·b, off by exactly
// one.
func TestDotDistanceMatchesLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, k = 16, 1200, 10
	rng := rand.New(rand.NewPCG(7, 17))
	vecs := make([]float32, n*dim)
	for i := range vecs {
		vecs[i] = float32(rng.NormFloat64())
	}
	uri := filepath.Join(t.TempDir(), "dot.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := writeVecFragments(t, store, mem, vecs, dim, n, 400) // 3 fragments
	queries := [][]float32{vecs[3*dim : 4*dim], make([]float32, dim)}
	for i := range queries[1] {
		queries[1][i] = float32(rng.NormFloat64()) * 3
	}
	var reqs []vecRequest
	for _, q := range queries {
		reqs = append(reqs, vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: k, DistanceType: "dot", Select: []string{"id"}})
	}
	replies := vecOps(t, node, ref, reqs...)

	indexed, err := d.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: dataset.IndexIVFFlat, Metric: vector.Dot, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	for qi, q := range queries {
		want := lanceHits(t, replies[qi])
		if len(want) != k {
			t.Fatalf("query %d: Lance returned %d rows", qi, len(want))
		}
		for i, h := range want {
			// Lance's _distance is 1 − q·v of the row it returns.
			dot := vector.DotProduct(q, vecs[h.ID*dim:(h.ID+1)*dim])
			if !closeDistance(h.Distance, 1-dot) {
				t.Fatalf("query %d hit %d (id %d): Lance's _distance %v, 1 − q·v = %v", qi, i, h.ID, h.Distance, 1-dot)
			}
		}
		for _, c := range []struct {
			name string
			d    *dataset.Dataset
			opts dataset.SearchOptions
		}{
			{"exact", d, dataset.SearchOptions{K: k, Metric: "dot", Columns: []string{"id"}}},
			{"ivf_flat, every partition", indexed, dataset.SearchOptions{K: k, Metric: "dot", NProbes: 4, Columns: []string{"id"}}},
		} {
			rec, err := c.d.Search(ctx, "vec", q, &c.opts)
			if err != nil {
				t.Fatalf("query %d, %s: %v", qi, c.name, err)
			}
			ids := rec.Column(0).(*array.Int64).Int64Values()
			dists := rec.Column(int(rec.NumCols()) - 1).(*array.Float32).Float32Values()
			if len(ids) != k {
				t.Fatalf("query %d, %s: %d rows", qi, c.name, len(ids))
			}
			for i, h := range want {
				if ids[i] != h.ID || !closeDistance(dists[i], h.Distance) {
					t.Errorf("query %d, %s, hit %d: lancer id %d _distance %v, Lance id %d _distance %v", qi, c.name, i, ids[i], dists[i], h.ID, h.Distance)
				}
			}
			rec.Release()
		}
	}
}

// closeDistance compares float32 distances summed in different orders
// (Lance's kernels and lancer's).
func closeDistance(a, b float32) bool {
	return math.Abs(float64(a)-float64(b)) <= 1e-4*(1+math.Abs(float64(b)))
}
