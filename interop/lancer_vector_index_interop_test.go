package interop_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/vector"
)

// lancerIndexRequest is a search (or its plan, with Explain) or
// listIndices asked of lance-ops.mjs.
type lancerIndexRequest struct {
	vecRequest
	NProbes int  `json:"nprobes,omitempty"`
	Explain bool `json:"explain,omitempty"`
}

type lancerIndexReply struct {
	vecReply
	Plan string `json:"plan"`
}

// TestLanceSearchesLancerIndices: lancer's CreateIndex writes every type in
// Lance's format (IVF_PQ of 8- and 4-bit codes, IVF_FLAT, IVF_SQ, IVF_HNSW_SQ, IVF_HNSW_FLAT,
// IVF_HNSW_PQ; l2,
// cosine and dot); real Lance lists each under its type, plans its
// searches through the index (ANN, not a flat scan) and finds what lancer
// finds: recall@10 against exact search within 0.01 of lancer's on the
// same queries.
func TestLanceSearchesLancerIndices(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, clusters, k, nprobes = 32, 2000, 10, 10, 3
	rng := rand.New(rand.NewPCG(17, 71))
	centers := make([]float32, clusters*dim)
	for i := range centers {
		centers[i] = float32(rng.NormFloat64() * 4)
	}
	vecs := make([]float32, n*dim)
	for i := range n {
		c := rng.IntN(clusters)
		for j := range dim {
			vecs[i*dim+j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
	}
	queries := make([][]float32, 20)
	for i := range queries {
		q := make([]float32, dim)
		c := rng.IntN(clusters)
		for j := range q {
			q[j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
		queries[i] = q
	}
	for _, tc := range []struct {
		name, typ, lanceType string
		metric               vector.Metric
		minRecall            float64
		pqBits               int
	}{
		{"IVF_PQ", dataset.IndexIVFPQ, "IvfPq", vector.L2, 0.5, 0},
		{"IVF_PQ cosine", dataset.IndexIVFPQ, "IvfPq", vector.Cosine, 0.5, 0},
		{"IVF_PQ dot", dataset.IndexIVFPQ, "IvfPq", vector.Dot, 0.3, 0},
		{"IVF_PQ 4-bit", dataset.IndexIVFPQ, "IvfPq", vector.L2, 0.3, 4},
		{"IVF_PQ 4-bit cosine", dataset.IndexIVFPQ, "IvfPq", vector.Cosine, 0.3, 4},
		{"IVF_PQ 4-bit dot", dataset.IndexIVFPQ, "IvfPq", vector.Dot, 0.1, 4},
		{"IVF_FLAT", dataset.IndexIVFFlat, "IvfFlat", vector.L2, 0.5, 0},
		{"IVF_FLAT cosine", dataset.IndexIVFFlat, "IvfFlat", vector.Cosine, 0.5, 0},
		{"IVF_FLAT dot", dataset.IndexIVFFlat, "IvfFlat", vector.Dot, 0.5, 0},
		{"IVF_SQ", dataset.IndexIVFSQ, "IvfSq", vector.L2, 0.5, 0},
		{"IVF_SQ cosine", dataset.IndexIVFSQ, "IvfSq", vector.Cosine, 0.5, 0},
		{"IVF_SQ dot", dataset.IndexIVFSQ, "IvfSq", vector.Dot, 0.5, 0},
		{"IVF_HNSW_SQ", dataset.IndexIVFHNSWSQ, "IvfHnswSq", vector.L2, 0.5, 0},
		{"IVF_HNSW_SQ cosine", dataset.IndexIVFHNSWSQ, "IvfHnswSq", vector.Cosine, 0.5, 0},
		{"IVF_HNSW_SQ dot", dataset.IndexIVFHNSWSQ, "IvfHnswSq", vector.Dot, 0.5, 0},
		{"IVF_HNSW_FLAT", dataset.IndexIVFHNSWFlat, "IvfHnswFlat", vector.L2, 0.5, 0},
		{"IVF_HNSW_FLAT cosine", dataset.IndexIVFHNSWFlat, "IvfHnswFlat", vector.Cosine, 0.5, 0},
		{"IVF_HNSW_PQ", dataset.IndexIVFHNSWPQ, "IvfHnswPq", vector.L2, 0.3, 0},
		{"IVF_HNSW_PQ cosine", dataset.IndexIVFHNSWPQ, "IvfHnswPq", vector.Cosine, 0.3, 0},
		{"HNSW", dataset.IndexHNSW, "IvfHnswSq", vector.L2, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			d := writeVecFragments(t, store, memory.NewGoAllocator(), vecs, dim, n, n/2)
			// 4-bit codes: twice the sub-vectors, the bytes of 8-bit's.
			subVectors := 8
			if tc.pqBits == 4 {
				subVectors = 16
			}
			d, err = d.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: tc.typ, Metric: tc.metric, Partitions: 8, SubVectors: subVectors, PQBits: tc.pqBits})
			if err != nil {
				t.Fatal(err)
			}
			metric := tc.metric.String()
			reqs := []lancerIndexRequest{
				{vecRequest: vecRequest{URI: uri, Op: "listIndices"}},
				{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: queries[0], K: k, DistanceType: metric, Select: []string{"id"}}, NProbes: nprobes, Explain: true},
			}
			for _, q := range queries {
				reqs = append(reqs, lancerIndexRequest{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: k, DistanceType: metric, Select: []string{"id"}}, NProbes: nprobes})
			}
			replies, err := lancereftest.Ask[lancerIndexRequest, lancerIndexReply](script(node, ref), "lance-ops.mjs", reqs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range replies {
				if r.Error != "" {
					t.Fatalf("real Lance refused %s: %s", reqs[i].Op, r.Error)
				}
			}
			ix := replies[0].Indices
			if len(ix) != 1 || ix[0].Name != "vec_idx" || ix[0].Type != tc.lanceType || !slices.Equal(ix[0].Columns, []string{"vec"}) {
				t.Fatalf("Lance lists %+v, want vec_idx of type %s on vec", ix, tc.lanceType)
			}
			plan := replies[1].Plan
			if !strings.Contains(plan, "ANNSubIndex") || !strings.Contains(plan, "ANNIvfPartition") {
				t.Fatalf("Lance's plan does not use the index:\n%s", plan)
			}
			t.Logf("Lance's plan:\n%s", plan)
			var lanceRecall, lancerRecall, same float64
			for qi, q := range queries {
				var exact []int64
				for _, h := range vector.FlatSearch(vecs, dim, q, k, tc.metric, nil) {
					exact = append(exact, int64(h.ID))
				}
				var lance []int64
				for _, raw := range replies[2+qi].Rows {
					var h lanceHit
					if err := json.Unmarshal(raw, &h); err != nil {
						t.Fatal(err)
					}
					lance = append(lance, h.ID)
				}
				rec, err := d.Search(ctx, "vec", q, &dataset.SearchOptions{K: k, NProbes: nprobes, Columns: []string{"id"}})
				if err != nil {
					t.Fatal(err)
				}
				lancer := slices.Clone(rec.Column(0).(*array.Int64).Int64Values())
				rec.Release()
				lanceRecall += overlap(lance, exact)
				lancerRecall += overlap(lancer, exact)
				same += overlap(lance, lancer)
			}
			nq := float64(len(queries))
			t.Logf("%s: recall@%d Lance %.3f, lancer %.3f; Lance's rows are lancer's %.3f", tc.name, k, lanceRecall/nq, lancerRecall/nq, same/nq)
			if math.Abs(lanceRecall-lancerRecall)/nq > 0.01 {
				t.Errorf("recall@%d: Lance %.3f over lancer's index, lancer %.3f", k, lanceRecall/nq, lancerRecall/nq)
			}
			if lancerRecall/nq < tc.minRecall {
				t.Errorf("lancer's recall@%d %.3f", k, lancerRecall/nq)
			}
		})
	}
}

// overlap is the fraction of want that got holds.
func overlap(got, want []int64) float64 {
	if len(want) == 0 {
		return 1
	}
	hit := 0
	for _, id := range got {
		if slices.Contains(want, id) {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}
