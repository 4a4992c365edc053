package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// TestCompactRemapsLanceIndices: without stable row ids, compaction
// rewrites each Lance-format IVF_PQ / IVF_FLAT segment over the rewritten
// fragments under a new uuid with the rows' new addresses (deleted rows
// dropped), covering the new fragments, and records it in the Rewrite
// transaction as Lance does; searches then use the index for every
// fragment and return what they returned before (the same rows, the same
// distances: same partitions, same codes).
func TestCompactRemapsLanceIndices(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 1200
	rng := rand.New(rand.NewPCG(41, 42))
	vecs := clustered(rng, n, dim)
	queries := clustered(rng, 10, dim)
	for _, tc := range []struct {
		typ    string
		metric vector.Metric
	}{{IndexIVFPQ, vector.L2}, {IndexIVFPQ, vector.Cosine}, {IndexIVFFlat, vector.L2}, {IndexIVFFlat, vector.Dot}} {
		t.Run(tc.typ+"_"+tc.metric.String(), func(t *testing.T) {
			store := blob.NewMemStore("v")
			d := newVecDataset(t, store, vecs, dim, n, n/4, false)
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: tc.typ, Metric: tc.metric, Partitions: 6, SubVectors: 4})
			if err != nil {
				t.Fatal(err)
			}
			old := d.manifest.IndexSegments()[0]
			if d, err = d.Delete(ctx, "id % 10 = 3", nil); err != nil {
				t.Fatal(err)
			}
			search := func(d *Dataset) (ids [][]uint64, dists [][]float32) {
				for qi := range 10 {
					i, ds := searchIDs(t, d, queries[qi*dim:(qi+1)*dim], &SearchOptions{K: 10, NProbes: 3})
					ids, dists = append(ids, i), append(dists, ds)
				}
				return ids, dists
			}
			wantIDs, wantDists := search(d)
			out, stats, err := d.Compact(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.FragmentsRemoved != 4 || stats.IndicesRemapped != 1 || stats.IndexMessage != "" {
				t.Fatalf("stats %+v: want 4 fragments rewritten and the index remapped", stats)
			}
			segs := out.manifest.IndexSegments()
			var newFrags []uint32
			for _, f := range out.manifest.Fragments {
				newFrags = append(newFrags, uint32(f.ID))
			}
			info := out.Indices()
			if len(segs) != 1 || string(segs[0].UUID) == string(old.UUID) || segs[0].Name != old.Name ||
				!slices.Equal(info[0].Fragments, newFrags) || len(segs[0].Files) != 2 {
				t.Fatalf("after compaction: %+v, want a new segment of %s over fragments %v", info, old.Name, newFrags)
			}
			rw := opAs[*manifest.Rewrite](rawTransaction(t, store, out.Version()))
			if rw == nil || len(rw.RewrittenIndices) != 1 || string(rw.RewrittenIndices[0].OldID) != string(old.UUID) ||
				string(rw.RewrittenIndices[0].NewID) != string(segs[0].UUID) || len(rw.RewrittenIndices[0].NewIndexFiles) != 2 {
				t.Fatalf("Rewrite transaction: %+v", rw)
			}
			plan, err := out.ExplainSearch(ctx, "vec", queries[:dim], &SearchOptions{K: 10, NProbes: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.UnindexedFragments) != 0 || plan.Index != old.Name {
				t.Fatalf("plan after compaction: %+v", plan)
			}
			// The new segment holds exactly the live rows, at their new
			// addresses.
			ix, err := vecindex.Open(ctx, store, indicesDir+info[0].UUID, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for p := range ix.Partitions() {
				ids, _, _, err := ix.PartitionRows(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range ids {
					if !slices.Contains(newFrags, uint32(id>>32)) {
						t.Fatalf("row address %#x outside the new fragments", id)
					}
				}
				rows += len(ids)
			}
			if live, _ := out.CountRows(ctx); rows != int(live) {
				t.Fatalf("remapped segment holds %d rows, the dataset %d", rows, live)
			}
			gotIDs, gotDists := search(out)
			for qi := range wantIDs {
				if !slices.Equal(gotIDs[qi], wantIDs[qi]) || !slices.Equal(gotDists[qi], wantDists[qi]) {
					t.Errorf("query %d: after compaction %v %v, before %v %v", qi, gotIDs[qi], gotDists[qi], wantIDs[qi], wantDists[qi])
				}
				for _, id := range gotIDs[qi] {
					if id%10 == 3 {
						t.Errorf("query %d: deleted row %d", qi, id)
					}
				}
			}
		})
	}
}

// TestCompactNamesIndicesNotRemapped: an index lancer cannot write again
// (here lancer's own format) keeps covering the old fragments, and the
// compaction's message names it; searches stay exact over the rewritten
// rows.
func TestCompactNamesIndicesNotRemapped(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 600
	vecs := clustered(rand.New(rand.NewPCG(43, 44)), n, dim)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, n, n/3, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFHNSWSQ, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	if d.manifest.IndexSegments()[0].Details.TypeURL != manifest.VectorIndexTypeURL {
		t.Skip("IVF_HNSW_SQ is written in Lance's format now: no index here that compaction cannot remap")
	}
	out, stats, err := d.Compact(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.IndicesRemapped != 0 || !strings.Contains(stats.IndexMessage, "vec_idx") || !strings.Contains(stats.IndexMessage, "not remapped") {
		t.Fatalf("stats %+v: want a message naming vec_idx", stats)
	}
	q := vecs[5*dim : 6*dim]
	got, _ := searchIDs(t, out, q, &SearchOptions{K: 5})
	if want := exactTop(vecs, dim, q, 5, vector.L2, nil); recallOf(got, want) < 1 {
		t.Fatalf("after compaction %v, exact %v", got, want)
	}
}

// TestMaintainLanceBuiltIndices, on the fixture indexed_v2_2 (Lance 12's
// IVF_PQ, IVF_HNSW_SQ, BTREE, BITMAP, LABEL_LIST and FTS over 1000 rows,
// then 100 rows appended unindexed): OptimizeIndexes adds a delta of the
// IVF_PQ index over the appended fragment with Lance's centroids and
// codebook (the IVF_HNSW_SQ index, which lancer does not write, is left
// alone); then, after a delete, compaction leaves the first fragment
// (which the IVF_HNSW_SQ index covers) and says so, and rewrites the
// second, remapping the delta; with the IVF_HNSW_SQ index dropped, it
// rewrites the first too, remapping the IVF_PQ segment and naming the
// scalar and FTS indices it leaves as they are;
// every filter and vector query answers as before. (The fixture's FTS
// index stems, which lancer's search refuses; TestLanceUsesIndicesAfter
// LancerCompact in interop covers full-text search after compaction.)
func TestMaintainLanceBuiltIndices(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "indexed_v2_2")
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	before := map[string][]string{}
	for _, ix := range d.Indices() {
		before[ix.Name] = append(before[ix.Name], ix.UUID)
	}
	d, err := d.OptimizeIndexes(ctx, &CommitOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	var vecSegs []manifest.IndexInfo
	for _, ix := range d.Indices() {
		switch ix.Name {
		case "vec_idx":
			vecSegs = append(vecSegs, ix)
		case "vec2_idx":
			if len(before[ix.Name]) != 1 || ix.UUID != before[ix.Name][0] {
				t.Errorf("vec2_idx (IVF_HNSW_SQ) changed: %+v", ix)
			}
		}
	}
	last := d.manifest.Fragments[len(d.manifest.Fragments)-1].ID
	if len(vecSegs) != 2 || vecSegs[0].UUID != before["vec_idx"][0] || !slices.Equal(vecSegs[1].Fragments, []uint32{uint32(last)}) ||
		vecSegs[1].TypeURL != LanceVectorIndexTypeURL {
		t.Fatalf("vec_idx after OptimizeIndexes: %+v", vecSegs)
	}
	base, err := vecindex.Open(ctx, store, indicesDir+vecSegs[0].UUID, nil)
	if err != nil {
		t.Fatal(err)
	}
	delta, err := vecindex.Open(ctx, store, indicesDir+vecSegs[1].UUID, nil)
	if err != nil {
		t.Fatal(err)
	}
	bm, err1 := base.Model()
	dm, err2 := delta.Model()
	if err1 != nil || err2 != nil || !slices.Equal(bm.Centroids, dm.Centroids) || !slices.Equal(bm.PQCodebook, dm.PQCodebook) || delta.Type != base.Type {
		t.Fatalf("the delta's model is not the base's: %v %v", err1, err2)
	}
	// Each appended row is found by its own vector through the delta.
	vecOf := func(d *Dataset, id int) []float32 {
		sc, err := d.Scan(&ScanOptions{Columns: []string{"vec"}, Filter: fmt.Sprintf("id = %d", id)})
		if err != nil {
			t.Fatal(err)
		}
		var out []float32
		for rec, err := range sc.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			fsl := rec.Column(0).(*array.FixedSizeList)
			dim := int(fsl.DataType().(*arrow.FixedSizeListType).Len())
			vals := fsl.ListValues().(*array.Float32).Float32Values()
			out = append(out, vals[fsl.Offset()*dim:(fsl.Offset()+fsl.Len())*dim]...)
		}
		return out
	}
	for _, id := range []int{1000, 1042, 1099} {
		q := vecOf(d, id)
		plan, err := d.ExplainSearch(ctx, "vec", q, &SearchOptions{K: 3})
		if err != nil || len(plan.UnindexedFragments) != 0 {
			t.Fatalf("plan: %+v %v", plan, err)
		}
		got, _ := searchIDs(t, d, q, &SearchOptions{K: 3, NProbes: 4, RefineFactor: 10})
		if len(got) == 0 || got[0] != uint64(id) {
			t.Errorf("row %d by its vector: %v", id, got)
		}
	}

	// Compaction over the Lance-built indices.
	if d, err = d.Delete(ctx, "id % 5 = 0", &CommitOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	filters := []string{"id >= 990 AND id < 1005", "category = 'cat3'", "array_has_any(tags, ['t1'])", "category IS NULL"}
	answers := func(d *Dataset) []string {
		var out []string
		for _, f := range filters {
			sc, err := d.Scan(&ScanOptions{Columns: []string{"id"}, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for rec, err := range sc.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
			}
			slices.Sort(ids)
			out = append(out, fmt.Sprint(f, ids))
		}
		for _, id := range []int{7, 512, 1001} {
			got, dists := searchIDs(t, d, vecOf(d, id), &SearchOptions{K: 10, NProbes: 2})
			out = append(out, fmt.Sprint("near ", id, got, dists))
		}
		return out
	}
	want := answers(d)
	// The IVF_HNSW_SQ index, which lancer cannot remap, keeps fragment 0
	// out of the compaction; the delta's fragment is compacted.
	out, stats, err := d.Compact(ctx, &CompactOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", stats)
	if stats.FragmentsRemoved != 1 || stats.IndicesRemapped != 1 || !strings.Contains(stats.IndexMessage, "fragments [0] not compacted") ||
		!strings.Contains(stats.IndexMessage, "vec2_idx (IVF_HNSW_SQ)") {
		t.Fatalf("compaction %+v: want fragment 0 left for vec2_idx, the delta's fragment rewritten and remapped", stats)
	}
	for i, g := range answers(out) {
		if g != want[i] {
			t.Errorf("after compaction %s, before %s", g, want[i])
		}
	}
	// Without it, fragment 0 is rewritten: vec_idx is remapped, the
	// scalar and FTS indices keep their old coverage, and the message
	// names them.
	if out, err = out.DropIndex(ctx, "vec2_idx", &CommitOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	out, stats, err = out.Compact(ctx, &CompactOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", stats)
	if stats.FragmentsRemoved != 1 || stats.IndicesRemapped != 1 {
		t.Fatalf("compaction %+v: want fragment 0 rewritten and vec_idx remapped", stats)
	}
	for _, name := range []string{"id_idx", "category_idx", "tags_idx", "text_idx"} {
		if !strings.Contains(stats.IndexMessage, name+" (") {
			t.Errorf("the compaction's message does not name %s: %q", name, stats.IndexMessage)
		}
	}
	if strings.Contains(stats.IndexMessage, "vec_idx (") {
		t.Errorf("the message names vec_idx, which was remapped: %q", stats.IndexMessage)
	}
	if plan, err := out.ExplainSearch(ctx, "vec", vecOf(out, 7), &SearchOptions{K: 3}); err != nil || len(plan.UnindexedFragments) != 0 {
		t.Fatalf("plan after compaction: %+v %v", plan, err)
	}
	for i, g := range answers(out) {
		if g != want[i] {
			t.Errorf("after compaction %s, before %s", g, want[i])
		}
	}
}
