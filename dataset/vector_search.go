package dataset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// DistanceColumn is the column Search adds: the distance of each row to the
// query, as Lance's "_distance".
const DistanceColumn = "_distance"

// SearchOptions configures Search. A nil pointer or zero fields mean the
// defaults.
type SearchOptions struct {
	// K is the number of nearest rows to return. Default 10. A K beyond
	// the table's rows returns every row, nearest first; memory follows
	// the rows found, not K.
	K int
	// Metric is the distance: "l2", "cosine" or "dot". Default: the
	// index's metric, or l2 without an index. An index built for another
	// metric is not used (the search is exact).
	Metric string
	// Filter is an SQL predicate over the dataset's columns (as
	// ScanOptions.Filter). Default "": every row.
	Filter string
	// Postfilter applies Filter to the K nearest rows instead of searching
	// only the rows it keeps (the default, a prefilter): cheaper for broad
	// filters, but it may return fewer than K rows, as in Lance.
	Postfilter bool
	// NProbes is the number of IVF partitions searched per index segment.
	// Default 20, LanceDB's default.
	NProbes int
	// Ef is the HNSW beam width. Default: the vector package's for a
	// lancer index; Lance's for a Lance index (package vecindex).
	Ef int
	// RefineFactor, when positive, takes K*RefineFactor candidates from the
	// index and re-ranks them by their exact vectors (read from the
	// dataset), so that the distances returned are exact. Default 0:
	// distances of quantized indices are those of the quantized vectors.
	// K*RefineFactor past MaxInt is an error wrapping
	// lancer.ErrInvalidArgument; below it, the candidates are at most the
	// table's rows.
	RefineFactor int
	// Columns are the columns returned, before DistanceColumn. Default nil:
	// every column. "_rowid" may be named.
	Columns []string
	// WithRowID appends "_rowid" before DistanceColumn.
	WithRowID bool
	// Exact ignores indices and scores every row (Lance's
	// bypass_vector_index).
	Exact bool
	// Index names the index to use. Default: any lancer index on the
	// column with the search's metric, else the first vector index Lance
	// built on it with that metric (searched as Lance searches it, see
	// package dataset/vecindex; an index of a kind lancer cannot read is
	// an error wrapping lancer.ErrUnsupported unless Exact).
	Index string
	// Workers is the parallelism of exact scoring. Default GOMAXPROCS.
	Workers int
	// Plan, when not nil, is filled in with how the search runs (see
	// SearchPlan), whether or not it then succeeds.
	Plan *SearchPlan
	// FastSearch searches only the rows the column's vector index covers,
	// leaving out the fragments added since it was built (Lance's
	// fast_search). Without an index it changes nothing: every row is
	// scored exactly.
	FastSearch bool
}

// Search returns the K rows nearest to query in column (a vector column, see
// CreateIndex) of this version, nearest first, with their distances in
// DistanceColumn (float32). It uses the column's lancer vector index for the
// fragments the index covers and scores the other fragments exactly, so rows
// appended after the index was built are found; deleted rows are never
// returned. Rows whose vector is null or not finite are never returned.
//
// The Dataset's cache (OpenOptions.Cache) keeps the index files' front
// matter and the partitions searches loaded, the vectors of the fragments
// scored exactly and each fragment's prefilter result, the latter two for
// the fragment as it is, so repeated searches do not read them again and a
// newly opened version sharing the cache reads and filters only its new or
// changed fragments. Index partitions are read with ctx when a search
// first probes them; a search whose ctx is done fails with its error
// without failing others waiting for the same reads. Search is safe for
// concurrent use. The caller releases the batch.
func (d *Dataset) Search(ctx context.Context, column string, query []float32, opts *SearchOptions) (arrow.RecordBatch, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	hits, err := d.SearchRowIDs(ctx, column, query, &o)
	if err != nil {
		return nil, err
	}
	return d.searchResult(ctx, hits, o)
}

