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

// goods returns a reader of (id, name, price) rows.
func goods(ids []int64, names []string, prices []float64) array.RecordReader {
	mem := memory.DefaultAllocator
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	ib.AppendValues(ids, nil)
	nb := array.NewStringBuilder(mem)
	defer nb.Release()
	nb.AppendValues(names, nil)
	pb := array.NewFloat64Builder(mem)
	defer pb.Release()
	pb.AppendValues(prices, nil)
	cols := []arrow.Array{ib.NewArray(), nb.NewArray(), pb.NewArray()}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	rec := array.NewRecordBatch(schema, cols, int64(len(ids)))
	defer rec.Release()
	for _, c := range cols {
		c.Release()
	}
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// printGoods prints the rows of a version.
func printGoods(ctx context.Context, d *dataset.Dataset) {
	s, err := d.Scan(nil)
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			fmt.Println(rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i),
				rec.Column(2).(*array.Float64).Value(i))
		}
	}
}

// Raise the price of some rows, computing the new values from the old.
func ExampleDataset_Update() {
	ctx := context.Background()
	r := goods([]int64{1, 2, 3}, []string{"pen", "ink", "pad"}, []float64{2, 10, 4})
	defer r.Release()
	d, err := dataset.Write(ctx, blob.NewMemStore("shop"), r, nil)
	if err != nil {
		log.Fatal(err)
	}
	d, stats, err := d.Update(ctx, map[string]string{"price": "price * 1.5", "name": "upper(name)"}, "price < 5", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d: %d rows updated\n", d.Version(), stats.RowsUpdated)
	// The updated rows were written again, after the others.
	printGoods(ctx, d)
	// Output:
	// version 2: 2 rows updated
	// 2 ink 10
	// 1 PEN 3
	// 3 PAD 6
}

// Upsert: replace the rows whose id the source has, insert the others.
func ExampleDataset_MergeInsert() {
	ctx := context.Background()
	r := goods([]int64{1, 2, 3}, []string{"pen", "ink", "pad"}, []float64{2, 10, 4})
	defer r.Release()
	d, err := dataset.Write(ctx, blob.NewMemStore("shop"), r, nil)
	if err != nil {
		log.Fatal(err)
	}
	source := goods([]int64{2, 4}, []string{"ink", "cup"}, []float64{12, 7})
	defer source.Release()
	d, stats, err := d.MergeInsert(ctx, source, &dataset.MergeInsertOptions{
		On:                      []string{"id"},
		WhenMatchedUpdateAll:    true,
		WhenNotMatchedInsertAll: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d: %d updated, %d inserted\n", d.Version(), stats.RowsUpdated, stats.RowsInserted)
	printGoods(ctx, d)
	// Output:
	// version 2: 1 updated, 1 inserted
	// 1 pen 2
	// 3 pad 4
	// 2 ink 12
	// 4 cup 7
}
