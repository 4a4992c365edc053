package dataset

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// segmentsOf returns the uuids of the segments of index name, in
// manifest order, and the fragments each covers.
func segmentsOf(d *Dataset, name string) (uuids []string, frags [][]uint32) {
	for _, ix := range d.Indices() {
		if ix.Name == name {
			uuids = append(uuids, ix.UUID)
			frags = append(frags, ix.Fragments)
		}
	}
	return uuids, frags
}

// TestOptimizeIndexesNumIndicesToMerge: Lance's num_indices_to_merge. 0
// (the default) adds a delta beside the old segments; N replaces the N
// newest with one segment over their fragments and the new ones, keeping
// the older segments as they are; more than there are merges all; with
// nothing new, merging a single segment is skipped; negative is refused.
func TestOptimizeIndexesNumIndicesToMerge(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 600
	rng := rand.New(rand.NewPCG(5, 6))
	vecs := clustered(rng, n, dim)
	mem := checkedAlloc(t)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, 300, 300, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	appendRows := func(from, to int) {
		t.Helper()
		r := vecReader(mem, vecs, dim, from, to)
		defer r.Release()
		if d, err = d.Append(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 { // three deltas: segments base, d1, d2, d3
		appendRows(300+50*i, 350+50*i)
		if d, err = d.OptimizeIndexes(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	uuids, frags := segmentsOf(d, "vec_idx")
	if len(uuids) != 4 {
		t.Fatalf("after three default optimizes: %d segments %v, want 4", len(uuids), frags)
	}
	appendRows(450, 500)
	newFrag := uint32(d.manifest.Fragments[len(d.manifest.Fragments)-1].ID)
	if d, err = d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{NumIndicesToMerge: 2}); err != nil {
		t.Fatal(err)
	}
	got, gotFrags := segmentsOf(d, "vec_idx")
	want := append(slices.Concat(frags[2], frags[3]), newFrag)
	if len(got) != 3 || got[0] != uuids[0] || got[1] != uuids[1] || slices.Contains(uuids, got[2]) || !slices.Equal(gotFrags[2], want) {
		t.Fatalf("NumIndicesToMerge 2: segments %v %v, want %v %v and a new one over %v", got, gotFrags, uuids[0], uuids[1], want)
	}
	if plan, err := d.ExplainSearch(ctx, "vec", vecs[:dim], &SearchOptions{K: 5}); err != nil || len(plan.UnindexedFragments) != 0 {
		t.Fatalf("plan %+v, %v: want every fragment indexed", plan, err)
	}
	// Nothing new and one segment to merge: nothing to do.
	same, err := d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{NumIndicesToMerge: 1})
	if err != nil || same.Version() != d.Version() {
		t.Fatalf("NumIndicesToMerge 1 with nothing new: version %d -> %d, %v", d.Version(), same.Version(), err)
	}
	// More than there are: one segment over every fragment.
	if d, err = d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{NumIndicesToMerge: 99}); err != nil {
		t.Fatal(err)
	}
	got, gotFrags = segmentsOf(d, "vec_idx")
	if len(got) != 1 || len(gotFrags[0]) != len(d.manifest.Fragments) {
		t.Fatalf("NumIndicesToMerge 99: segments %v, want one over all %d fragments", gotFrags, len(d.manifest.Fragments))
	}
	for qi := range 20 {
		q := vecs[qi*7*dim : (qi*7+1)*dim]
		ids, _ := searchIDs(t, d, q, &SearchOptions{K: 10, NProbes: 4})
		if exact := exactTop(vecs[:500*dim], dim, q, 10, vector.L2, nil); !slices.Equal(ids, exact) {
			t.Fatalf("query %d through the merged segment: %v, exact %v", qi, ids, exact)
		}
	}
	for _, o := range []OptimizeIndexesOptions{{NumIndicesToMerge: -1}, {MergeSizeRatio: -1}} {
		if _, err := d.OptimizeIndexes(ctx, &o); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%+v: %v, want ErrInvalidArgument", o, err)
		}
	}
}

