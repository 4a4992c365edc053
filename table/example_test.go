package table_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

// photos returns rows {id, tag, embedding}: photo i's embedding is (i, 1),
// its tag "cat" or "dog".
func photos(from, to int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tag", Type: arrow.BinaryTypes.String},
		{Name: "embedding", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	eb := b.Field(2).(*array.FixedSizeListBuilder)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"cat", "dog"}[i%2])
		eb.Append(true)
		eb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(i), 1}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// Create a table, write to it, scan and search it, work on a branch and
// merge the branch back, then close it. A URI may be a local path or an
// s3://, gs:// or az:// location (with Options.StorageOptions).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	uri := filepath.Join(dir, "photos.lance")

	r := photos(0, 6)
	t, err := table.Create(ctx, uri, r, nil, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close() // closes the store: a cloud store's connections

	// Writes advance the handle to the version they commit.
	r = photos(6, 8)
	err = t.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}
	n, _ := t.Count(ctx, "tag = 'cat'")
	fmt.Printf("version %d: %d cats\n", t.Version(), n)

	// The nearest photos to a query vector.
	res, err := t.Search(ctx, "embedding", []float32{4.2, 1}, &dataset.SearchOptions{K: 2, Columns: []string{"id", "tag"}})
	if err != nil {
		log.Fatal(err)
	}
	for i := range int(res.NumRows()) {
		fmt.Println("near:", res.Column(0).(*array.Int64).Value(i), res.Column(1).(*array.String).Value(i))
	}
	res.Release()

	// A branch, without copying data; its writes leave main alone.
	exp, err := t.CreateBranch(ctx, "relabel", table.Ref{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := exp.Update(ctx, map[string]string{"tag": "'bird'"}, "id = 7", nil); err != nil {
		log.Fatal(err)
	}
	res2, err := t.Merge(ctx, table.Ref{Branch: "relabel"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("merged %s into main, now version %d\n", res2.Source, t.Version())
	n, _ = t.Count(ctx, "tag = 'bird'")
	fmt.Println("birds on main:", n)
	// Output:
	// version 2: 4 cats
	// near: 4 cat
	// near: 5 dog
	// merged relabel@3 into main, now version 3
	// birds on main: 1
}

// Open a table by URI at a ref (a branch, a branch's version, or a tag)
// and scan it.
func ExampleOpen() {
	ctx := context.Background()
	t, err := table.Open(ctx, "../branch/testdata/history.lance", &table.Options{Ref: table.Ref{Tag: "three_fragments"}})
	if err != nil {
		log.Fatal(err)
	}
	defer t.Close()
	sc, err := t.Scan(&dataset.ScanOptions{Columns: []string{"id"}, Limit: 3})
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("ids:", rec.Column(0).(*array.Int64).Int64Values())
	}
	fmt.Println("at", t.Ref())

	ref, err := branch.ParseRef("exp@5")
	if err != nil {
		log.Fatal(err)
	}
	exp, err := t.Checkout(ctx, ref)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := exp.Count(ctx, "")
	fmt.Printf("%s has %d rows\n", exp.Ref(), n)
	// Output:
	// ids: [0 1 2]
	// at main@3
	// exp@5 has 53 rows
}
