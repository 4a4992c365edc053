package dataset

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// Searches across versions. Every write makes a new version, and a server
// opens each new version as a new Dataset, so what a Dataset caches
// (searchState) starts cold on every version: a prefiltered search would
// evaluate its filter on every fragment, and read the vectors of every
// unindexed fragment, again. Yet most fragments of a new version are the
// previous version's, unchanged. So the per-fragment parts of that work
// are cached process-wide, keyed by what determines them: the dataset root,
// the fragment as the manifest describes it (data files, deletion file, row
// id sequence; files are immutable and named uniquely) and the columns'
// definitions. A new version then only reads its new or changed fragments.

// searchCacheBytes bounds the process-wide search cache.
const searchCacheBytes = 512 << 20

// sharedSearchCache is the process-wide cache of per-fragment search work.
var sharedSearchCache = newSearchCache(searchCacheBytes)

// searchCache is a byte-bounded LRU of computed values. A value is computed
// once: concurrent callers of a key wait for the first one (many searches
// land on a new version at once).
type searchCache struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	lru     *list.List // of *searchCacheEntry, most recent first; only computed entries
	entries map[string]*searchCacheEntry
}

type searchCacheEntry struct {
	key  string
	once sync.Once
	val  any
	size int64
	err  error
	elem *list.Element
}

func newSearchCache(limit int64) *searchCache {
	return &searchCache{limit: limit, lru: list.New(), entries: map[string]*searchCacheEntry{}}
}

// get returns key's value, computing it (value and its size in bytes) if
// needed. Failures are not cached. A value larger than the whole cache is
// returned but not kept.
func (c *searchCache) get(ctx context.Context, key string, compute func() (any, int64, error)) (any, error) {
	for {
		c.mu.Lock()
		e, ok := c.entries[key]
		if !ok {
			e = &searchCacheEntry{key: key}
			c.entries[key] = e
		} else if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		e.once.Do(func() {
			computed := false
			defer func() {
				if computed {
					return
				}
				// compute panicked (the panic goes on to this caller):
				// cache nothing, and give callers waiting on e an error
				// rather than a nil value.
				c.mu.Lock()
				defer c.mu.Unlock()
				e.val, e.size, e.err = nil, 0, fmt.Errorf("dataset: search cache: computing %q panicked", key)
				if c.entries[key] == e {
					delete(c.entries, key)
				}
			}()
			v, size, err := compute()
			computed = true
			c.mu.Lock()
			defer c.mu.Unlock()
			e.val, e.size, e.err = v, size, err
			if err != nil || size > c.limit {
				if c.entries[key] == e {
					delete(c.entries, key)
				}
				return
			}
			e.elem = c.lru.PushFront(e)
			c.used += size
			for c.used > c.limit {
				last := c.lru.Back()
				old := last.Value.(*searchCacheEntry)
				c.lru.Remove(last)
				old.elem = nil
				c.used -= old.size
				if c.entries[old.key] == old {
					delete(c.entries, old.key)
				}
			}
		})
		if retryOthersCancel(ctx, e.err) {
			continue
		}
		return e.val, e.err
	}
}

// clear drops every computed value (values being computed are still
// handed to their callers, then kept).
func (c *searchCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; e = e.Next() {
		old := e.Value.(*searchCacheEntry)
		old.elem = nil
		if c.entries[old.key] == old {
			delete(c.entries, old.key)
		}
	}
	c.lru.Init()
	c.used = 0
}

