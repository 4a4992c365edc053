package main

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset"
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
