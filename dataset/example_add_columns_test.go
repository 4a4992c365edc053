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

// Scan only the rows a filter keeps. The filter may name columns the scan
// does not return; Limit counts the rows that pass.
func ExampleDataset_Scan_filter() {
	ctx := context.Background()
	store, err := blob.NewLocalStore(historyFixture)
	if err != nil {
		log.Fatal(err)
	}
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err := d.Scan(&dataset.ScanOptions{
		Columns: []string{"id"},
		Filter:  "label2 LIKE 'row-1%' AND extra > 25",
		Limit:   3,
	})
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			fmt.Println(id)
		}
	}
	n, err := d.Count(ctx, "extra > 25")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("count:", n)
	// Output:
	// 14
	// 16
	// 18
	// count: 37
}

// Add a column computed from others, then columns joined from other data.
func ExampleDataset_AddColumns() {
	ctx := context.Background()
	mem := memory.DefaultAllocator
	table := func(fields []arrow.Field, cols ...arrow.Array) array.RecordReader {
		schema := arrow.NewSchema(fields, nil)
		rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
		defer rec.Release()
		r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			log.Fatal(err)
		}
		return r
	}
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	ids.AppendValues([]int64{1, 2, 3}, nil)
	prices := array.NewFloat64Builder(mem)
	defer prices.Release()
	prices.AppendValues([]float64{9.5, 20, 3.25}, nil)
	r := table([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64},
	}, ids.NewArray(), prices.NewArray())
	defer r.Release()
	d, err := dataset.Write(ctx, blob.NewMemStore("goods"), r, nil)
	if err != nil {
		log.Fatal(err)
	}

	d, err = d.AddColumns(ctx, []dataset.NewColumn{{Name: "gross", Expr: "price * 1.2"}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	ids.AppendValues([]int64{3, 1}, nil)
	stock := array.NewInt32Builder(mem)
	defer stock.Release()
	stock.AppendValues([]int32{7, 0}, nil)
	data := table([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "stock", Type: arrow.PrimitiveTypes.Int32},
	}, ids.NewArray(), stock.NewArray())
	defer data.Release()
	if d, err = d.AddColumnsFromData(ctx, data, "id", nil); err != nil {
		log.Fatal(err)
	}

	s, err := d.Scan(nil)
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			stock := "null"
			if st := rec.Column(3); st.IsValid(i) {
				stock = fmt.Sprint(st.(*array.Int32).Value(i))
			}
			fmt.Println(rec.Column(0).(*array.Int64).Value(i), rec.Column(2).(*array.Float64).Value(i), stock)
		}
	}
	fmt.Println(d.Schema().Fields[2].Name, d.Schema().Fields[3].Name, "version", d.Version())
	// Output:
	// 1 11.4 0
	// 2 24 null
	// 3 3.9 7
	// gross stock version 3
}