// retryOthersCancel reports whether err is another caller's cancellation
// (its request ended while computing a value this caller waited for) while
// ctx is live: the caller then computes the value itself.
func retryOthersCancel(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// versionOnce computes key's value once per Dataset (in searchState), for
// the per-version results assembled from the shared per-fragment ones.
// Failures are not kept.
func (d *Dataset) versionOnce(ctx context.Context, key string, compute func() (any, error)) (any, error) {
	type entry struct {
		once sync.Once
		val  any
		err  error
	}
	for {
		v, _ := d.searchState.LoadOrStore(key, &entry{})
		e := v.(*entry)
		e.once.Do(func() { e.val, e.err = compute() })
		if e.err != nil {
			d.searchState.CompareAndDelete(key, e)
			if retryOthersCancel(ctx, e.err) {
				continue
			}
		}
		return e.val, e.err
	}
}

// fragmentKey identifies what a fragment holds in this version: its
// rows' values (the data files, which are immutable), which are deleted
// (the deletion file, named uniquely per write) and their row ids (row
// addresses from the fragment id, or the stable row id sequence), under
// the dataset root. The keys of a version's fragments are built once per
// Dataset.
func (d *Dataset) fragmentKey(f *manifest.Fragment) string {
	v, _ := d.versionOnce(context.Background(), "fragkeys", func() (any, error) {
		keys := make(map[*manifest.Fragment]string, len(d.manifest.Fragments))
		for _, f := range d.manifest.Fragments {
			keys[f] = d.buildFragmentKey(f)
		}
		return keys, nil
	})
	if k, ok := v.(map[*manifest.Fragment]string)[f]; ok {
		return k
	}
	return d.buildFragmentKey(f) // not one of the manifest's (a view's copy)
}

func (d *Dataset) buildFragmentKey(f *manifest.Fragment) string {
	b := make([]byte, 0, 256)
	b = append(b, manifest.Location(d.store, "")...)
	b = append(b, "|frag "...)
	b = strconv.AppendUint(b, f.ID, 10)
	b = append(b, " rows "...)
	b = strconv.AppendUint(b, f.PhysicalRows, 10)
	b = append(b, " stable "...)
	b = strconv.AppendBool(b, d.manifest.StableRowIDs())
	for _, df := range f.Files {
		b = append(b, "|file "...)
		b = strconv.AppendQuote(b, df.Path)
		for _, id := range df.Fields {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(id), 10)
		}
		b = append(b, " cols"...)
		for _, c := range df.ColumnIndices {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(c), 10)
		}
		b = append(b, " v"...)
		b = strconv.AppendUint(b, uint64(df.MajorVersion), 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(df.MinorVersion), 10)
		b = append(b, ' ')
		b = append(b, d.baseKey(df.BaseID)...)
	}
	if del := f.DeletionFile; del != nil {
		b = append(b, "|del "...)
		b = append(b, del.Key(f.ID)...)
		b = append(b, ' ')
		b = append(b, d.baseKey(del.BaseID)...)
	}
	if r := f.RowIDs; r != nil {
		if e := r.External; e != nil {
			b = fmt.Appendf(b, "|rowids %q %d %d", e.Path, e.Offset, e.Size)
		} else {
			b = fmt.Appendf(b, "|rowids %x", sha256.Sum256(r.Inline))
		}
	}
	return string(b)
}

// baseKey names a BasePath by its recorded path, since the id alone means
// nothing outside its manifest.
func (d *Dataset) baseKey(id *uint32) string {
	if id == nil {
		return "-"
	}
	for _, bp := range d.manifest.BasePaths {
		if bp.ID == *id {
			return fmt.Sprintf("%d:%t:%q", bp.ID, bp.IsDatasetRoot, bp.Path)
		}
	}
	return fmt.Sprintf("%d:?", *id)
}

// fieldsKey describes fields as reading and binding them depends on: ids,
// names, types, and their members.
func (d *Dataset) fieldsKey(b *strings.Builder, fields []*format.Field) {
	for _, f := range fields {
		fmt.Fprintf(b, "(%d %d %q %s %s %t %d", f.ID, f.ParentID, f.Name, f.LogicalType, f.Type, f.Nullable, f.Blob)
		if f.Dictionary != nil {
			// A legacy dictionary may be stored in the manifest itself:
			// share nothing with other versions.
			fmt.Fprintf(b, " dict %d %d in %s", f.Dictionary.GetOffset(), f.Dictionary.GetLength(), manifest.Location(d.store, d.manifestKey))
		}
		d.fieldsKey(b, f.Children)
		b.WriteString(")")
	}
}

// prefilter is a search filter bound to the columns it reads.
type prefilter struct {
	proj  *projection
	bound *filter.Bound
	// key names the filter and what it reads, for the shared cache.
	key string
}

// preparePrefilter parses predicate and binds it to the columns it names
// (and the virtual columns it names), the only ones a prefilter reads.
func (d *Dataset) preparePrefilter(predicate string) (*prefilter, error) {
	expr, err := filter.Parse(predicate)
	if err != nil {
		return nil, fmt.Errorf("dataset: search: %w", err)
	}
	named, withRowID, withRowAddr := d.namedColumns(expr.Columns())
	proj, err := d.project(named, withRowID, withRowAddr)
	if err != nil {
		return nil, err
	}
	bound, err := expr.Bind(proj.arrow)
	if err != nil {
		return nil, fmt.Errorf("dataset: search: %w", err)
	}
	if bound.Type().ID() != arrow.BOOL {
		return nil, fmt.Errorf("dataset: search: filter %q is %s, not a predicate: %w", predicate, bound.Type(), lancer.ErrInvalidArgument)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "filter %q rowid %t rowaddr %t ", predicate, proj.withRowID, proj.withRowAddr)
	d.fieldsKey(&b, proj.schema.Fields)
	return &prefilter{proj: proj, bound: bound, key: b.String()}, nil
}

