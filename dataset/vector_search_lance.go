package dataset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// LanceVectorIndexTypeURL is the details type URL of the vector indices
// Lance builds (IVF_PQ, IVF_HNSW_SQ, ...), whose files package
// dataset/vecindex reads.
const LanceVectorIndexTypeURL = "/lance.index.pb.VectorIndexDetails"

// isLanceVectorIndex reports whether ix is one of Lance's vector index
// segments on field: Lance's details type URL, or no details at all (the
// oldest Lance vector indices; vecindex.Open says they are unsupported).
func isLanceVectorIndex(ix manifest.IndexInfo, field int32) bool {
	if len(ix.FieldIDs) != 1 || ix.FieldIDs[0] != field {
		return false
	}
	return ix.TypeURL == "" || strings.HasSuffix(ix.TypeURL, LanceVectorIndexTypeURL)
}

// lanceIndex is an opened Lance vector index segment.
type lanceIndex struct {
	seg manifest.IndexInfo
	ix  *vecindex.Index
}

// lanceSegments returns the segments of the first Lance vector index on
// field (or the one o.Index names) whose metric is the search's, opened,
// and the metric; nil when there is none, or when o.Exact. Every segment
// sharing the index's name is used, as Lance searches an index's deltas
// together.
func (d *Dataset) lanceSegments(ctx context.Context, field int32, o SearchOptions) ([]lanceIndex, vector.Metric, error) {
	if o.Exact {
		return nil, 0, nil
	}
	var want *vector.Metric
	if o.Metric != "" {
		m, err := vector.ParseMetric(o.Metric)
		if err != nil {
			return nil, 0, err
		}
		want = &m
	}
	var (
		out    []lanceIndex
		name   string
		metric vector.Metric
	)
	for _, seg := range d.manifest.Indices {
		if !isLanceVectorIndex(seg, field) || (o.Index != "" && seg.Name != o.Index) || (name != "" && seg.Name != name) {
			continue
		}
		if len(seg.Fragments) == 0 {
			continue
		}
		ix, err := d.loadLanceIndex(ctx, seg)
		if errors.Is(err, lancer.ErrUnsupported) {
			// Never a silent exact search: the caller asks for one.
			return nil, 0, fmt.Errorf("%w (set Exact, lancer search --exact, to score every row instead)", err)
		}
		if err != nil {
			return nil, 0, err
		}
		if name == "" {
			if want != nil && ix.Metric != *want {
				continue // another metric: Lance would not use it either
			}
			name, metric = seg.Name, ix.Metric
		}
		out = append(out, lanceIndex{seg: seg, ix: ix})
	}
	return out, metric, nil
}

// loadLanceIndex returns seg's opened index, from the cache or opened.
func (d *Dataset) loadLanceIndex(ctx context.Context, seg manifest.IndexInfo) (*vecindex.Index, error) {
	store, err := d.rootStore(ctx, seg.BaseID, "index "+seg.Name)
	if err != nil {
		return nil, err
	}
	dir := indicesDir + seg.UUID
	loc := manifest.Location(store, dir) + " lance"
	return cached(ctx, d.opts.Cache, cacheIndices, loc, func(ctx context.Context) (*vecindex.Index, int64, error) {
		ix, err := vecindex.Open(ctx, store, dir, &vecindex.OpenOptions{Name: seg.Name, Partitions: cachedPartitions[*vecindex.Partition]{c: d.opts.Cache, location: loc}})
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: search: %w", err)
		}
		// The partitions searches load are cached apart, each charged
		// its bytes; the index's charge is its front matter.
		return ix, ix.ResidentBytes(), nil
	})
}