// SearchRowIDs is Search returning only the row ids (as _rowid) and
// distances of the nearest rows, without reading their columns.
func (d *Dataset) SearchRowIDs(ctx context.Context, column string, query []float32, opts *SearchOptions) ([]vector.Neighbor, error) {
	return d.searchRowIDs(ctx, column, query, opts, false)
}

// ExplainSearch returns the plan Search would follow with opts (see
// SearchPlan) without searching: it checks the arguments and opens the
// index segments' front matter, as Search does, but neither evaluates the
// filter (its syntax is checked) nor probes a partition.
func (d *Dataset) ExplainSearch(ctx context.Context, column string, query []float32, opts *SearchOptions) (*SearchPlan, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	p := &SearchPlan{}
	o.Plan = p
	if _, err := d.searchRowIDs(ctx, column, query, &o, true); err != nil {
		return nil, err
	}
	return p, nil
}

func (d *Dataset) searchRowIDs(ctx context.Context, column string, query []float32, opts *SearchOptions, explainOnly bool) ([]vector.Neighbor, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	if o.K == 0 {
		o.K = 10
	}
	if o.K < 0 || o.NProbes < 0 || o.Ef < 0 || o.RefineFactor < 0 {
		return nil, fmt.Errorf("dataset: search: negative k, nprobes, ef or refine factor: %w", lancer.ErrInvalidArgument)
	}
	if o.NProbes == 0 {
		o.NProbes = 20
	}
	field, dim, err := d.vectorColumn(column)
	if err != nil {
		return nil, err
	}
	if len(query) != dim {
		return nil, fmt.Errorf("dataset: search: query of %d dimensions for column %q of %d: %w", len(query), column, dim, lancer.ErrInvalidArgument)
	}
	for i, x := range query {
		if x != x || x > maxFloat32 || x < -maxFloat32 {
			return nil, fmt.Errorf("dataset: search: query element %d is %v: %w", i, x, lancer.ErrInvalidArgument)
		}
	}
	segs, metric, err := d.searchSegments(field.ID, o)
	if err != nil && (o.Index == "" || !errors.Is(err, lancer.ErrNotFound)) {
		return nil, err
	}
	var lance []lanceIndex
	if len(segs) == 0 {
		// No lancer index to use: Lance's own, if the column has one.
		l, m, lerr := d.lanceSegments(ctx, field.ID, o)
		if lerr != nil {
			return nil, lerr
		}
		if len(l) > 0 {
			lance, metric, err = l, m, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if o.Plan != nil {
		*o.Plan = d.searchPlan(ctx, field.ID, column, o, metric, segs, lance)
	}
	if explainOnly {
		if o.Filter != "" {
			if _, err := d.preparePrefilter(o.Filter); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	var allow *roaring64.Bitmap
	if o.Filter != "" {
		if allow, err = d.filterRowIDs(ctx, o.Filter); err != nil {
			return nil, err
		}
	}
	pre := allow
	if o.Postfilter {
		pre = nil
	}

	if len(lance) > 0 {
		hits, err := d.searchLance(ctx, lance, column, dim, query, o, metric, pre)
		if err != nil {
			return nil, err
		}
		if o.Postfilter && allow != nil {
			hits = slices.DeleteFunc(hits, func(n vector.Neighbor) bool { return !allow.Contains(n.ID) })
		}
		return hits, nil
	}

	want, err := d.searchCandidates(o.K, o.RefineFactor)
	if err != nil {
		return nil, err
	}
	top := vector.NewTopK(want)
	covered := roaring.New()
	for _, seg := range segs {
		ivf, err := d.loadVectorIndex(ctx, seg)
		if err != nil {
			return nil, err
		}
		live, err := d.segmentLiveRows(ctx, seg, ivf)
		if err != nil {
			return nil, err
		}
		for _, id := range seg.Fragments {
			covered.Add(id)
		}
		var f vector.Filter
		switch {
		case live == nil && pre == nil:
		case live == nil:
			f = vector.AllowBitmap(pre)
		case pre == nil:
			f = vector.AllowBitmap(live)
		default:
			f = vector.AllowBitmap(roaring64.And(live, pre))
		}
		// Tested on the stored addresses' translations; with a fragment
		// reuse index and no filter it still drops the rows the deferred
		// rewrites did not keep.
		f = d.indexFilter(f)
		found, err := ivf.index.Search(ctx, query, want, &vector.IVFSearchOptions{NProbes: o.NProbes, Ef: o.Ef}, f)
		if err != nil {
			return nil, fmt.Errorf("dataset: search index %s: %w", ivf.location, err)
		}
		for _, n := range d.indexHits(found) {
			top.Push(n.ID, n.Distance)
		}
	}
	var rest []uint64
	for _, f := range d.manifest.Fragments {
		// FastSearch leaves out the fragments no index covers, when an
		// index covers some.
		if !covered.Contains(uint32(f.ID)) && (!o.FastSearch || len(segs) == 0) {
			rest = append(rest, f.ID)
		}
	}
	if len(rest) > 0 {
		parts, err := d.flatVectors(ctx, column, dim, rest)
		if err != nil {
			return nil, err
		}
		for _, n := range searchFlatParts(parts, dim, query, want, metric, pre, o.Workers) {
			top.Push(n.ID, n.Distance)
		}
	}
	hits := top.Sorted()
	if o.RefineFactor > 0 && len(segs) > 0 {
		if hits, err = d.refine(ctx, column, dim, query, hits, o.K, metric); err != nil {
			return nil, err
		}
	}
	if len(hits) > o.K {
		hits = hits[:o.K]
	}
	if o.Postfilter && allow != nil {
		hits = slices.DeleteFunc(hits, func(n vector.Neighbor) bool { return !allow.Contains(n.ID) })
	}
	return hits, nil
}

const maxFloat32 = 3.4028234663852886e38

// searchCandidates returns how many neighbors a search takes from each
// index segment and from the exact scan: k, or k×refine when refining,
// clamped to the rows this version can hold, since no search can find
// more. A k larger than the table is fine (it means every row); a product
// past MaxInt is an error, never a wrapped count, which used to make the
// search keep nothing.
func (d *Dataset) searchCandidates(k, refine int) (int, error) {
	want := k
	if refine > 0 {
		if k > math.MaxInt/refine {
			return 0, fmt.Errorf("dataset: search: k %d × refine factor %d overflows: %w", k, refine, lancer.ErrInvalidArgument)
		}
		want = k * refine
	}
	return int(min(uint64(want), d.maxRows())), nil
}

// maxRows is an upper bound on the rows of this version, deleted ones
// included, from the manifest alone: a fragment that does not record its
// row count counts as the most a fragment can address.
func (d *Dataset) maxRows() uint64 {
	var n uint64
	for _, f := range d.manifest.Fragments {
		rows := f.PhysicalRows
		if rows == 0 && len(f.Files) > 0 {
			rows = manifest.MaxRowsPerFragment
		}
		// n stays below MaxInt before each add of at most 2^32: no wrap.
		if n += rows; n >= math.MaxInt {
			return math.MaxInt
		}
	}
	return n
}

// flatFilter maps positions in a flat vector list to row ids for a filter.
type flatFilter struct {
	ids   []uint64
	allow *roaring64.Bitmap
}

func (f flatFilter) Contains(pos uint64) bool { return f.allow.Contains(f.ids[pos]) }

// searchSegments returns the lancer vector index segments on field that a
// search with o uses, and the metric of the search.
func (d *Dataset) searchSegments(field int32, o SearchOptions) ([]manifest.IndexInfo, vector.Metric, error) {
	var want *vector.Metric
	if o.Metric != "" {
		m, err := vector.ParseMetric(o.Metric)
		if err != nil {
			return nil, 0, err
		}
		want = &m
	}
	var (
		segs   []manifest.IndexInfo
		metric vector.Metric
		found  bool
	)
	for _, ix := range d.manifest.Indices {
		if ix.TypeURL != manifest.VectorIndexTypeURL || len(ix.FieldIDs) != 1 || ix.FieldIDs[0] != field {
			continue
		}
		if o.Index != "" && ix.Name != o.Index {
			continue
		}
		det, err := ix.VectorDetails()
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: index %q: details: %w", ix.Name, err)
		}
		m, err := vector.ParseMetric(det.Metric)
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: index %q: %v: %w", ix.Name, err, lancer.ErrCorrupt)
		}
		if want != nil && m != *want {
			continue
		}
		if found && m != metric {
			continue // two indices of different metrics: use the first one's
		}
		metric, found = m, true
		if len(ix.Fragments) > 0 {
			segs = append(segs, ix)
		}
	}
	if o.Index != "" && !found && !o.Exact {
		return nil, 0, fmt.Errorf("dataset: search: no lancer vector index %q on this column with that metric: %w", o.Index, lancer.ErrNotFound)
	}
	if want != nil {
		metric = *want
	}
	if o.Exact {
		segs = nil
		if !found && want == nil {
			// No lancer index: an exact search orders by the metric of a
			// Lance-format index on the column, as it would search it.
			for _, ix := range d.manifest.Indices {
				if !isLanceVectorIndex(ix, field) || (o.Index != "" && ix.Name != o.Index) || ix.DetailsValue() == nil {
					continue
				}
				if _, m, _, _, err := vecindex.ParseDetails(ix.DetailsValue()); err == nil {
					metric = m
					break
				}
			}
		}
	}
	return segs, metric, nil
}

// filterRowIDs returns the row ids of the rows predicate keeps. A version
// is immutable, so the answer is kept in the cache for the next search
// with the same predicate, and concurrent searches compute it once;
// callers must not modify it. It is assembled from per-fragment answers
// kept across versions (see filterFragment), so a new version evaluates
// the predicate on its new fragments only.
func (d *Dataset) filterRowIDs(ctx context.Context, predicate string) (*roaring64.Bitmap, error) {
	name := "filter " + d.searchKeys().version + " " + predicate
	return cached(ctx, d.opts.Cache, cacheSearch, name, func(ctx context.Context) (*roaring64.Bitmap, int64, error) {
		ids, err := d.computeFilterRowIDs(ctx, predicate)
		if err != nil {
			return nil, 0, err
		}
		return ids, int64(ids.GetSizeInBytes()) + 256, nil
	})
}

// computeFilterRowIDs unions the per-fragment answers of predicate. The
// fragments that scalar indices answering the predicate cover are filtered
// by a scan through those indices (which reads only their candidate rows);
// the others by the per-fragment answers kept across versions.
func (d *Dataset) computeFilterRowIDs(ctx context.Context, predicate string) (*roaring64.Bitmap, error) {
	pf, err := d.preparePrefilter(predicate)
	if err != nil {
		return nil, err
	}
	out := roaring64.New()
	indexed := map[uint64]bool{}
	if expr, err := filter.Parse(predicate); err == nil {
		if p := d.planIndex(expr); p != nil {
			var frags []uint64
			for _, segs := range p.segs {
				for _, seg := range segs.segs {
					for _, id := range seg.Fragments {
						if !indexed[uint64(id)] && d.fragment(uint64(id)) != nil {
							indexed[uint64(id)] = true
							frags = append(frags, uint64(id))
						}
					}
				}
			}
			s, err := d.withFragments(frags).Scan(&ScanOptions{Columns: []string{}, WithRowID: true, Filter: predicate})
			if err != nil {
				return nil, err
			}
			for rec, err := range s.Batches(ctx) {
				if err != nil {
					return nil, err
				}
				out.AddMany(rec.Column(int(rec.NumCols()) - 1).(*array.Uint64).Values())
			}
		}
	}
	for _, f := range d.manifest.Fragments {
		if indexed[f.ID] {
			continue
		}
		ids, err := d.filterFragment(ctx, pf, f)
		if err != nil {
			return nil, err
		}
		out.Or(ids) // copies: the cached bitmaps stay untouched
	}
	return out, nil
}

// segmentLiveRows returns the row ids of the live rows of the fragments seg
// covers in this version, or nil when they are exactly the rows the index
// holds (no row deleted, moved or compacted away since): then the index
// needs no filter. The answer is cached across versions whose covered
// fragments are unchanged (segmentKey).
func (d *Dataset) segmentLiveRows(ctx context.Context, seg manifest.IndexInfo, ivf *loadedIndex) (*roaring64.Bitmap, error) {
	type liveRows struct{ live *roaring64.Bitmap }
	v, err := cached(ctx, d.opts.Cache, cacheSearch, d.segmentKey(seg), func(ctx context.Context) (liveRows, int64, error) {
		view := d.withFragments(toUint64s(seg.Fragments))
		s, err := view.Scan(&ScanOptions{Columns: []string{"_rowid"}})
		if err != nil {
			return liveRows{}, 0, err
		}
		live := roaring64.New()
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				return liveRows{}, 0, err
			}
			live.AddMany(rec.Column(int(rec.NumCols()) - 1).(*array.Uint64).Values())
		}
		if live.Equals(ivf.ids) {
			return liveRows{}, 256, nil
		}
		live.RunOptimize()
		return liveRows{live}, int64(live.GetSizeInBytes()) + 256, nil
	})
	if err != nil {
		return nil, err
	}
	return v.live, nil
}

