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
// rewrites each Lance-format vector segment (every kind lancer writes)
// over the rewritten fragments under a new uuid with the rows' new
// addresses (deleted rows dropped), covering the new fragments, and
// records it in the Rewrite transaction as Lance does; searches then use
// the index for every fragment and return what they returned before: for
// flat sub-indices the same rows, the same distances (same partitions,
// same codes); for HNSW, whose graphs are rebuilt over the remapped
// storage as Lance's remap rebuilds them, nearly the same rows.
func TestCompactRemapsLanceIndices(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 1200
	rng := rand.New(rand.NewPCG(41, 42))
	vecs := clustered(rng, n, dim)
	queries := clustered(rng, 10, dim)
	for _, tc := range []struct {
		typ    string
		metric vector.Metric
	}{{IndexIVFPQ, vector.L2}, {IndexIVFPQ, vector.Cosine}, {IndexIVFPQ, vector.Dot}, {IndexIVFFlat, vector.L2}, {IndexIVFFlat, vector.Dot},
		{IndexIVFSQ, vector.L2}, {IndexIVFSQ, vector.Cosine}, {IndexIVFHNSWSQ, vector.L2}, {IndexIVFHNSWSQ, vector.Cosine},
		{IndexIVFHNSWFlat, vector.L2}, {IndexIVFHNSWFlat, vector.Dot}, {IndexIVFHNSWPQ, vector.L2}, {IndexIVFHNSWPQ, vector.Cosine}} {
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
			graph := strings.Contains(strings.ToUpper(tc.typ), "HNSW")
			recallBefore, recallAfter := 0.0, 0.0
			for qi := range wantIDs {
				exact := exactTop(vecs, dim, queries[qi*dim:(qi+1)*dim], 10, tc.metric, func(i int) bool { return i%10 != 3 })
				recallBefore += recallOf(wantIDs[qi], exact) / float64(len(wantIDs))
				recallAfter += recallOf(gotIDs[qi], exact) / float64(len(wantIDs))
				if !graph && (!slices.Equal(gotIDs[qi], wantIDs[qi]) || !slices.Equal(gotDists[qi], wantDists[qi])) {
					t.Errorf("query %d: after compaction %v %v, before %v %v", qi, gotIDs[qi], gotDists[qi], wantIDs[qi], wantDists[qi])
				}
				for _, id := range gotIDs[qi] {
					if id%10 == 3 {
						t.Errorf("query %d: deleted row %d", qi, id)
					}
				}
			}
			if recallAfter < recallBefore-0.02 {
				t.Errorf("recall@10 %.3f after compaction, %.3f before", recallAfter, recallBefore)
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
// IVF_PQ on vec, IVF_HNSW_SQ on vec2, BTREE, BITMAP, LABEL_LIST and FTS
// over 1000 rows, then 100 rows appended unindexed): OptimizeIndexes adds
// a delta to each vector index over the appended fragment with Lance's
// centroids and quantizer (codebook, SQ bounds), the IVF_HNSW_SQ one with
// graphs of its own; each appended row is found through them by its own
// vector; the BTREE, BITMAP, LABEL_LIST and FTS indices are replaced by
// one segment each over every fragment. Then, after a delete, compaction
// rewrites both fragments, remapping all four vector segments (HNSW graphs
// rebuilt) and the four scalar and FTS ones, each covering every fragment
// after it; every filter, full-text and IVF_PQ query answers as before
// (same rows, same scores and distances), through the indices, and the
// IVF_HNSW_SQ ones return no deleted row and nearly the same rows.
func TestMaintainLanceBuiltIndices(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "indexed_v2_2")
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	before := map[string][]string{}
	for _, ix := range d.Indices() {
		before[ix.Name] = append(before[ix.Name], ix.UUID)
	}
	d, err := d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	last := d.manifest.Fragments[len(d.manifest.Fragments)-1].ID
	for _, name := range []string{"vec_idx", "vec2_idx"} {
		var segs []manifest.IndexInfo
		for _, ix := range d.Indices() {
			if ix.Name == name {
				segs = append(segs, ix)
			}
		}
		if len(segs) != 2 || segs[0].UUID != before[name][0] || !slices.Equal(segs[1].Fragments, []uint32{uint32(last)}) ||
			segs[1].TypeURL != LanceVectorIndexTypeURL {
			t.Fatalf("%s after OptimizeIndexes: %+v", name, segs)
		}
		base, err := vecindex.Open(ctx, store, indicesDir+segs[0].UUID, nil)
		if err != nil {
			t.Fatal(err)
		}
		delta, err := vecindex.Open(ctx, store, indicesDir+segs[1].UUID, nil)
		if err != nil {
			t.Fatal(err)
		}
		bm, err1 := base.Model()
		dm, err2 := delta.Model()
		if err1 != nil || err2 != nil || !slices.Equal(bm.Centroids, dm.Centroids) || !slices.Equal(bm.PQCodebook, dm.PQCodebook) ||
			delta.Type != base.Type || (bm.SQBounds != nil) != (dm.SQBounds != nil) || bm.SQBounds != nil && *bm.SQBounds != *dm.SQBounds {
			t.Fatalf("%s: the delta's model is not the base's: %v %v", name, err1, err2)
		}
		if base.Sub == vecindex.SubHNSW && (dm.HNSWM != vecindex.LanceDefaultHNSWM || dm.HNSWEfConstruction != vecindex.LanceDefaultHNSWEfConstruction) {
			t.Errorf("%s: the delta's graphs have m %d, ef_construction %d, not Lance's defaults", name, dm.HNSWM, dm.HNSWEfConstruction)
		}
	}
	for _, ix := range d.Indices() {
		if name := ix.Name; name == "id_idx" || name == "category_idx" || name == "tags_idx" || name == "text_idx" {
			if len(ix.Fragments) != len(d.manifest.Fragments) || slices.Contains(before[name], ix.UUID) {
				t.Errorf("%s after OptimizeIndexes: %+v (before %v)", name, ix, before[name])
			}
		}
	}
	// Each appended row is found by its own vector through the delta.
	vecOf := func(d *Dataset, column string, id int) []float32 {
		sc, err := d.Scan(&ScanOptions{Columns: []string{column}, Filter: fmt.Sprintf("id = %d", id)})
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
	searchCol := func(d *Dataset, column string, q []float32, o *SearchOptions) ([]int64, []float32) {
		o.Columns = []string{"id"}
		rec, err := d.Search(ctx, column, q, o)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		return slices.Clone(rec.Column(0).(*array.Int64).Int64Values()), slices.Clone(rec.Column(int(rec.NumCols()) - 1).(*array.Float32).Float32Values())
	}
	for _, column := range []string{"vec", "vec2"} {
		for _, id := range []int{1000, 1042, 1099} {
			q := vecOf(d, column, id)
			plan, err := d.ExplainSearch(ctx, column, q, &SearchOptions{K: 3})
			if err != nil || len(plan.UnindexedFragments) != 0 {
				t.Fatalf("%s plan: %+v %v", column, plan, err)
			}
			got, _ := searchCol(d, column, q, &SearchOptions{K: 3, NProbes: 4, RefineFactor: 10})
			if len(got) == 0 || got[0] != int64(id) {
				t.Errorf("%s: row %d by its vector: %v", column, id, got)
			}
		}
	}

	// Compaction over the Lance-built indices and lancer's deltas.
	if d, err = d.Delete(ctx, "id % 5 = 0", &CommitOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	filters := []string{"id >= 990 AND id < 1005", "category = 'cat3'", "array_has_any(tags, ['t1'])", "category IS NULL"}
	queryIDs := []int{7, 512, 1001, 3, 251, 777, 1051, 1098}
	answers := func(d *Dataset) (exact []string, hnsw [][]int64) {
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
			exact = append(exact, fmt.Sprint(f, ids))
		}
		for _, id := range queryIDs {
			got, dists := searchCol(d, "vec", vecOf(d, "vec", id), &SearchOptions{K: 10, NProbes: 2})
			exact = append(exact, fmt.Sprint("near ", id, got, dists))
			got, _ = searchCol(d, "vec2", vecOf(d, "vec2", id), &SearchOptions{K: 10, NProbes: 2})
			hnsw = append(hnsw, got)
		}
		return exact, hnsw
	}
	want, wantHNSW := answers(d)
	out, stats, err := d.Compact(ctx, &CompactOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", stats)
	if stats.FragmentsRemoved != 2 || stats.IndicesRemapped != 8 || stats.IndexMessage != "" {
		t.Fatalf("compaction %+v: want both fragments rewritten and the four vector and four scalar/FTS segments remapped", stats)
	}
	for _, ix := range out.Indices() {
		if len(ix.Fragments) == 0 {
			t.Errorf("%s covers no fragment after compaction", ix.Name)
		}
		if name := ix.Name; (name == "id_idx" || name == "category_idx" || name == "tags_idx" || name == "text_idx") && len(ix.Fragments) != len(out.manifest.Fragments) {
			t.Errorf("%s after compaction covers %v of %d fragments", name, ix.Fragments, len(out.manifest.Fragments))
		}
	}
	for _, column := range []string{"vec", "vec2"} {
		if plan, err := out.ExplainSearch(ctx, column, vecOf(out, column, 7), &SearchOptions{K: 3}); err != nil || len(plan.UnindexedFragments) != 0 {
			t.Fatalf("%s plan after compaction: %+v %v", column, plan, err)
		}
	}
	// The remapped FTS index answers as one built afresh on the compacted
	// rows (deleted rows are gone from both, and from their statistics,
	// as from Lance's remapped index).
	ftsAnswers := func(d *Dataset) []string {
		var out []string
		for _, q := range []string{"alpha", "bravo charlie", "delta echo foxtrot"} {
			hits, err := d.FullTextSearch(ctx, q, &FullTextSearchOptions{Column: "text", Limit: 30})
			if err != nil || len(hits) != 30 {
				t.Fatalf("%q: %d hits, %v", q, len(hits), err)
			}
			out = append(out, fmt.Sprint(q, hits))
		}
		return out
	}
	remapped := ftsAnswers(out)
	var textSeg *manifest.IndexMetadata
	for _, seg := range out.manifest.IndexSegments() {
		if seg.Name == "text_idx" {
			textSeg = seg
		}
	}
	params, err := out.ftsSegmentParams(ctx, textSeg)
	if err != nil || !params.Stem || !params.WithPosition {
		t.Fatalf("the fixture's FTS parameters: %+v %v", params, err)
	}
	fresh, err := out.CreateIndex(ctx, "text", &CreateIndexOptions{Type: IndexFTS, Name: "text_idx", Replace: true, FTS: &params, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	if want := ftsAnswers(fresh); !slices.Equal(remapped, want) {
		t.Errorf("full-text search on the remapped index:\n%v\non a fresh one:\n%v", remapped, want)
	}
	got, gotHNSW := answers(out)
	for i, g := range got {
		if g != want[i] {
			t.Errorf("after compaction %s, before %s", g, want[i])
		}
	}
	same := 0.0
	for i, g := range gotHNSW {
		for _, id := range g {
			if id%5 == 0 {
				t.Errorf("vec2 near %d after compaction: deleted row %d", queryIDs[i], id)
			}
			if slices.Contains(wantHNSW[i], id) {
				same++
			}
		}
	}
	if r := same / float64(10*len(queryIDs)); r < 0.9 {
		t.Errorf("vec2 (IVF_HNSW_SQ, graphs rebuilt): %.2f of the rows found before compaction found after", r)
	}
}

// TestOptimizeExtendsLanceIndexKinds: for every kind lancer writes in
// Lance's format, OptimizeIndexes over appended rows adds one delta
// segment (same name and type, the appended fragments, the index's
// centroids and quantizer; HNSW graphs of its own), searches plan no exact
// scan, each appended row is found by its own vector through the index,
// recall over the whole table stays that of a search scoring the appended
// rows exactly, and a second OptimizeIndexes has nothing to do. Then
// compaction merges base and delta fragments and remaps both segments:
// no deleted row comes back, every row is still covered.
func TestOptimizeExtendsLanceIndexKinds(t *testing.T) {
	ctx := context.Background()
	const dim, n, extra = 16, 1200, 300
	rng := rand.New(rand.NewPCG(51, 52))
	vecs := clustered(rng, n+extra, dim)
	queries := clustered(rng, 20, dim)
	for _, tc := range []struct {
		typ    string
		metric vector.Metric
	}{{IndexIVFSQ, vector.L2}, {IndexIVFSQ, vector.Dot}, {IndexIVFHNSWSQ, vector.L2}, {IndexIVFHNSWSQ, vector.Cosine},
		{IndexIVFHNSWFlat, vector.L2}, {IndexIVFHNSWFlat, vector.Cosine}, {IndexIVFHNSWPQ, vector.L2}, {IndexIVFHNSWPQ, vector.Dot},
		{IndexIVFPQ, vector.Dot}} {
		t.Run(tc.typ+"_"+tc.metric.String(), func(t *testing.T) {
			store := blob.NewMemStore("v")
			d := newVecDataset(t, store, vecs, dim, n, n/3, false)
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: tc.typ, Metric: tc.metric, Partitions: 6, SubVectors: 4})
			if err != nil {
				t.Fatal(err)
			}
			mem := checkedAlloc(t)
			for from := n; from < n+extra; from += extra / 2 {
				r := vecReader(mem, vecs, dim, from, from+extra/2)
				d, err = d.Append(ctx, r, nil)
				r.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			exactBefore := d
			opt, err := d.OptimizeIndexes(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			segs := opt.Indices()
			frags := opt.Manifest().Fragments
			if len(segs) != 2 || segs[1].Name != "vec_idx" || opt.Version() != d.Version()+1 ||
				!slices.Equal(segs[1].Fragments, []uint32{uint32(frags[3].ID), uint32(frags[4].ID)}) {
				t.Fatalf("after optimize: %+v", segs)
			}
			base, err := vecindex.Open(ctx, store, indicesDir+segs[0].UUID, nil)
			if err != nil {
				t.Fatal(err)
			}
			delta, err := vecindex.Open(ctx, store, indicesDir+segs[1].UUID, nil)
			if err != nil {
				t.Fatal(err)
			}
			bm, _ := base.Model()
			dm, err := delta.Model()
			if err != nil || delta.Type != base.Type || !slices.Equal(bm.Centroids, dm.Centroids) || !slices.Equal(bm.PQCodebook, dm.PQCodebook) ||
				(bm.SQBounds == nil) != (dm.SQBounds == nil) || bm.SQBounds != nil && *bm.SQBounds != *dm.SQBounds {
				t.Fatalf("delta %s: not the base's %s model (%v)", delta.Type, base.Type, err)
			}
			plan, err := opt.ExplainSearch(ctx, "vec", queries[:dim], &SearchOptions{K: 10})
			if err != nil || len(plan.UnindexedFragments) != 0 || plan.Index != "vec_idx" {
				t.Fatalf("plan after optimize: %+v %v", plan, err)
			}
			// Each appended row by its own vector (for dot: the row the
			// vector is nearest to), every partition probed, candidates
			// re-scored exactly.
			for id := n; id < n+extra; id += 13 {
				q := vecs[id*dim : (id+1)*dim]
				want := exactTop(vecs, dim, q, 1, tc.metric, func(i int) bool { return i < n+extra })
				got, _ := searchIDs(t, opt, q, &SearchOptions{K: 3, NProbes: 6, RefineFactor: 10})
				if len(got) == 0 || got[0] != want[0] {
					t.Errorf("row %d by its vector after optimize: %v, want %d first", id, got, want[0])
				}
			}
			recall := func(d *Dataset) float64 {
				r := 0.0
				for qi := range 20 {
					q := queries[qi*dim : (qi+1)*dim]
					// Re-scored exactly, so that PQ's loss is not what is
					// measured: the delta's partitions and graphs are.
					got, _ := searchIDs(t, d, q, &SearchOptions{K: 10, NProbes: 3, RefineFactor: 5})
					r += recallOf(got, exactTop(vecs, dim, q, 10, tc.metric, func(i int) bool { return i < n+extra && i%10 != 3 })) / 20
				}
				return r
			}
			if got, want := recall(opt), recall(exactBefore); got < want-0.05 {
				t.Errorf("recall@10 %.3f through the delta, %.3f scoring the new rows exactly", got, want)
			}
			if again, err := opt.OptimizeIndexes(ctx, nil); err != nil || again.Version() != opt.Version() {
				t.Fatalf("second optimize: version %d, %v", again.Version(), err)
			}
			// Compaction over base and delta.
			del, err := opt.Delete(ctx, "id % 10 = 3", nil)
			if err != nil {
				t.Fatal(err)
			}
			out, stats, err := del.Compact(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.IndicesRemapped != 2 || stats.IndexMessage != "" {
				t.Fatalf("compaction %+v: want both segments remapped", stats)
			}
			if plan, err := out.ExplainSearch(ctx, "vec", queries[:dim], &SearchOptions{K: 10}); err != nil || len(plan.UnindexedFragments) != 0 {
				t.Fatalf("plan after compaction: %+v %v", plan, err)
			}
			for qi := range 20 {
				got, _ := searchIDs(t, out, queries[qi*dim:(qi+1)*dim], &SearchOptions{K: 10, NProbes: 3})
				for _, id := range got {
					if id%10 == 3 {
						t.Errorf("query %d after compaction: deleted row %d", qi, id)
					}
				}
			}
			if got, want := recall(out), recall(del); got < want-0.05 {
				t.Errorf("recall@10 %.3f after compaction, %.3f before", got, want)
			}
		})
	}
}

// TestCompactReservesRemappedIDs: a compaction that remaps a vector index
// reserves its new fragments' ids (a ReserveFragments commit, as Lance's
// reserve_fragment_ids), so that an append landing between the
// reservation and the compaction's commit, which takes the next free
// ids, conflicts with nothing: the compaction commits over it, its
// remapped segment naming the new fragments, and the appended rows keep
// ids of their own. Without the reservation the append took the ids the
// remapped segment names and the compaction failed on every busy table.
func TestCompactReservesRemappedIDs(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 400
	rng := rand.New(rand.NewPCG(7, 8))
	vecs := clustered(rng, n+20, dim)
	mem := checkedAlloc(t)
	inner := blob.NewMemStore("v")
	d := newVecDataset(t, inner, vecs, dim, n, n/4, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	// While the compaction writes its remapped segment (after the
	// reservation, before its commit), another writer appends.
	appended := false
	race := &indexWriteStore{Store: inner, writing: func() {
		if appended {
			return
		}
		appended = true
		other, err := Open(ctx, inner, &OpenOptions{Allocator: mem})
		if err != nil {
			t.Error(err)
			return
		}
		r := vecReader(mem, vecs, dim, n, n+20)
		defer r.Release()
		if _, err := other.Append(ctx, r, nil); err != nil {
			t.Error(err)
		}
	}}
	if d, err = Open(ctx, race, &OpenOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	out, stats, err := d.Compact(ctx, nil)
	if err != nil {
		t.Fatalf("compaction over an append after its reservation: %v", err)
	}
	if !appended || stats.FragmentsRemoved != 4 || stats.IndicesRemapped != 1 {
		t.Fatalf("appended %v, stats %+v: want the append raced and 4 fragments compacted, the index remapped", appended, stats)
	}
	// Versions: reservation, the append, then the Rewrite.
	v := out.Version()
	if op := manifest.OperationName(rawTransaction(t, inner, v-2)); op != "ReserveFragments" {
		t.Fatalf("version %d is %s, want the reservation", v-2, op)
	}
	if op := manifest.OperationName(rawTransaction(t, inner, v-1)); op != "Append" {
		t.Fatalf("version %d is %s, want the racing append", v-1, op)
	}
	rw := opAs[*manifest.Rewrite](rawTransaction(t, inner, v))
	if rw == nil || len(rw.Groups) != 1 || len(rw.Groups[0].NewFragments) != 1 {
		t.Fatalf("version %d: Rewrite %+v", v, rw)
	}
	reserve := opAs[*manifest.ReserveFragments](rawTransaction(t, inner, v-2))
	if reserve == nil || reserve.NumFragments != 1 {
		t.Fatalf("reservation %+v, want 1 fragment id", reserve)
	}
	// The new fragment has the reserved id (after the 4 old ones), the
	// append the next one, and the remapped segment's rows all live in
	// the new fragment.
	newID := rw.Groups[0].NewFragments[0].ID
	var ids []uint64
	for _, f := range out.Manifest().Fragments {
		ids = append(ids, f.ID)
	}
	if newID != 4 || !slices.Equal(ids, []uint64{4, 5}) {
		t.Fatalf("new fragment %d, fragments %v: want the reserved id 4 and the append's 5", newID, ids)
	}
	info := out.Indices()
	if len(info) != 1 || !slices.Equal(info[0].Fragments, []uint32{4}) {
		t.Fatalf("index %+v, want it over the compacted fragment 4", info)
	}
	ix, err := vecindex.Open(ctx, inner, indicesDir+info[0].UUID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for p := range ix.Partitions() {
		addrs, _, _, err := ix.PartitionRows(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if a>>32 != 4 {
				t.Fatalf("row address %#x outside the compacted fragment", a)
			}
		}
		rows += len(addrs)
	}
	if rows != n {
		t.Fatalf("remapped segment holds %d rows, want %d", rows, n)
	}
	if c, _ := out.CountRows(ctx); c != n+20 {
		t.Fatalf("%d rows, want %d", c, n+20)
	}
	rep, err := Check(ctx, inner, nil)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
}

// indexWriteStore calls writing before each write of an index file.
type indexWriteStore struct {
	blob.Store
	writing func()
}

func (s *indexWriteStore) Write(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, indicesDir) {
		s.writing()
	}
	return s.Store.Write(ctx, key, data)
}

func (s *indexWriteStore) NewWriter(ctx context.Context, key string) (blob.ObjectWriter, error) {
	if strings.HasPrefix(key, indicesDir) {
		s.writing()
	}
	return s.Store.NewWriter(ctx, key)
}