// searchLance is SearchRowIDs over a Lance vector index, with Lance's
// plan (its scanner's ann and knn_combined): each segment's IVF search
// for k×refine candidates among the live rows of the fragments it covers
// (and the prefilter's); with a refine factor, the candidates re-scored
// with their exact vectors and the k nearest kept; when fragments are not
// covered, the candidates re-scored exactly (so that distances compare)
// and merged with the exact search of those fragments. Without refine and
// with every fragment covered, distances are the index's (quantized).
func (d *Dataset) searchLance(ctx context.Context, segs []lanceIndex, column string, dim int, query []float32, o SearchOptions, metric vector.Metric, pre *roaring64.Bitmap) ([]vector.Neighbor, error) {
	refine := max(o.RefineFactor, 1)
	want, err := d.searchCandidates(o.K, refine)
	if err != nil {
		return nil, err
	}
	top := vector.NewTopK(want)
	covered := roaring.New()
	for _, s := range segs {
		if s.ix.Dim() != dim {
			return nil, fmt.Errorf("dataset: search: index %q has %d dimensions, column %q %d: %w", s.seg.Name, s.ix.Dim(), column, dim, lancer.ErrCorrupt)
		}
		live, err := d.lanceLiveRows(ctx, s.seg)
		if err != nil {
			return nil, err
		}
		for _, id := range s.seg.Fragments {
			covered.Add(id)
		}
		// Lance searches without a prefilter when there is no filter and
		// no covered fragment has deletions, and some kernels differ then
		// (4-bit PQ quantizes its distance table): so does this search. Rows
		// of fragments no longer in the version make Lance's prefilter
		// non-empty: a search that returns one is done again with the
		// live rows as its filter.
		// With a fragment reuse index the filter is tested on the stored
		// addresses' translations, and without one it still drops the
		// rows the deferred rewrites did not keep (indexFilter).
		var allow vector.Filter
		switch {
		case pre != nil:
			allow = vector.AllowBitmap(roaring64.And(live, pre))
		case d.anyDeletions(s.seg.Fragments):
			allow = vector.AllowBitmap(live)
		}
		so := &vecindex.SearchOptions{NProbes: o.NProbes, Ef: o.Ef, Allow: d.indexFilter(allow)}
		found, err := s.ix.Search(ctx, query, want, so)
		found = d.indexHits(found)
		if err == nil && allow == nil && slices.ContainsFunc(found, func(n vector.Neighbor) bool { return !live.Contains(n.ID) }) {
			so.Allow = d.indexFilter(vector.AllowBitmap(live))
			found, err = s.ix.Search(ctx, query, want, so)
			found = d.indexHits(found)
		}
		if err != nil {
			return nil, fmt.Errorf("dataset: search index %q: %w", s.seg.Name, err)
		}
		for _, n := range found {
			top.Push(n.ID, n.Distance)
		}
	}
	hits := top.Sorted()
	if o.RefineFactor > 0 {
		if hits, err = d.refineLance(ctx, column, dim, query, hits, o.K, metric); err != nil {
			return nil, err
		}
	}
	var rest []uint64
	for _, f := range d.manifest.Fragments {
		if !covered.Contains(uint32(f.ID)) && !o.FastSearch {
			rest = append(rest, f.ID)
		}
	}
	if len(rest) == 0 {
		if len(hits) > o.K {
			hits = hits[:o.K]
		}
		return hits, nil
	}
	if o.RefineFactor == 0 {
		if hits, err = d.refineLance(ctx, column, dim, query, hits, len(hits), metric); err != nil {
			return nil, err
		}
	}
	parts, err := d.flatVectors(ctx, column, dim, rest)
	if err != nil {
		return nil, err
	}
	merged := vector.NewTopK(o.K)
	for _, n := range hits {
		merged.Push(n.ID, n.Distance)
	}
	off := dotOffset(metric)
	for _, n := range searchFlatParts(parts, dim, query, o.K, metric, pre, o.Workers) {
		merged.Push(n.ID, n.Distance+off)
	}
	return merged.Sorted(), nil
}

// anyDeletions reports whether a fragment of frags has deleted rows.
func (d *Dataset) anyDeletions(frags []uint32) bool {
	want := map[uint64]bool{}
	for _, id := range frags {
		want[uint64(id)] = true
	}
	for _, f := range d.manifest.Fragments {
		if want[f.ID] && f.DeletionFile != nil {
			return true
		}
	}
	return false
}

// dotOffset is what turns a distance of package vector's into Lance's: for
// dot, Lance reports 1 - a·b (the index's distances are Lance's); 0 when
// vector already does.
func dotOffset(m vector.Metric) float32 {
	if m != vector.Dot {
		return 0
	}
	zero := []float32{0}
	return 1 - vector.DotDistance(zero, zero)
}

// refineLance re-scores cands with their exact vectors (Lance's distances)
// and keeps the k nearest.
func (d *Dataset) refineLance(ctx context.Context, column string, dim int, query []float32, cands []vector.Neighbor, k int, m vector.Metric) ([]vector.Neighbor, error) {
	out, err := d.refine(ctx, column, dim, query, cands, k, m)
	if err != nil {
		return nil, err
	}
	if off := dotOffset(m); off != 0 {
		for i := range out {
			out[i].Distance += off
		}
	}
	return out, nil
}

// lanceLiveRows returns the row ids of the live rows of the fragments seg
// covers in this version: the prefilter Lance applies to an index search
// (deleted rows, and rows of fragments since rewritten, are never
// returned). Cached across versions whose covered fragments are
// unchanged.
func (d *Dataset) lanceLiveRows(ctx context.Context, seg manifest.IndexInfo) (*roaring64.Bitmap, error) {
	return cached(ctx, d.opts.Cache, cacheSearch, "lance "+d.segmentKey(seg), func(ctx context.Context) (*roaring64.Bitmap, int64, error) {
		view := d.withFragments(toUint64s(seg.Fragments))
		s, err := view.Scan(&ScanOptions{Columns: []string{"_rowid"}})
		if err != nil {
			return nil, 0, err
		}
		live := roaring64.New()
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				return nil, 0, err
			}
			live.AddMany(rec.Column(int(rec.NumCols()) - 1).(*array.Uint64).Values())
		}
		live.RunOptimize()
		return live, int64(live.GetSizeInBytes()) + 256, nil
	})
}
