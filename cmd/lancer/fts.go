package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// searchText runs "lancer search --text": the full-text search of column
// (its FTS index; "" for the only one), writing the k best rows with their
// _score last, best first.
func searchText(ctx context.Context, ds *dataset.Dataset, column, text string, k int, columns []string, withRowID bool, out rowWriter) error {
	hits, err := ds.FullTextSearch(ctx, text, &dataset.FullTextSearchOptions{Column: column, Limit: k})
	if err != nil {
		return err
	}
	ids := make([]uint64, len(hits))
	sb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer sb.Release()
	for i, h := range hits {
		ids[i] = h.RowID
		sb.Append(h.Score)
	}
	rec, err := ds.TakeRowIDs(ctx, ids, &dataset.TakeOptions{Columns: columns, WithRowID: withRowID})
	if err != nil {
		return err
	}
	defer rec.Release()
	scores := sb.NewArray()
	defer scores.Release()
	fields := append(rec.Schema().Fields(), arrow.Field{Name: "_score", Type: arrow.PrimitiveTypes.Float32, Nullable: true})
	cols := append(append([]arrow.Array(nil), rec.Columns()...), scores)
	with := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer with.Release()
	if err := out.begin(with.Schema()); err != nil {
		return err
	}
	if err := out.write(with); err != nil {
		return err
	}
	return out.end()
}

// hybridFlags are search's hybrid-search options.
type hybridFlags struct {
	vectorColumn string
	fusion       string
	weight       float64
	rrfK         float64
}

// fusion parses --fusion.
func (h *hybridFlags) options() (dataset.Fusion, error) {
	switch strings.ToLower(h.fusion) {
	case "", "rrf":
		return dataset.FuseRRF, nil
	case "linear":
		return dataset.FuseLinear, nil
	}
	return 0, fmt.Errorf("--fusion %q: rrf or linear: %w", h.fusion, lancer.ErrInvalidArgument)
}

// searchHybrid runs "lancer search --text T --vector V": a vector search
// of the vector column and a full-text search of column ("" for the only
// FTS-indexed one, or all of them), fused (reciprocal-rank fusion by
// default, as LanceDB's RRFReranker), writing the k best rows with
// _distance and _score (null where that search did not find the row) and
// _relevance_score last.
func searchHybrid(ctx context.Context, ds *dataset.Dataset, column, text string, q []float32, k int, filter string,
	search dataset.SearchOptions, h *hybridFlags, columns []string, withRowID bool, out rowWriter) error {
	fusion, err := h.options()
	if err != nil {
		return err
	}
	hits, err := ds.HybridSearch(ctx, &dataset.HybridSearchOptions{
		Text:   &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Terms: text, Column: column}},
		Vector: q, VectorColumn: h.vectorColumn, Limit: k, Filter: filter,
		Fusion: fusion, RRFK: float32(h.rrfK), Weight: float32(h.weight), Search: search,
	})
	if err != nil {
		return err
	}
	ids := make([]uint64, len(hits))
	db := array.NewFloat32Builder(memory.DefaultAllocator)
	defer db.Release()
	sb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer sb.Release()
	rb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer rb.Release()
	for i, h := range hits {
		ids[i] = h.RowID
		if h.HasDistance {
			db.Append(h.Distance)
		} else {
			db.AppendNull()
		}
		if h.HasScore {
			sb.Append(h.Score)
		} else {
			sb.AppendNull()
		}
		rb.Append(h.Relevance)
	}
	rec, err := ds.TakeRowIDs(ctx, ids, &dataset.TakeOptions{Columns: columns, WithRowID: withRowID})
	if err != nil {
		return err
	}
	defer rec.Release()
	extra := []arrow.Array{db.NewArray(), sb.NewArray(), rb.NewArray()}
	defer func() {
		for _, a := range extra {
			a.Release()
		}
	}()
	fields := rec.Schema().Fields()
	for _, name := range []string{"_distance", "_score", "_relevance_score"} {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float32, Nullable: true})
	}
	cols := append(append([]arrow.Array(nil), rec.Columns()...), extra...)
	with := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer with.Release()
	if err := out.begin(with.Schema()); err != nil {
		return err
	}
	if err := out.write(with); err != nil {
		return err
	}
	return out.end()
}
