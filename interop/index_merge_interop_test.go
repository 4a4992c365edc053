package interop_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// TestLanceUsesMergedIndexSegments (issue #24): real Lance builds a vector
// index over a lancer table; lancer appends twice, adding a delta segment
// each time (OptimizeIndexes' default, Lance's), deletes rows, appends
// again (deleting those rows too) and merges the two deltas with the new rows into one segment
// (NumIndicesToMerge 2, Lance's num_indices_to_merge): Lance lists two
// segments, Lance's base and the merged one, plans through the index and
// answers as lancer does, finding the appended rows through the merged
// segment. Then lancer appends once more and merges everything
// (NumIndicesToMerge beyond the count): Lance counts one segment, no
// unindexed row, and answers as lancer; lancer's compaction, which now
// sees one segment over every fragment, merges the fragments, and Lance
// still answers as lancer through the remapped segment.
func TestLanceUsesMergedIndexSegments(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, step = 32, 1200, 100
	vecs, queries := maintData(31, n+4*step, dim, 100)
	for _, tc := range []struct {
		name, typ, lanceType string
		opts                 map[string]any
		hnsw                 bool
	}{
		{"IVF_PQ", "ivfPq", "IvfPq", map[string]any{"numPartitions": 6, "numSubVectors": 8}, false},
		{"IVF_FLAT", "ivfFlat", "IvfFlat", map[string]any{"numPartitions": 6}, false},
		{"IVF_HNSW_SQ", "hnswSq", "IvfHnswSq", map[string]any{"numPartitions": 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			d := writeVecFragments(t, store, mem, vecs, dim, n, n/3)
			maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: tc.typ}, IndexOptions: tc.opts})
			if d, err = openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem}); err != nil {
				t.Fatal(err)
			}
			base := d.Indices()
			if len(base) != 1 {
				t.Fatalf("Lance built %d segments", len(base))
			}
			next, deleting := n, false
			appendStep := func() {
				t.Helper()
				r := vecBatch(mem, vecs, dim, next, next+step)
				d, err = d.Append(ctx, r, nil)
				r.Release()
				if err != nil {
					t.Fatal(err)
				}
				next += step
				if deleting { // checkIndexUse wants every id%7==3 row gone
					if d, err = d.Delete(ctx, "id % 7 = 3", nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			optimize := func(merge int) {
				t.Helper()
				if d, err = d.OptimizeIndexes(ctx, &dataset.OptimizeIndexesOptions{NumIndicesToMerge: merge}); err != nil {
					t.Fatal(err)
				}
			}
			lanceSegments := func(stage string, want int) {
				t.Helper()
				live, err := d.CountRows(ctx)
				if err != nil {
					t.Fatal(err)
				}
				st := maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: "vec_idx"})[0].Stats
				if st == nil || st.NumIndices != want || st.NumUnindexedRows != 0 || st.NumIndexedRows != int64(live) {
					t.Fatalf("%s: Lance's index statistics %+v: want %d segments, %d rows indexed, none unindexed", stage, st, want, live)
				}
			}
			for range 2 {
				appendStep()
				optimize(0)
			}
			deleting = true
			appendStep()
			optimize(2)
			segs := d.Indices()
			if len(segs) != 2 || segs[0].UUID != base[0].UUID || len(segs[1].Fragments) != 3 || segs[1].TypeURL != base[0].TypeURL {
				t.Fatalf("after NumIndicesToMerge 2: %+v, want Lance's segment and one over the 3 appended fragments", segs)
			}
			lanceSegments("after merging two deltas", 2)
			appended := append(liveSample(0, n, 4), liveSample(n, next, 12)...)
			checkIndexUse(t, node, ref, uri, "after merging two deltas", tc.lanceType, vecs, dim, queries, appended, tc.hnsw, false)

			appendStep()
			optimize(99)
			if segs = d.Indices(); len(segs) != 1 || len(segs[0].Fragments) != len(d.Manifest().Fragments) {
				t.Fatalf("after merging all: %+v, want one segment over all %d fragments", segs, len(d.Manifest().Fragments))
			}
			lanceSegments("after merging all", 1)
			appended = append(liveSample(0, n, 4), liveSample(n, next, 12)...)
			checkIndexUse(t, node, ref, uri, "after merging all", tc.lanceType, vecs, dim, queries, appended, tc.hnsw, false)

			before := len(d.Manifest().Fragments)
			out, stats, err := d.Compact(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Manifest().Fragments) != 1 || stats.IndicesRemapped != 1 {
				t.Fatalf("compaction after the merge: %d fragments -> %d, %+v; want one fragment and the segment remapped", before, len(out.Manifest().Fragments), stats)
			}
			d = out
			lanceSegments("after compaction", 1)
			checkIndexUse(t, node, ref, uri, "after compaction", tc.lanceType, vecs, dim, queries, appended, tc.hnsw, false)
		})
	}
}
