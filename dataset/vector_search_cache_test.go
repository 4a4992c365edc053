package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// exactFiltered computes, independently of Search's caches, the k rows of
// d nearest to q among those filter keeps: a filtered scan of the vectors
// and their row ids, scored exactly. It also returns every kept row id.
func exactFiltered(t *testing.T, d *Dataset, q []float32, dim, k int, filter string) ([]vector.Neighbor, *roaring64.Bitmap) {
	t.Helper()
	s, err := d.Scan(&ScanOptions{Columns: []string{"vec"}, WithRowID: true, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	var (
		vecs []float32
		ids  []uint64
	)
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		vecs, ids = appendVectors(vecs, ids, rec.Column(0).(*array.FixedSizeList), rec.Column(1).(*array.Uint64).Values(), dim)
	}
	allowed := roaring64.New()
	allowed.AddMany(ids)
	top := vector.FlatSearch(vecs, dim, q, k, vector.L2, nil)
	for i := range top {
		top[i].ID = ids[top[i].ID]
	}
	return top, allowed
}

var cacheTestFilters = []string{
	"id % 10 != 3",
	"category = 'c3'",
	"id < 50",
	"id >= 3000",
	"_rowid % 2 = 0",
	"id < 0",
}

// checkVersionSearches opens version v of store afresh (0: the latest),
// as a server does for each request, and checks its filtered searches:
// exact ones against exactFiltered, indexed ones for matching live rows
// only, and both against the same searches with an empty shared cache.
func checkVersionSearches(t *testing.T, store blob.Store, v uint64, dim int, queries [][]float32, what string) {
	t.Helper()
	ctx := context.Background()
	d := openStore(t, store, v, nil)
	type result struct{ exact, index, post []vector.Neighbor }
	run := func(d *Dataset) map[string][]result {
		out := map[string][]result{}
		for _, f := range cacheTestFilters {
			for _, q := range queries {
				var r result
				var err error
				if r.exact, err = d.SearchRowIDs(ctx, "vec", q, &SearchOptions{K: 10, Filter: f, Exact: true}); err != nil {
					t.Fatalf("%s: %s: %v", what, f, err)
				}
				if r.index, err = d.SearchRowIDs(ctx, "vec", q, &SearchOptions{K: 10, Filter: f, NProbes: 8}); err != nil {
					t.Fatalf("%s: %s: %v", what, f, err)
				}
				if r.post, err = d.SearchRowIDs(ctx, "vec", q, &SearchOptions{K: 10, Filter: f, Postfilter: true, NProbes: 8}); err != nil {
					t.Fatalf("%s: %s: %v", what, f, err)
				}
				out[f] = append(out[f], r)
			}
		}
		return out
	}
	warm := run(d)
	for _, f := range cacheTestFilters {
		for i, q := range queries {
			want, allowed := exactFiltered(t, d, q, dim, 10, f)
			r := warm[f][i]
			if !slices.Equal(r.exact, want) {
				t.Fatalf("%s: %q exact search %v, want %v", what, f, r.exact, want)
			}
			if len(r.index) != len(want) {
				t.Fatalf("%s: %q index search found %d rows, want %d", what, f, len(r.index), len(want))
			}
			for _, n := range append(slices.Clone(r.index), r.post...) {
				if !allowed.Contains(n.ID) {
					t.Fatalf("%s: %q returned row %d, not a live matching row", what, f, n.ID)
				}
			}
		}
	}
	// The same searches with nothing cached across versions.
	sharedSearchCache.clear()
	cold := run(openStore(t, store, v, nil))
	for _, f := range cacheTestFilters {
		for i := range queries {
			w, c := warm[f][i], cold[f][i]
			if !slices.Equal(w.exact, c.exact) || !slices.Equal(w.index, c.index) || !slices.Equal(w.post, c.post) {
				t.Fatalf("%s: %q: searches with shared caches %v differ from cold ones %v", what, f, w, c)
			}
		}
	}
}

// TestSearchAcrossVersions checks filtered searches on fresh opens of
// successive versions (appends, deletes, updates, compaction, index
// optimization, a column added, columns swapped by renames), whose
// per-fragment prefilter results and flat vectors come from earlier
// versions, and of old versions opened again afterwards.
func TestSearchAcrossVersions(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%t", stable), func(t *testing.T) {
			ctx := context.Background()
			const dim, n = 8, 3000
			rng := rand.New(rand.NewPCG(11, 12))
			vecs := clustered(rng, n+200, dim)
			store := blob.NewMemStore("across")
			d := newVecDataset(t, store, vecs, dim, n, 1000, stable)
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 8})
			if err != nil {
				t.Fatal(err)
			}
			queries := [][]float32{clustered(rng, 1, dim), clustered(rng, 1, dim)}
			next := n
			appendRows := func(k int) {
				r := vecReader(memory.DefaultAllocator, vecs, dim, next, next+k)
				defer r.Release()
				next += k
				if d, err = d.Append(ctx, r, nil); err != nil {
					t.Fatal(err)
				}
			}
			var versions []uint64
			step := func(what string) {
				versions = append(versions, d.Version())
				checkVersionSearches(t, store, 0, dim, queries, what)
			}
			step("indexed")
			appendRows(5)
			step("append")
			appendRows(3)
			step("append 2")
			if d, err = d.Delete(ctx, "id % 7 = 0 AND id < 2000"); err != nil {
				t.Fatal(err)
			}
			step("delete in indexed fragments")
			if d, _, err = d.Update(ctx, map[string]string{"category": "'c3'"}, "id % 5 = 1"); err != nil {
				t.Fatal(err)
			}
			step("update")
			appendRows(7)
			if d, err = d.Delete(ctx, "id >= 3000 AND id % 2 = 0"); err != nil {
				t.Fatal(err)
			}
			step("delete in appended fragments")
			if d, _, err = d.Compact(ctx, nil); err != nil {
				t.Fatal(err)
			}
			step("compact")
			appendRows(4)
			if d, err = d.OptimizeIndexes(ctx); err != nil {
				t.Fatal(err)
			}
			step("optimize")
			// Renames change what a filter reads without changing any file.
			if d, err = d.AddColumns(ctx, []NewColumn{{Name: "upper", Expr: "upper(category)"}}); err != nil {
				t.Fatal(err)
			}
			step("column added")
			if d, err = d.RenameColumn(ctx, "category", "label"); err != nil {
				t.Fatal(err)
			}
			if d, err = d.RenameColumn(ctx, "upper", "category"); err != nil {
				t.Fatal(err)
			}
			step("columns swapped")
			for _, v := range versions {
				checkVersionSearches(t, store, v, dim, queries, fmt.Sprintf("version %d again", v))
			}
		})
	}
}

