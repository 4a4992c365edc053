package interop_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset"
)

// TestLegacyIndexAgreesWithLance: the datasets of
// dataset/testdata/legacy_ivfpq carry Lance's legacy IVF_PQ index file
// (written by Lance 0.10.18). Real Lance 12 and lancer search them alike
// (ids and distances, with nprobes, refine and a prefilter), after Lance
// appends and deletes rows, and after lancer deletes rows (which Lance
// then honours through the same index).
func TestLegacyIndexAgreesWithLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(31, 7))
	queries := make([][]float32, 8)
	for i := range queries {
		q := make([]float32, 16)
		c := rng.IntN(8)
		for j := range q {
			q[j] = float32(rng.NormFloat64())
			if j%8 == c {
				q[j] += 4
			}
		}
		queries[i] = q
	}
	type search struct {
		k, nprobes, refine int
		filter             string
	}
	searches := []search{{10, 1, 0, ""}, {10, 3, 0, ""}, {5, 2, 3, ""}, {10, 4, 0, "id < 200"}}
	for _, tc := range []struct{ name, metric string }{{"ivfpq_l2", "l2"}, {"ivfpq_cosine", "cosine"}} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), tc.name+".lance")
			if err := os.CopyFS(uri, os.DirFS(filepath.Join("..", "dataset", "testdata", "legacy_ivfpq", tc.name+".lance"))); err != nil {
				t.Fatal(err)
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
			compare := func(stage string) {
				t.Helper()
				var reqs []lanceIndexRequest
				for _, s := range searches {
					for _, q := range queries {
						reqs = append(reqs, lanceIndexRequest{
							vecRequest: vecRequest{URI: uri, Op: "search", Column: "vector", Vector: q, K: s.k, Filter: s.filter,
								DistanceType: tc.metric, Select: []string{"id"}},
							NProbes: s.nprobes, RefineFactor: s.refine,
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
					var plan dataset.SearchPlan
					rec, err := d.Search(ctx, "vector", req.Vector, &dataset.SearchOptions{K: req.K, NProbes: req.NProbes,
						RefineFactor: req.RefineFactor, Filter: req.Filter, Metric: tc.metric, Columns: []string{"id"}, Plan: &plan})
					if err != nil {
						t.Fatalf("%s: lancer search: %v", stage, err)
					}
					if !plan.Legacy || plan.IndexType != "IvfPq" {
						t.Fatalf("%s: plan %+v", stage, plan)
					}
					var ids []int64
					for _, v := range rec.Column(0).(*array.Float64).Float64Values() {
						ids = append(ids, int64(v))
					}
					dist := rec.Column(1).(*array.Float32).Float32Values()
					if !sameHits(ids, dist, want, false) {
						mismatched++
						t.Logf("%s: query %d (k %d nprobes %d refine %d filter %q): lancer %v %v, Lance %v", stage, i, req.K, req.NProbes, req.RefineFactor, req.Filter, ids, dist, want)
					}
					rec.Release()
				}
				if mismatched > 0 {
					t.Errorf("%s: %d of %d searches differ from Lance's", stage, mismatched, len(reqs))
				}
			}
			compare("as Lance 0.10.18 wrote it")
			var rows []map[string]any
			for i := range 40 {
				v := make([]float32, 16)
				for j := range v {
					v[j] = float32(rng.NormFloat64())
				}
				rows = append(rows, map[string]any{"id": float64(5000 + i), "vector": v})
			}
			ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: rows}},
				lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}})
			compare("after Lance appended and deleted")
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Delete(ctx, "id % 5 = 1", nil); err != nil {
				t.Fatal(fmt.Errorf("lancer delete: %w", err))
			}
			compare("after lancer deleted")
		})
	}
}
