package vecindex

import (
	"context"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// TestFlatSearchOneHeap: a flat sub-index keeps the k nearest in one heap
// for the whole search, as Lance 12 does (S5): of rows as far as the
// k-th, one offered earlier (a nearer partition) stays, although a row
// of a later partition has a smaller row id. A heap per partition merged
// by row id after (what lancer did before) returns the later partition's
// row instead; the interop test caught that on 4-bit PQ, whose distances
// tie often.
func TestFlatSearchOneHeap(t *testing.T) {
	ctx := context.Background()
	// Partition 0 is centred on (0,0), partition 1 on (10,0); the query
	// (4,0) is nearer partition 0, so it is probed first.
	rows := map[int]struct {
		ids  []uint64
		vecs []float32
	}{
		0: {ids: []uint64{100, 101, 102}, vecs: []float32{4, 3, 4, 1, -20, 0}},
		1: {ids: []uint64{5, 6, 7}, vecs: []float32{4, -3, 4, 3, 30, 0}},
	}
	spec := &WriteSpec{Quant: QuantFlat, Sub: SubFlat, Metric: vector.L2, Dim: 2, Centroids: []float32{0, 0, 10, 0}, Partitions: 2,
		Rows: func(_ context.Context, p int) ([]uint64, []float32, []uint8, error) {
			return rows[p].ids, rows[p].vecs, nil, nil
		}}
	store := blob.NewMemStore("flat")
	if _, err := Write(ctx, store, "seg", spec); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(ctx, store, "seg", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		k       int
		workers int
		want    []uint64
	}{
		// Rows 100, 5 and 6 are all at distance 9; 101 at 1.
		{k: 1, workers: 1, want: []uint64{101}},
		{k: 2, workers: 1, want: []uint64{101, 100}},
		{k: 2, workers: 2, want: []uint64{101, 100}},
		{k: 3, workers: 2, want: []uint64{101, 5, 100}},
		{k: 4, workers: 1, want: []uint64{101, 5, 6, 100}},
	} {
		got, err := ix.Search(ctx, []float32{4, 0}, tc.k, &SearchOptions{NProbes: 2, Workers: tc.workers})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uint64, len(got))
		for i, n := range got {
			ids[i] = n.ID
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("k %d, %d workers: rows %v, want %v", tc.k, tc.workers, ids, tc.want)
		}
	}
}
