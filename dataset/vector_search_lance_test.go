package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// lanceFixtureQuery is one vector query of indexed_v2_2.expected.json:
// Lance's answers through its IVF_PQ index on vec (ann_ivf_pq), its
// IVF_HNSW_SQ index on vec2 (ann_ivf_hnsw_sq) and exactly (exact_flat).
type lanceFixtureQuery struct {
	Kind     string          `json:"kind"`
	Column   string          `json:"column"`
	RawQuery json.RawMessage `json:"query"`
	K        int             `json:"k"`
	NProbes  int             `json:"nprobes"`
	Ef       int             `json:"ef"`
	PQ       []lanceHit      `json:"ann_ivf_pq"`
	HNSW     []lanceHit      `json:"ann_ivf_hnsw_sq"`
	Exact    []lanceHit      `json:"exact_flat"`
}

type lanceHit struct {
	ID       int64   `json:"id"`
	Distance float32 `json:"_distance"`
}

func lanceFixtureQueries(t *testing.T) (string, []lanceFixtureQuery) {
	dir := filepath.Join(fixturetest.Dir(t), "lance")
	b, err := os.ReadFile(filepath.Join(dir, "indexed_v2_2.expected.json"))
	if err != nil {
		t.Skipf("fixture: %v", err)
	}
	var exp struct {
		Queries []lanceFixtureQuery `json:"queries"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	var out []lanceFixtureQuery
	for _, q := range exp.Queries {
		if q.Kind == "vector" {
			out = append(out, q)
		}
	}
	return filepath.Join(dir, "indexed_v2_2.lance"), out
}

// lanceSearchIDs runs Search and returns the id column and distances.
func lanceSearchIDs(t *testing.T, d *Dataset, column string, query []float32, o *SearchOptions) ([]int64, []float32, error) {
	t.Helper()
	o.Columns = []string{"id"}
	rec, err := d.Search(context.Background(), column, query, o)
	if err != nil {
		return nil, nil, err
	}
	defer rec.Release()
	ids := append([]int64(nil), rec.Column(0).(*array.Int64).Int64Values()...)
	dist := append([]float32(nil), rec.Column(1).(*array.Float32).Float32Values()...)
	return ids, dist, nil
}

// TestSearchLanceIndexFixture is the parity test of Lance-built indices:
// on indexed_v2_2 (an IVF_PQ index on vec and an IVF_HNSW_SQ index on
// vec2, both covering fragment 0 only, fragment 1 appended after), Search
// returns Lance's rows with Lance's distances for the same k, nprobes and
// ef.
func TestSearchLanceIndexFixture(t *testing.T) {
	path, queries := lanceFixtureQueries(t)
	d, _ := openFixture(t, path, 0)
	if len(queries) == 0 {
		t.Fatal("no vector queries")
	}
	for i, q := range queries {
		var query []float32
		if err := json.Unmarshal(q.RawQuery, &query); err != nil {
			t.Fatal(err)
		}
		want := q.PQ
		if q.Column == "vec2" {
			want = q.HNSW
		}
		ids, dist, err := lanceSearchIDs(t, d, q.Column, query, &SearchOptions{K: q.K, NProbes: q.NProbes, Ef: q.Ef})
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if len(ids) != len(want) {
			t.Fatalf("query %d on %s: %d rows %v, Lance %d %v", i, q.Column, len(ids), ids, len(want), want)
		}
		for j, w := range want {
			if ids[j] != w.ID || math.Abs(float64(dist[j]-w.Distance)) > 1e-5*math.Max(1, float64(w.Distance)) {
				t.Errorf("query %d on %s rank %d: id %d distance %v, Lance id %d distance %v", i, q.Column, j, ids[j], dist[j], w.ID, w.Distance)
			}
		}
		// The exact search ignores the index and finds Lance's exact rows.
		if q.Exact != nil {
			ids, dist, err := lanceSearchIDs(t, d, q.Column, query, &SearchOptions{K: q.K, Exact: true})
			if err != nil {
				t.Fatalf("query %d exact: %v", i, err)
			}
			for j, w := range q.Exact {
				if j >= len(ids) || ids[j] != w.ID || math.Abs(float64(dist[j]-w.Distance)) > 1e-5*math.Max(1, float64(w.Distance)) {
					t.Errorf("query %d exact rank %d: got %v %v, Lance id %d distance %v", i, j, ids, dist, w.ID, w.Distance)
					break
				}
			}
		}
	}
}

// TestSearchLanceIndexOptions: an index the caller names that is not
// a vector index of the column is not found; a metric the index was not
// built for searches exactly.
func TestSearchLanceIndexOptions(t *testing.T) {
	path, queries := lanceFixtureQueries(t)
	d, _ := openFixture(t, path, 0)
	var query []float32
	if err := json.Unmarshal(queries[0].RawQuery, &query); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{Index: "nope"}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("unknown index: %v, want ErrNotFound", err)
	}
	ids, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{Index: "vec_idx", NProbes: 4})
	if err != nil || len(ids) != 10 || ids[0] != queries[0].PQ[0].ID {
		t.Errorf("named index: %v %v", ids, err)
	}
	// cosine: the l2 index is not used, the search is exact.
	ids, _, err = lanceSearchIDs(t, d, "vec", query, &SearchOptions{Metric: "cosine"})
	if err != nil || len(ids) != 10 {
		t.Errorf("cosine: %v %v", ids, err)
	}
}

// TestSearchLanceIndexDeletesAndUnsupported: rows deleted after Lance
// built its index are never returned; an index whose files this version
// of lancer cannot read fails the search with ErrUnsupported (never a
// silent exact search), unless the caller asks for an exact search.
func TestSearchLanceIndexDeletesAndUnsupported(t *testing.T) {
	_, queries := lanceFixtureQueries(t)
	dir, store := copyFixture(t, "indexed_v2_2")
	ctx := context.Background()
	d := openStore(t, store, 0, checkedAlloc(t))
	var query []float32
	if err := json.Unmarshal(queries[0].RawQuery, &query); err != nil {
		t.Fatal(err)
	}
	before, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{NProbes: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Delete the nearest indexed row and its neighbour in the ranking.
	var gone []string
	for _, id := range before[:3] {
		if id < 1000 {
			gone = append(gone, fmt.Sprint(id))
		}
	}
	if d, err = d.Delete(ctx, "id IN ("+strings.Join(gone, ", ")+")", nil); err != nil {
		t.Fatal(err)
	}
	after, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{NProbes: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 10 {
		t.Fatalf("%d rows after deleting %v", len(after), gone)
	}
	for _, id := range after {
		if slices.Contains(gone, fmt.Sprint(id)) {
			t.Errorf("deleted row %d returned: %v", id, after)
		}
	}
	// The rows kept are still found, in their order: the index's next
	// candidates only join them.
	kept := slices.DeleteFunc(slices.Clone(before), func(id int64) bool { return slices.Contains(gone, fmt.Sprint(id)) })
	rest := after
	for _, id := range kept {
		i := slices.Index(rest, id)
		if i < 0 {
			t.Errorf("after deleting %v: %v, want %v among them in order", gone, after, kept)
			break
		}
		rest = rest[i+1:]
	}

	// A v3 segment without auxiliary.idx is corrupt (Lance's legacy
	// single-file index is read: TestSearchLegacyIndex; a kind lancer
	// cannot search is ErrUnsupported: TestSearchUnsupportedLanceIndex).
	if err := os.Remove(filepath.Join(dir, "_indices", "6e51a605-1a7c-4f6b-b4ff-64699fed39d0", "auxiliary.idx")); err != nil {
		t.Fatal(err)
	}
	d = openStore(t, store, 0, checkedAlloc(t))
	if _, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{}); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "vec_idx") || !strings.Contains(err.Error(), "auxiliary.idx") {
		t.Errorf("search over an index without auxiliary.idx: %v, want ErrCorrupt naming vec_idx and the file", err)
	}
	if ids, _, err := lanceSearchIDs(t, d, "vec", query, &SearchOptions{Exact: true}); err != nil || len(ids) != 10 {
		t.Errorf("exact search: %v %v", ids, err)
	}
}
