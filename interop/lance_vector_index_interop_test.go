package interop_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lanceIndexRequest extends vecRequest with the index and search
// parameters lance-ops.mjs passes to LanceDB.
type lanceIndexRequest struct {
	vecRequest
	IndexOptions map[string]any `json:"indexOptions,omitempty"`
	NProbes      int            `json:"nprobes,omitempty"`
	Ef           int            `json:"ef,omitempty"`
	RefineFactor int            `json:"refineFactor,omitempty"`
}

// TestLancerSearchesLanceIndices: real Lance builds each vector index type
// its LanceDB API offers on a table lancer wrote; lancer's Search over
// Lance's index files returns Lance's rows with Lance's distances, for the
// same k, nprobes, ef and refine factor, both with every fragment indexed
// (the index's quantized distances) and after Lance appends an unindexed
// fragment and deletes rows (candidates re-scored exactly, merged with an
// exact scan, deleted rows never returned).
func TestLancerSearchesLanceIndices(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, extra, clusters = 32, 1500, 60, 12
	rng := rand.New(rand.NewPCG(7, 17))
	centers := make([]float32, clusters*dim)
	for i := range centers {
		centers[i] = float32(rng.NormFloat64() * 4)
	}
	vecs := make([]float32, (n+extra)*dim)
	for i := range n + extra {
		c := rng.IntN(clusters)
		for j := range dim {
			vecs[i*dim+j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
	}
	// Enough queries that "at least 99%" (HNSW, below) can be measured:
	// with a few dozen it would demand every one.
	queries := make([][]float32, 100)
	for i := range queries {
		q := make([]float32, dim)
		c := rng.IntN(clusters)
		for j := range q {
			q[j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
		queries[i] = q
	}
	type search struct {
		k, nprobes, ef, refine int
	}
	cases := []struct {
		name, typ string
		opts      map[string]any
		hnsw      bool
		searches  []search
	}{
		{"IVF_PQ", "ivfPq", map[string]any{"numPartitions": 6, "numSubVectors": 8}, false, []search{{10, 2, 0, 0}, {10, 6, 0, 0}, {5, 3, 0, 2}}},
		{"IVF_PQ 4-bit", "ivfPq", map[string]any{"numPartitions": 4, "numSubVectors": 16, "numBits": 4}, false, []search{{10, 2, 0, 0}, {10, 4, 0, 0}, {5, 3, 0, 2}}},
		{"IVF_PQ 4-bit cosine", "ivfPq", map[string]any{"numPartitions": 4, "numSubVectors": 8, "numBits": 4, "distanceType": "cosine"}, false, []search{{10, 2, 0, 0}, {5, 3, 0, 2}}},
		{"IVF_PQ 4-bit dot", "ivfPq", map[string]any{"numPartitions": 4, "numSubVectors": 8, "numBits": 4, "distanceType": "dot"}, false, []search{{10, 2, 0, 0}, {5, 3, 0, 2}}},
		{"IVF_PQ cosine", "ivfPq", map[string]any{"numPartitions": 4, "numSubVectors": 8, "distanceType": "cosine"}, false, []search{{10, 2, 0, 0}}},
		{"IVF_FLAT", "ivfFlat", map[string]any{"numPartitions": 6}, false, []search{{10, 2, 0, 0}, {7, 4, 0, 0}}},
		{"IVF_HNSW_SQ", "hnswSq", map[string]any{"numPartitions": 3}, true, []search{{10, 2, 40, 0}, {10, 3, 0, 0}}},
		{"IVF_HNSW_PQ", "hnswPq", map[string]any{"numPartitions": 3, "numSubVectors": 8}, true, []search{{10, 2, 40, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewGoAllocator()
			var d *dataset.Dataset
			for from := 0; from < n; from += n / 2 {
				r := vecBatch(mem, vecs, dim, from, from+n/2)
				if d == nil {
					d, err = dataset.Write(ctx, store, r, nil)
				} else {
					d, err = d.Append(ctx, r, nil)
				}
				r.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			ask := func(reqs ...lanceIndexRequest) []vecReply {
				t.Helper()
				replies, err := askLance(node, ref, reqs)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range replies {
					if r.Error != "" {
						t.Fatalf("real Lance refused %s: %s", reqs[i].Op, r.Error)
					}
				}
				return replies
			}
			ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: tc.typ}, IndexOptions: tc.opts})
			compare := func(stage string) {
				t.Helper()
				var reqs []lanceIndexRequest
				for _, s := range tc.searches {
					for _, q := range queries {
						reqs = append(reqs, lanceIndexRequest{
							vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: s.k, Select: []string{"id"}},
							NProbes:    s.nprobes, Ef: s.ef, RefineFactor: s.refine,
						})
					}
				}
				replies := ask(reqs...)
				d, err := openDir(ctx, uri, nil)
				if err != nil {
					t.Fatal(err)
				}
				mismatched := 0
				for i, req := range reqs {
					want := lanceHits(t, replies[i])
					rec, err := d.Search(ctx, "vec", req.Vector, &dataset.SearchOptions{K: req.K, NProbes: req.NProbes, Ef: req.Ef, RefineFactor: req.RefineFactor, Columns: []string{"id"}})
					if err != nil {
						t.Fatalf("%s: lancer search: %v", stage, err)
					}
					ids := rec.Column(0).(*array.Int64).Int64Values()
					dist := rec.Column(1).(*array.Float32).Float32Values()
					same := sameHits(ids, dist, want, tc.hnsw)
					if !same {
						mismatched++
						t.Logf("%s: query %d (k %d nprobes %d ef %d refine %d): lancer %v %v, Lance %v", stage, i, req.K, req.NProbes, req.Ef, req.RefineFactor, ids, dist, want)
					}
					rec.Release()
				}
				// Identical for PQ and flat sub-indices; HNSW: the same top
				// k (ties at the k-th distance aside) on at least 99% of the
				// queries (issue #17). Lance builds its HNSW graphs in
				// parallel, so each run gets one of a few graphs; on some, a
				// query or two of hundreds ends its beam elsewhere in Lance
				// (measured: 1 of 400 searches on such a graph, the same
				// query every time, Lance's own answer on the graph
				// deterministic).
				allowed := 0
				if tc.hnsw {
					allowed = len(reqs) / 100
				}
				if mismatched > allowed {
					t.Errorf("%s: %d of %d searches differ from Lance's", stage, mismatched, len(reqs))
				}
			}
			compare("indexed")
			var rows []map[string]any
			for i := n; i < n+extra; i++ {
				rows = append(rows, map[string]any{"id": i, "category": fmt.Sprintf("c%d", i%5), "vec": vecs[i*dim : (i+1)*dim]})
			}
			ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: rows}},
				lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}})
			compare("appended and deleted")
		})
	}
}

func askLance(node, ref string, reqs []lanceIndexRequest) ([]vecReply, error) {
	return lancereftest.Ask[lanceIndexRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
}

// sameHits reports whether lancer's answer is Lance's: the same ids with
// the same distances (to float32 rounding of Lance's SIMD sums). With
// ties, set tied, rows as far as the k-th may differ (Lance's HNSW keeps
// whichever of equally distant rows its heaps happen to keep); the
// distances still must agree.
func sameHits(ids []int64, dist []float32, want []lanceHit, tied bool) bool {
	if len(ids) != len(want) {
		return false
	}
	closeTo := func(a, b float32) bool {
		return math.Abs(float64(a-b)) <= 2e-5*math.Max(1, math.Abs(float64(b)))
	}
	for j := range want {
		if !closeTo(dist[j], want[j].Distance) {
			return false
		}
		if ids[j] != want[j].ID && !(tied && closeTo(want[j].Distance, want[len(want)-1].Distance)) {
			return false
		}
	}
	return true
}
