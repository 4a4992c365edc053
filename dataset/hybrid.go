package dataset

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// Fusion says how HybridSearch merges its vector and full-text results.
type Fusion int

const (
	// FuseRRF is LanceDB's default RRFReranker: reciprocal-rank fusion,
	// a row's relevance the sum over the lists holding it of
	// 1 / (rank + K), rank from 0.
	FuseRRF Fusion = iota
	// FuseLinear is LanceDB's LinearCombinationReranker: both lists'
	// values min-max normalized to [0, 1], relevance Weight × (1 -
	// normalized distance) + (1 - Weight) × normalized score, a row
	// missing from a list contributing 0 for it.
	FuseLinear
)

// Defaults of HybridSearchOptions.
const (
	DefaultRRFK         = 60
	DefaultLinearWeight = 0.7
	DefaultHybridLimit  = 10
)

// HybridSearchOptions configures HybridSearch.
type HybridSearchOptions struct {
	// Text is the full-text query (required): a match, phrase, boolean,
	// boost or multi-match query (ftsindex.FTSQuery).
	Text *ftsindex.FTSQuery
	// Vector is the query vector (required); VectorColumn the column it
	// searches, "" for the only vector column.
	Vector       []float32
	VectorColumn string
	// Limit is the rows wanted, of each search and of the result; 0 means
	// DefaultHybridLimit.
	Limit int
	// Filter is a prefilter of both searches.
	Filter string
	// Fusion merges the lists (FuseRRF by default); RRFK is FuseRRF's k
	// (0: DefaultRRFK), Weight FuseLinear's vector weight (0:
	// DefaultLinearWeight).
	Fusion Fusion
	RRFK   float32
	Weight float32
	// Search tunes the vector search (NProbes, Ef, RefineFactor, Metric,
	// Exact, FastSearch); its K, Filter, Columns and WithRowID are set by
	// HybridSearch.
	Search SearchOptions
}

// HybridHit is one row of a hybrid search: its fused relevance
// (_relevance_score), and its distance and BM25 score where the vector or
// the full-text search found it.
type HybridHit struct {
	RowID       uint64
	Relevance   float32
	Distance    float32
	HasDistance bool
	Score       float32
	HasScore    bool
}

// HybridSearch runs a vector search and a full-text search, each for
// Limit rows with the same prefilter, and fuses them as LanceDB's hybrid
// search does (RRF by default): rows by relevance, best first, equal
// relevance in the order the rows first appear in the vector results and
// then the full-text results; at most Limit rows.
func (d *Dataset) HybridSearch(ctx context.Context, o *HybridSearchOptions) ([]HybridHit, error) {
	if o == nil || o.Text == nil || len(o.Vector) == 0 {
		return nil, fmt.Errorf("dataset: hybrid search needs a full-text query and a query vector: %w", lancer.ErrInvalidArgument)
	}
	limit := o.Limit
	switch {
	case limit < 0:
		return nil, fmt.Errorf("dataset: hybrid search limit %d: %w", limit, lancer.ErrInvalidArgument)
	case limit == 0:
		limit = DefaultHybridLimit
	}
	k, w := o.RRFK, o.Weight
	if k == 0 {
		k = DefaultRRFK
	}
	if w == 0 {
		w = DefaultLinearWeight
	}
	if k < 0 || w < 0 || w > 1 || math.IsNaN(float64(k)) || math.IsNaN(float64(w)) {
		return nil, fmt.Errorf("dataset: hybrid search with RRF k %v, weight %v (k > 0, weight in [0, 1]): %w", k, w, lancer.ErrInvalidArgument)
	}
	col := o.VectorColumn
	if col == "" {
		var err error
		if col, err = d.onlyVectorColumn(); err != nil {
			return nil, err
		}
	}
	so := o.Search
	so.K, so.Filter, so.Columns, so.WithRowID = limit, o.Filter, nil, true
	vec, err := d.SearchRowIDs(ctx, col, o.Vector, &so)
	if err != nil {
		return nil, err
	}
	fts, err := d.FullTextQuery(ctx, o.Text, &FullTextQueryOptions{Limit: limit, Filter: o.Filter})
	if err != nil {
		return nil, err
	}
	// The combined list: vector rows, then full-text rows not yet seen.
	at := map[uint64]int{}
	var out []HybridHit
	hit := func(id uint64) *HybridHit {
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, HybridHit{RowID: id})
		}
		return &out[i]
	}
	for _, n := range vec {
		h := hit(n.ID)
		h.Distance, h.HasDistance = n.Distance, true
	}
	for _, f := range fts {
		h := hit(f.RowID)
		h.Score, h.HasScore = f.Score, true
	}
	switch o.Fusion {
	case FuseRRF:
		for r, n := range vec {
			out[at[n.ID]].Relevance += 1 / (float32(r) + k)
		}
		for r, f := range fts {
			out[at[f.RowID]].Relevance += 1 / (float32(r) + k)
		}
	case FuseLinear:
		dlo, dhi := span(len(vec), func(i int) float32 { return vec[i].Distance })
		slo, shi := span(len(fts), func(i int) float32 { return fts[i].Score })
		for i := range out {
			h := &out[i]
			var vr, fr float32
			if h.HasDistance {
				vr = 1 - normalized(h.Distance, dlo, dhi)
			}
			if h.HasScore {
				fr = normalized(h.Score, slo, shi)
			}
			h.Relevance = w*vr + (1-w)*fr
		}
	default:
		return nil, fmt.Errorf("dataset: hybrid search fusion %d: %w", o.Fusion, lancer.ErrInvalidArgument)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Relevance > out[j].Relevance })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// span is the least and greatest of n values.
func span(n int, v func(int) float32) (lo, hi float32) {
	for i := range n {
		x := v(i)
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}

// normalized maps x in [lo, hi] to [0, 1]; a list of equal values is all 0.
func normalized(x, lo, hi float32) float32 {
	if hi <= lo {
		return 0
	}
	return (x - lo) / (hi - lo)
}

// onlyVectorColumn is the schema's only fixed-size list of floats.
func (d *Dataset) onlyVectorColumn() (string, error) {
	var found []string
	for _, f := range d.Schema().Arrow().Fields() {
		if l, ok := f.Type.(*arrow.FixedSizeListType); ok {
			switch l.Elem().ID() {
			case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
				found = append(found, f.Name)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("dataset: hybrid search: the table has no vector column: %w", lancer.ErrInvalidArgument)
	}
	return "", fmt.Errorf("dataset: hybrid search: vector columns %v: name one: %w", found, lancer.ErrInvalidArgument)
}