// filterFragment returns the row ids of fragment f's live rows that pf
// keeps, from the shared cache or evaluated. It reads only the columns the
// filter names and evaluates the filter once per batch.
func (d *Dataset) filterFragment(ctx context.Context, pf *prefilter, f *manifest.Fragment) (*roaring64.Bitmap, error) {
	v, err := sharedSearchCache.get(ctx, pf.key+"|"+d.fragmentKey(f), func() (any, int64, error) {
		ids, err := d.evalFragmentFilter(ctx, pf, f)
		if err != nil {
			return nil, 0, err
		}
		// Not run-optimized: a filter such as "id % 10 != 3" makes
		// thousands of short runs, and the index probes the allow-list
		// for every candidate, which bitmap containers answer in constant
		// time.
		return ids, int64(ids.GetSizeInBytes()) + 256, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*roaring64.Bitmap), nil
}

func (d *Dataset) evalFragmentFilter(ctx context.Context, pf *prefilter, f *manifest.Fragment) (*roaring64.Bitmap, error) {
	fr, err := d.openFragment(ctx, pf.proj, f)
	if err != nil {
		return nil, err
	}
	defer fr.close()
	if d.manifest.StableRowIDs() && fr.rowIDs == nil {
		// _rowid values come from the sequence even when the filter does
		// not name _rowid.
		if fr.rowIDs, err = d.rowIDs(ctx, f, fr.physical); err != nil {
			return nil, err
		}
	}
	out := roaring64.New()
	mem := d.opts.Allocator
	var ids []uint64
	for start := uint64(0); start < fr.physical; start += DefaultBatchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+DefaultBatchSize, fr.physical)
		runs, live := fr.liveRuns(start, end)
		if live == 0 {
			continue
		}
		rec, err := fr.readLive(ctx, mem, start, end, runs, live)
		if err != nil {
			return nil, err
		}
		mask, err := pf.bound.Eval(ctx, mem, rec)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("dataset: search: %w", err)
		}
		keep := mask.(*array.Boolean)
		ids = ids[:0]
		i := 0
		for _, r := range runs {
			for off := r[0]; off < r[1]; off++ {
				if keep.IsValid(i) && keep.Value(i) {
					ids = append(ids, fr.rowIDValue(off))
				}
				i++
			}
		}
		mask.Release()
		out.AddMany(ids)
	}
	return out, nil
}

// flatFragment returns the finite, non-null vectors of column (dim wide)
// in fragment f with their row ids, from the shared cache or read.
func (d *Dataset) flatFragment(ctx context.Context, column, colKey string, dim int, f *manifest.Fragment) (*flatVectorSet, error) {
	v, err := sharedSearchCache.get(ctx, colKey+"|"+d.fragmentKey(f), func() (any, int64, error) {
		vecs, ids, err := d.readVectors(ctx, column, dim, []uint64{f.ID}, nil)
		if err != nil {
			return nil, 0, err
		}
		return &flatVectorSet{vecs: vecs, ids: ids}, int64(4*len(vecs)+8*len(ids)) + 256, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*flatVectorSet), nil
}

// columnKey names a column and its definition for the shared cache.
func (d *Dataset) columnKey(column string, dim int) (string, error) {
	proj, err := d.project([]string{column}, false, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "vectors %q %d ", column, dim)
	d.fieldsKey(&b, proj.schema.Fields)
	return b.String(), nil
}

// segmentKey names the live rows of an index segment's fragments in this
// version: the segment and the fragments as they are now.
func (d *Dataset) segmentKey(seg manifest.IndexInfo) string {
	h := sha256.New()
	covered := map[uint64]bool{}
	for _, id := range seg.Fragments {
		covered[uint64(id)] = true
	}
	for _, f := range d.manifest.Fragments {
		if covered[f.ID] {
			h.Write([]byte(d.fragmentKey(f)))
			h.Write([]byte{0})
		}
	}
	return fmt.Sprintf("live %s %s %x", manifest.Location(d.store, ""), seg.UUID, h.Sum(nil))
}