// TestIndexedTableStaysCompact: a table with a vector index under rounds
// of small appends, each followed by maintenance (Compact with SizeRatio,
// then OptimizeIndexes), keeps a bounded number of fragments and index
// segments when OptimizeIndexes merges small segments (MergeSizeRatio):
// compaction never gathers fragments different segments cover, so with
// a delta per round (Lance's default) both grow with the rounds. Searches
// through the index stay exact (IVF_FLAT, every partition probed) and
// find every row by its own vector (the quantized kinds).
func TestIndexedTableStaysCompact(t *testing.T) {
	ctx := context.Background()
	const dim, base, rounds, per = 8, 400, 24, 20
	const bound = 12 // fragments and segments; log2 of the rounds is about 5
	n := base + rounds*per
	rng := rand.New(rand.NewPCG(7, 8))
	vecs := clustered(rng, n, dim)
	for _, tc := range []struct {
		typ   string
		ratio float64
		exact bool
	}{{IndexIVFFlat, 0, true}, {IndexIVFFlat, 1, true}, {IndexIVFPQ, 1, false}, {IndexIVFHNSWSQ, 1, false}} {
		t.Run(tc.typ+"/"+map[bool]string{false: "delta", true: "merge"}[tc.ratio > 0], func(t *testing.T) {
			mem := checkedAlloc(t)
			d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, base, base, false)
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: tc.typ, Partitions: 4, SubVectors: 4})
			if err != nil {
				t.Fatal(err)
			}
			maxFrags, maxSegs := 0, 0
			for r := range rounds {
				rd := vecReader(mem, vecs, dim, base+r*per, base+(r+1)*per)
				d, err = d.Append(ctx, rd, nil)
				rd.Release()
				if err != nil {
					t.Fatal(err)
				}
				if d, _, err = d.Compact(ctx, &CompactOptions{SizeRatio: 1}); err != nil {
					t.Fatal(err)
				}
				if d, err = d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{MergeSizeRatio: tc.ratio}); err != nil {
					t.Fatal(err)
				}
				segs, _ := segmentsOf(d, "vec_idx")
				maxFrags, maxSegs = max(maxFrags, len(d.manifest.Fragments)), max(maxSegs, len(segs))
			}
			t.Logf("%s ratio %v: at most %d fragments, %d segments over %d rounds", tc.typ, tc.ratio, maxFrags, maxSegs, rounds)
			if tc.ratio == 0 {
				// Lance's default: the test's bound would not hold.
				if maxFrags <= bound || maxSegs <= bound {
					t.Fatalf("deltas only: %d fragments, %d segments; the bound %d does not tell merging from not", maxFrags, maxSegs, bound)
				}
				return
			}
			if maxFrags > bound || maxSegs > bound {
				t.Fatalf("%d fragments, %d segments at most: want <= %d", maxFrags, maxSegs, bound)
			}
			if plan, err := d.ExplainSearch(ctx, "vec", vecs[:dim], &SearchOptions{K: 5}); err != nil || len(plan.UnindexedFragments) != 0 || plan.Index != "vec_idx" {
				t.Fatalf("plan %+v, %v: want every fragment indexed", plan, err)
			}
			for qi := range 25 {
				id := qi * (n / 25)
				q := vecs[id*dim : (id+1)*dim]
				ids, _ := searchIDs(t, d, q, &SearchOptions{K: 10, NProbes: 4, RefineFactor: 4})
				if tc.exact {
					if exact := exactTop(vecs, dim, q, 10, vector.L2, nil); !slices.Equal(ids, exact) {
						t.Fatalf("query %d: %v, exact %v", qi, ids, exact)
					}
				} else if !slices.Contains(ids, uint64(id)) {
					t.Fatalf("row %d not found by its own vector: %v", id, ids)
				}
			}
		})
	}
}
