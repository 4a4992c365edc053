package vecindex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// fixtureQuery is one vector query of a fixture's expected.json with
// Lance's answers.
type fixtureQuery struct {
	Kind     string          `json:"kind"`
	Column   string          `json:"column"`
	RawQuery json.RawMessage `json:"query"`
	Query    []float32       `json:"-"`
	K        int             `json:"k"`
	NProbes  int             `json:"nprobes"`
	Ef       int             `json:"ef"`
	PQ       []hit           `json:"ann_ivf_pq"`
	HNSWSQ   []hit           `json:"ann_ivf_hnsw_sq"`
}

type hit struct {
	ID       int64   `json:"id"`
	Distance float32 `json:"_distance"`
}

const (
	fixturePQ   = "6e51a605-1a7c-4f6b-b4ff-64699fed39d0" // vec_idx: IVF_PQ, 4 partitions, 8 sub-vectors, l2
	fixtureHNSW = "cfb53b38-2d55-4900-80e7-403cbfd28b77" // vec2_idx: IVF_HNSW_SQ, 2 partitions, l2
)

// fixtureDir returns the indexed_v2_2 fixture's root, skipping the test
// when LANCER_FIXTURES is not set.
func fixtureDir(t testing.TB) string {
	dir := os.Getenv("LANCER_FIXTURES")
	if dir == "" {
		t.Skip("LANCER_FIXTURES not set")
	}
	return filepath.Join(dir, "lance", "indexed_v2_2.lance")
}

func fixtureQueries(t testing.TB) []fixtureQuery {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(fixtureDir(t)), "indexed_v2_2.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Queries []fixtureQuery `json:"queries"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	var out []fixtureQuery
	for _, q := range exp.Queries {
		if q.Kind == "vector" {
			if err := json.Unmarshal(q.RawQuery, &q.Query); err != nil {
				t.Fatal(err)
			}
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		t.Fatal("no vector queries in the fixture")
	}
	return out
}

func openFixtureIndex(t testing.TB, uuid string) *Index {
	st, err := blob.NewLocalStore(filepath.Join(fixtureDir(t), "_indices"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Open(context.Background(), st, uuid, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestFixtureSearch searches the fixture's Lance-built indices alone.
// The fixture's table has a fragment the indices do not cover, so Lance
// re-scores the index's k candidates with exact distances before merging
// them with the exact scan of that fragment (Lance's knn_combined): every
// indexed row of Lance's answer (ids below 1000, fragment 0, whose row ids
// are the ids) must be one of the index's k candidates, found by the same
// partitions and graph. Distances are checked in package dataset, which
// re-scores.
func TestFixtureSearch(t *testing.T) {
	pq := openFixtureIndex(t, fixturePQ)
	hnsw := openFixtureIndex(t, fixtureHNSW)
	if pq.Type != "IVF_PQ" || pq.Quant != QuantPQ || pq.Sub != SubFlat || pq.Partitions() != 4 || pq.Dim() != 32 {
		t.Fatalf("IVF_PQ index opened as %s %s/%s, %d partitions of %d", pq.Type, pq.Quant, pq.Sub, pq.Partitions(), pq.Dim())
	}
	if hnsw.Type != "IVF_HNSW_SQ" || hnsw.Quant != QuantSQ || hnsw.Sub != SubHNSW || hnsw.Partitions() != 2 {
		t.Fatalf("IVF_HNSW_SQ index opened as %s %s/%s, %d partitions", hnsw.Type, hnsw.Quant, hnsw.Sub, hnsw.Partitions())
	}
	for i, q := range fixtureQueries(t) {
		ix, want := pq, q.PQ
		if q.Column == "vec2" {
			ix, want = hnsw, q.HNSWSQ
		}
		got, err := ix.Search(context.Background(), q.Query, q.K, &SearchOptions{NProbes: q.NProbes, Ef: q.Ef})
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if len(got) != q.K {
			t.Errorf("query %d: %d candidates, want %d", i, len(got), q.K)
		}
		cand := map[uint64]bool{}
		for j, g := range got {
			cand[g.ID] = true
			if j > 0 && g.Distance < got[j-1].Distance {
				t.Errorf("query %d: candidates not nearest first: %v", i, got)
			}
		}
		n := 0
		for _, w := range want {
			if w.ID >= 1000 {
				continue
			}
			n++
			if !cand[uint64(w.ID)] {
				t.Errorf("query %d (%s): Lance's id %d is not among the index's candidates %v", i, ix.Type, w.ID, got)
			}
		}
		if n < 5 {
			t.Errorf("query %d: only %d of Lance's answers are indexed rows", i, n)
		}
	}
}

// TestSearchWorkersAgree: searching the probed partitions in parallel
// changes nothing: every worker count gives the one-at-a-time answer, ids,
// distances and order, with and without a prefilter; and searches running
// at once (as a server's do) share the index and its partition cache
// safely (scripts/test.sh runs this package under the race detector).
func TestSearchWorkersAgree(t *testing.T) {
	ctx := context.Background()
	var ids []uint64
	for id := uint64(0); id < 2000; id += 3 {
		ids = append(ids, id)
	}
	allow := vector.NewAllowList(ids...)
	for _, uuid := range []string{fixturePQ, fixtureHNSW} {
		ix := openFixtureIndex(t, uuid)
		for i, q := range fixtureQueries(t) {
			if len(q.Query) != ix.Dim() {
				continue
			}
			for _, filter := range []vector.Filter{nil, allow} {
				for _, np := range []int{1, 2, 0} {
					one, err := ix.Search(ctx, q.Query, q.K, &SearchOptions{NProbes: np, Ef: q.Ef, Allow: filter, Workers: 1})
					if err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					for _, workers := range []int{2, 3, 8, 0} {
						wg.Go(func() {
							got, err := ix.Search(ctx, q.Query, q.K, &SearchOptions{NProbes: np, Ef: q.Ef, Allow: filter, Workers: workers})
							if err != nil {
								t.Error(err)
								return
							}
							if !slices.Equal(got, one) {
								t.Errorf("%s query %d nprobes %d filter %v: %d workers found %v, one at a time %v", ix.Type, i, np, filter != nil, workers, got, one)
							}
						})
					}
					wg.Wait()
				}
			}
		}
	}
}