// TestSearchNewVersionConcurrent runs many searches at once on each fresh
// version (they share one computation of the prefilter and flat vectors)
// and checks them against the exact answer.
func TestSearchNewVersionConcurrent(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 2000
	rng := rand.New(rand.NewPCG(13, 14))
	vecs := clustered(rng, n+100, dim)
	store := blob.NewMemStore("concurrent")
	d := newVecDataset(t, store, vecs, dim, n, 1000, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	q := clustered(rng, 1, dim)
	next := n
	for range 5 {
		r := vecReader(memory.DefaultAllocator, vecs, dim, next, next+3)
		next += 3
		if d, err = d.Append(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		r.Release()
		fresh := openStore(t, store, 0, nil)
		want, _ := exactFiltered(t, fresh, q, dim, 10, "id % 10 != 3")
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() {
				got, err := fresh.SearchRowIDs(ctx, "vec", q, &SearchOptions{K: 10, Filter: "id % 10 != 3", Exact: true})
				if err == nil && !slices.Equal(got, want) {
					err = fmt.Errorf("got %v, want %v", got, want)
				}
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// TestSearchCacheBounded checks the shared cache's byte bound and that
// failures are not kept.
func TestSearchCacheBounded(t *testing.T) {
	ctx := context.Background()
	c := newSearchCache(100)
	for i := range 10 {
		if _, err := c.get(ctx, fmt.Sprint(i), func() (any, int64, error) { return i, 30, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if c.used > 100 || len(c.entries) != 3 {
		t.Fatalf("used %d bytes in %d entries", c.used, len(c.entries))
	}
	if _, err := c.get(ctx, "big", func() (any, int64, error) { return 0, 1000, nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.entries["big"]; ok {
		t.Fatal("a value larger than the cache was kept")
	}
	calls := 0
	for range 2 {
		_, err := c.get(ctx, "fail", func() (any, int64, error) { calls++; return nil, 0, fmt.Errorf("boom") })
		if err == nil {
			t.Fatal("no error")
		}
	}
	if calls != 2 {
		t.Fatalf("a failure was cached (%d calls)", calls)
	}
	// Another caller's cancellation is not this caller's failure.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.get(cctx, "x", func() (any, int64, error) { return nil, 0, cctx.Err() }); err == nil {
		t.Fatal("no error")
	}
	v, err := c.get(ctx, "x", func() (any, int64, error) { return 7, 1, nil })
	if err != nil || v.(int) != 7 {
		t.Fatalf("%v %v", v, err)
	}
}

// TestSearchCachePanicNotCached: a compute that panics leaves nothing
// cached; the next get computes again instead of returning a nil value.
func TestSearchCachePanicNotCached(t *testing.T) {
	c := newSearchCache(1 << 20)
	ctx := context.Background()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		c.get(ctx, "k", func() (any, int64, error) { panic("boom") })
	}()
	v, err := c.get(ctx, "k", func() (any, int64, error) { return 7, 8, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a panicked compute: got %v, %v; want 7, nil", v, err)
	}
}
