package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cache"
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

// checkVersionSearches opens version v of store afresh (0: the latest)
// with the shared cache c, as a server does for each request, and checks
// its filtered searches: exact ones against exactFiltered, indexed ones
// for matching live rows only, and both against the same searches with an
// empty cache.
func checkVersionSearches(t *testing.T, store blob.Store, c *cache.Cache, v uint64, dim int, queries [][]float32, what string) {
	t.Helper()
	ctx := context.Background()
	d := openWithCache(t, store, v, c)
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
	cold := run(openWithCache(t, store, v, newTestCache(t, DefaultCacheBytes)))
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
			shared := newTestCache(t, DefaultCacheBytes)
			step := func(what string) {
				versions = append(versions, d.Version())
				checkVersionSearches(t, store, shared, 0, dim, queries, what)
			}
			step("indexed")
			appendRows(5)
			step("append")
			appendRows(3)
			step("append 2")
			if d, err = d.Delete(ctx, "id % 7 = 0 AND id < 2000", nil); err != nil {
				t.Fatal(err)
			}
			step("delete in indexed fragments")
			if d, _, err = d.Update(ctx, map[string]string{"category": "'c3'"}, "id % 5 = 1", nil); err != nil {
				t.Fatal(err)
			}
			step("update")
			appendRows(7)
			if d, err = d.Delete(ctx, "id >= 3000 AND id % 2 = 0", nil); err != nil {
				t.Fatal(err)
			}
			step("delete in appended fragments")
			if d, _, err = d.Compact(ctx, nil); err != nil {
				t.Fatal(err)
			}
			step("compact")
			appendRows(4)
			if d, err = d.OptimizeIndexes(ctx, nil); err != nil {
				t.Fatal(err)
			}
			step("optimize")
			// Renames change what a filter reads without changing any file.
			if d, err = d.AddColumns(ctx, []NewColumn{{Name: "upper", Expr: "upper(category)"}}, nil); err != nil {
				t.Fatal(err)
			}
			step("column added")
			if d, err = d.RenameColumn(ctx, "category", "label", nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.RenameColumn(ctx, "upper", "category", nil); err != nil {
				t.Fatal(err)
			}
			step("columns swapped")
			for _, v := range versions {
				checkVersionSearches(t, store, shared, v, dim, queries, fmt.Sprintf("version %d again", v))
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
	shared := newTestCache(t, DefaultCacheBytes)
	for range 5 {
		r := vecReader(memory.DefaultAllocator, vecs, dim, next, next+3)
		next += 3
		if d, err = d.Append(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		r.Release()
		fresh := openWithCache(t, store, 0, shared)
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

func newTestCache(t testing.TB, limit int64) *cache.Cache {
	t.Helper()
	c, err := cache.New(limit)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openWithCache opens version v of store (0: the latest) with cache c.
func openWithCache(t testing.TB, store blob.Store, v uint64, c *cache.Cache) *Dataset {
	t.Helper()
	d, err := Open(context.Background(), store, &OpenOptions{Version: v, Cache: c})
	if err != nil {
		t.Fatalf("open version %d: %v", v, err)
	}
	return d
}

// TestSearchCacheBounded: searches of every kind through a small cache
// (readers, deletion vectors, index front matter and partitions, filters,
// flat vectors all compete for it) give the answers of a large one, and
// the cache never holds more than its limit.
func TestSearchCacheBounded(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 3000
	rng := rand.New(rand.NewPCG(21, 22))
	vecs := clustered(rng, n+100, dim)
	store := blob.NewMemStore("bounded")
	d := newVecDataset(t, store, vecs, dim, n, 500, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	r := vecReader(memory.DefaultAllocator, vecs, dim, n, n+100)
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 11 = 0", nil); err != nil {
		t.Fatal(err)
	}
	const limit = 64 << 10
	small := newTestCache(t, limit)
	big := newTestCache(t, DefaultCacheBytes)
	ds, db := openWithCache(t, store, 0, small), openWithCache(t, store, 0, big)
	for i := range 30 {
		q := clustered(rng, 1, dim)
		o := &SearchOptions{K: 10, NProbes: 1 + i%8, Filter: cacheTestFilters[i%len(cacheTestFilters)], Postfilter: i%3 == 0}
		got, err := ds.SearchRowIDs(ctx, "vec", q, o)
		if err != nil {
			t.Fatal(err)
		}
		want, err := db.SearchRowIDs(ctx, "vec", q, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("search %d through a %d-byte cache: %v, through a large one %v", i, limit, got, want)
		}
		if s := small.Stats(); s.Bytes > limit {
			t.Fatalf("search %d: the cache holds %d bytes, over its %d", i, s.Bytes, limit)
		}
	}
	s, b := small.Stats(), big.Stats()
	if s.Evictions == 0 || b.Evictions != 0 {
		t.Fatalf("evictions: %d in the small cache, %d in the large one", s.Evictions, b.Evictions)
	}
	for _, ns := range []string{cacheReaders, cacheDeletions, cacheIndices, cachePartitions, cacheSearch} {
		if b.BytesByNamespace[ns] == 0 {
			t.Errorf("nothing in the large cache under %s: %v", ns, b.BytesByNamespace)
		}
	}
}

// TestDatasetsDoNotShareCaches: two Datasets opened with different caches
// fill only their own; a Dataset opened without one gets its own, which
// its checkouts share.
func TestDatasetsDoNotShareCaches(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 1000
	rng := rand.New(rand.NewPCG(23, 24))
	vecs := clustered(rng, n, dim)
	store := blob.NewMemStore("apart")
	d := newVecDataset(t, store, vecs, dim, n, 500, false)
	if _, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	a, b := newTestCache(t, DefaultCacheBytes), newTestCache(t, DefaultCacheBytes)
	da, db := openWithCache(t, store, 0, a), openWithCache(t, store, 0, b)
	q := clustered(rng, 1, dim)
	if _, err := da.SearchRowIDs(ctx, "vec", q, &SearchOptions{Filter: "id < 500"}); err != nil {
		t.Fatal(err)
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Entries == 0 || sb.Entries != 0 || sb.Misses != 0 {
		t.Fatalf("after a search of the first: %d entries in its cache, %d (%d misses) in the other's", sa.Entries, sb.Entries, sb.Misses)
	}
	before := a.Stats()
	if _, err := db.SearchRowIDs(ctx, "vec", q, &SearchOptions{Filter: "id < 500"}); err != nil {
		t.Fatal(err)
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Hits != before.Hits || sa.Misses != before.Misses || sb.Misses == 0 {
		t.Fatalf("the second's search used the first's cache (%+v → %+v) or none of its own (%+v)", before, sa, sb)
	}
	// Without a cache: one per Open, shared by its checkouts.
	d1, d2 := openStore(t, store, 0, nil), openStore(t, store, 0, nil)
	if d1.opts.Cache == nil || d1.opts.Cache == d2.opts.Cache {
		t.Fatal("two Opens without a cache share one")
	}
	c1, err := d1.Checkout(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c1.opts.Cache != d1.opts.Cache {
		t.Fatal("a checkout does not share its Dataset's cache")
	}
}

// cancelStore makes the reads of one key wait until released, or until
// their ctx is done, announcing each on started.
type cancelStore struct {
	blob.Store
	key     string
	started chan struct{}
	release chan struct{}
}

func (s *cancelStore) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if key == s.key {
		select {
		case s.started <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.ReadRange(ctx, key, off, n)
}

// TestSearchCancelledWhileLoading: a search whose ctx is cancelled while
// the index partition it needs is being read fails with the ctx's error,
// and another search waiting for the same partition gets it and succeeds,
// with the answer of an undisturbed search.
func TestSearchCancelledWhileLoading(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 1000
	rng := rand.New(rand.NewPCG(25, 26))
	vecs := clustered(rng, n, dim)
	mem := blob.NewMemStore("cancel")
	d := newVecDataset(t, mem, vecs, dim, n, 1000, false)
	// lancer's own format, whose partitions loads share (read, never
	// written since Lance's formats became lancer's).
	d = createLancerIVF(t, d, "vec", &CreateIndexOptions{Partitions: 1})
	q := clustered(rng, 1, dim)
	want, err := d.SearchRowIDs(ctx, "vec", q, nil)
	if err != nil {
		t.Fatal(err)
	}
	seg := d.Indices()[0]
	store := &cancelStore{Store: mem, key: indicesDir + seg.UUID + "/" + vectorIndexFile, started: make(chan struct{}, 1), release: make(chan struct{})}
	fresh, err := Open(ctx, store, &OpenOptions{Cache: newTestCache(t, DefaultCacheBytes)})
	if err != nil {
		t.Fatal(err)
	}
	// Open the index (its front matter) first, so that the reads the
	// searches wait on are of its one partition.
	close(store.release)
	if _, err := fresh.loadVectorIndex(ctx, seg); err != nil {
		t.Fatal(err)
	}
	store.release = make(chan struct{})
	<-store.started // drain the front matter's announcement

	cctx, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() {
		_, err := fresh.SearchRowIDs(cctx, "vec", q, nil)
		first <- err
	}()
	<-store.started
	second := make(chan error, 1)
	go func() {
		got, err := fresh.SearchRowIDs(ctx, "vec", q, nil)
		if err == nil && !slices.Equal(got, want) {
			err = fmt.Errorf("got %v, want %v", got, want)
		}
		second <- err
	}()
	// Give the second search time to join the partition's load; it must
	// succeed whether it joined before the cancel or loads afresh after.
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled search: %v", err)
	}
	close(store.release)
	if err := <-second; err != nil {
		t.Fatalf("the other search: %v", err)
	}
	// And a search with a ctx already done fails at once.
	if _, err := fresh.SearchRowIDs(cctx, "vec", q, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a search with a done ctx: %v", err)
	}
}
