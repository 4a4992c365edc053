package dataset_test

import (
	"context"
	"fmt"
	"log"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// photos returns rows {id, tag, embedding}: photo i's embedding is
// (i, i², 1), its tag "cat" or "dog".
func photos(from, to int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tag", Type: arrow.BinaryTypes.String},
		{Name: "embedding", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	eb := b.Field(2).(*array.FixedSizeListBuilder)
	vb := eb.ValueBuilder().(*array.Float32Builder)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"cat", "dog"}[i%2])
		eb.Append(true)
		x := float32(i) / 100
		vb.AppendValues([]float32{x, x * x, 1}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// Build a vector index, then find the rows nearest to a query vector, with
// and without a filter. Rows appended after the index was built are found
// too: the fragments the index does not cover are scored exactly.
func ExampleDataset_Search() {
	ctx := context.Background()
	r := photos(0, 1000)
	d, err := dataset.Write(ctx, blob.NewMemStore("photos"), r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}
	d, err = d.CreateIndex(ctx, "embedding", &dataset.CreateIndexOptions{Type: dataset.IndexIVFHNSWSQ})
	if err != nil {
		log.Fatal(err)
	}
	r = photos(1000, 1010)
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}

	for _, filter := range []string{"", "tag = 'cat'"} {
		res, err := d.Search(ctx, "embedding", []float32{10.03, 100.6, 1}, &dataset.SearchOptions{
			K:            3,
			Filter:       filter,
			Columns:      []string{"id", "tag"},
			RefineFactor: 2, // exact distances for the 3 returned
		})
		if err != nil {
			log.Fatal(err)
		}
		for i := range int(res.NumRows()) {
			fmt.Printf("%d %s %.4f\n", res.Column(0).(*array.Int64).Value(i), res.Column(1).(*array.String).Value(i),
				res.Column(2).(*array.Float32).Value(i))
		}
		res.Release()
	}
	// Output:
	// 1003 dog 0.0000
	// 1002 cat 0.0399
	// 1004 cat 0.0407
	// 1002 cat 0.0399
	// 1004 cat 0.0407
	// 1000 cat 0.3609
}
