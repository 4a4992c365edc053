package dataset_test

import (
	"context"
	"fmt"
	"log"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// A dataset written by real Lance: 8 versions of appends, deletes, an
// update, an added and a renamed column.
const historyFixture = "testdata/history.lance"

// Open a dataset and scan some of its columns.
func Example() {
	ctx := context.Background()
	// dataset works on a store; table.Open(ctx, uri, opts) is the SDK's way
	// in, and owns (and closes) the store it opens.
	store, err := blob.NewLocalStore(historyFixture)
	if err != nil {
		log.Fatal(err)
	}
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	n, err := d.CountRows(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d: %d rows in %d fragments\n", d.Version(), n, len(d.Manifest().Fragments))

	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id", "label2"}, WithRowID: true, Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		labels := rec.Column(1).(*array.String)
		rowIDs := rec.Column(2).(*array.Uint64)
		for i := 0; i < int(rec.NumRows()); i++ {
			fmt.Println(ids.Value(i), labels.Value(i), rowIDs.Value(i))
		}
	}
	// Output:
	// version 8: 46 rows in 4 fragments
	// 1 row-1 1
	// 2 row-2 2
	// 4 row-4 4
}

// Take rows by their position in scan order, and by row id.
func ExampleDataset_Take() {
	ctx := context.Background()
	store, err := blob.NewLocalStore(historyFixture)
	if err != nil {
		log.Fatal(err)
	}
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	opts := &dataset.TakeOptions{Columns: []string{"id", "label2"}, WithRowID: true}
	rec, err := d.Take(ctx, []uint64{45, 17}, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Release()
	for i := 0; i < int(rec.NumRows()); i++ {
		fmt.Println(rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i),
			rec.Column(2).(*array.Uint64).Value(i))
	}

	// Without stable row ids, a row id is fragment id << 32 | offset.
	byID, err := d.TakeRowIDs(ctx, []uint64{1<<32 | 7}, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer byID.Release()
	fmt.Println(byID.Column(0).(*array.Int64).Value(0))
	// Output:
	// 13 updated 12884901890
	// 27 row-27 4294967303
	// 27
}

// Time travel: every version stays readable.
func ExampleDataset_Checkout() {
	ctx := context.Background()
	store, err := blob.NewLocalStore(historyFixture)
	if err != nil {
		log.Fatal(err)
	}
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		log.Fatal(err)
	}
	versions, err := d.Versions(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range versions[:4] {
		old, err := d.Checkout(ctx, v.Version)
		if err != nil {
			log.Fatal(err)
		}
		n, err := old.CountRows(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.Version, v.Operation, n, v.Metadata["total_fragments"])
	}
	// Output:
	// 1 Overwrite 20 1
	// 2 Append 40 2
	// 3 Append 60 3
	// 4 Delete 48 3
}