func toUint64s(ids []uint32) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

// flatVectorSet holds the vectors of some fragments for exact scoring.
type flatVectorSet struct {
	vecs []float32
	ids  []uint64
}

// flatVectors returns the vectors of column in fragments frags (in the
// manifest's order): the per-fragment sets kept across versions
// (flatFragment), so a new version reads only the vectors of its new
// fragments. The sets are shared and read only; they are searched where
// they are (searchFlatParts), never copied into one, which would hold the
// unindexed vectors twice for every version searched.
func (d *Dataset) flatVectors(ctx context.Context, column string, dim int, frags []uint64) ([]*flatVectorSet, error) {
	colKey, err := d.columnKey(column, dim)
	if err != nil {
		return nil, err
	}
	want := make(map[uint64]bool, len(frags))
	for _, id := range frags {
		want[id] = true
	}
	parts := make([]*flatVectorSet, 0, len(frags))
	for _, f := range d.manifest.Fragments {
		if !want[f.ID] {
			continue
		}
		part, err := d.flatFragment(ctx, column, colKey, dim, f)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// searchFlatParts searches the vectors of parts exactly for the k nearest
// to query (row ids in the result), only rows in allow if it is not nil,
// on workers goroutines (GOMAXPROCS when workers <= 0), where the parts are
// (vector.FlatSearchSets).
func searchFlatParts(parts []*flatVectorSet, dim int, query []float32, k int, m vector.Metric, allow *roaring64.Bitmap, workers int) []vector.Neighbor {
	sets := make([]vector.FlatSet, len(parts))
	for i, p := range parts {
		sets[i] = vector.FlatSet{Vectors: p.vecs, IDs: p.ids}
		if allow != nil {
			sets[i].Allow = flatFilter{ids: p.ids, allow: allow}
		}
	}
	return vector.FlatSearchSets(sets, dim, query, k, m, workers)
}

// refine re-scores candidates with their exact vectors and keeps the k
// nearest.
func (d *Dataset) refine(ctx context.Context, column string, dim int, query []float32, cands []vector.Neighbor, k int, m vector.Metric) ([]vector.Neighbor, error) {
	if len(cands) == 0 {
		return cands, nil
	}
	ids := make([]uint64, len(cands))
	for i, c := range cands {
		ids[i] = c.ID
	}
	rec, err := d.TakeRowIDs(ctx, ids, &TakeOptions{Columns: []string{column}})
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	col := rec.Column(0).(*array.FixedSizeList)
	vecs, kept := appendVectors(nil, nil, col, ids, dim)
	exact := vector.FlatSearch(vecs, dim, query, k, m, nil)
	for i := range exact {
		exact[i].ID = kept[exact[i].ID]
	}
	return exact, nil
}

// searchResult takes the rows of hits and appends DistanceColumn.
func (d *Dataset) searchResult(ctx context.Context, hits []vector.Neighbor, o SearchOptions) (arrow.RecordBatch, error) {
	ids := make([]uint64, len(hits))
	dist := make([]float32, len(hits))
	for i, h := range hits {
		ids[i], dist[i] = h.ID, h.Distance
	}
	rec, err := d.TakeRowIDs(ctx, ids, &TakeOptions{Columns: o.Columns, WithRowID: o.WithRowID})
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	mem := d.opts.Allocator
	b := array.NewFloat32Builder(mem)
	defer b.Release()
	b.AppendValues(dist, nil)
	darr := b.NewArray()
	defer darr.Release()
	fields := append(slices.Clone(rec.Schema().Fields()), arrow.Field{Name: DistanceColumn, Type: arrow.PrimitiveTypes.Float32, Nullable: true})
	md := rec.Schema().Metadata()
	schema := arrow.NewSchema(fields, &md)
	cols := append(slices.Clone(rec.Columns()), darr)
	return array.NewRecordBatch(schema, cols, int64(len(hits))), nil
}

// loadedIndex is an opened index file with the set of ids it holds. The
// index loads its partitions lazily (vector.OpenIVF).
type loadedIndex struct {
	index    *vector.IVF
	ids      *roaring64.Bitmap
	location string // the file, for errors
}

// residentBytes is what the cache charges for idx: its front matter and
// its id bitmap (its partitions are charged as they load, apart).
func (idx *loadedIndex) residentBytes() int64 {
	return idx.index.ResidentBytes() + int64(idx.ids.GetSizeInBytes())
}

// loadVectorIndex returns seg's index, from the cache or opened.
func (d *Dataset) loadVectorIndex(ctx context.Context, seg manifest.IndexInfo) (*loadedIndex, error) {
	store, err := d.rootStore(ctx, seg.BaseID, "index "+seg.Name)
	if err != nil {
		return nil, err
	}
	key := indicesDir + seg.UUID + "/" + vectorIndexFile
	// Index files are immutable and named by a random uuid, so one
	// location is one index whichever store object (each Open makes its
	// own) reads it.
	loc := manifest.Location(store, key)
	return cached(ctx, d.opts.Cache, cacheIndices, loc, func(ctx context.Context) (*loadedIndex, int64, error) {
		idx, err := openVectorIndex(ctx, store, key, d.opts.Cache)
		if err != nil {
			return nil, 0, err
		}
		return idx, idx.residentBytes(), nil
	})
}

// openVectorIndex opens an index file lazily (vector.OpenIVF over ranged
// reads): it reads the front matter (centroids, quantizer, row ids,
// partition directory) now, with ctx, and each partition when a search
// first probes it, with the search's ctx, keeping the partitions in c.
func openVectorIndex(ctx context.Context, store blob.Store, key string, c *cache.Cache) (*loadedIndex, error) {
	loc := manifest.Location(store, key)
	info, err := store.Stat(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("dataset: read index %s: %w", loc, err)
	}
	readAt := func(ctx context.Context, off, n int64) ([]byte, error) {
		return store.ReadRange(ctx, key, off, n)
	}
	ivf, err := vector.OpenIVF(ctx, info.Size, readAt, &vector.OpenIVFOptions{Partitions: cachedPartitions[*vector.Partition]{c: c, location: loc}})
	if err != nil {
		return nil, fmt.Errorf("dataset: index %s: %w", loc, err)
	}
	ids := roaring64.New()
	ids.AddMany(ivf.IDs())
	return &loadedIndex{index: ivf, ids: ids, location: loc}, nil
}
