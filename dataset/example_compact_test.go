package dataset_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// ids returns a reader of one int64 column "id" holding [from, to).
func ids(from, to int64) array.RecordReader {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, to-from)
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// Compact a dataset made of many small appends into one fragment.
func ExampleDataset_Compact() {
	ctx := context.Background()
	store := blob.NewMemStore("compact-example")
	d, err := dataset.Write(ctx, store, ids(0, 10), nil)
	if err != nil {
		log.Fatal(err)
	}
	for i := int64(1); i < 10; i++ {
		if d, err = d.Append(ctx, ids(10*i, 10*i+10), nil); err != nil {
			log.Fatal(err)
		}
	}
	if d, err = d.Delete(ctx, "id % 4 = 0", nil); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d: %d fragments\n", d.Version(), len(d.Manifest().Fragments))

	d, stats, err := d.Compact(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := d.CountRows(ctx)
	fmt.Printf("version %d: %d fragment, %d rows\n", d.Version(), len(d.Manifest().Fragments), n)
	fmt.Printf("%+v\n", stats)
	// Output:
	// version 11: 10 fragments
	// version 12: 1 fragment, 75 rows
	// {FragmentsRemoved:10 FragmentsAdded:1 FilesRemoved:20 FilesAdded:1 IndicesRemapped:0 IndexMessage:}
}

// Remove every version but the latest, and the files only they used.
func ExampleCleanup() {
	ctx := context.Background()
	store := blob.NewMemStore("cleanup-example")
	d, err := dataset.Write(ctx, store, ids(0, 10), nil)
	if err != nil {
		log.Fatal(err)
	}
	if d, err = d.Append(ctx, ids(10, 20), nil); err != nil {
		log.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, nil); err != nil {
		log.Fatal(err)
	}
	// Versions count as old after OlderThan (default a week); Now moves
	// the clock for the example.
	stats, err := dataset.Cleanup(ctx, store, &dataset.CleanupOptions{
		OlderThan: time.Hour,
		Now:       func() time.Time { return time.Now().Add(2 * time.Hour) },
	})
	if err != nil {
		log.Fatal(err)
	}
	versions, _ := dataset.ListVersions(ctx, store)
	fmt.Println("removed", stats.VersionsRemoved, "versions and", stats.FilesRemoved, "files; left", versions)
	// Output:
	// removed 2 versions and 4 files; left [3]
}
