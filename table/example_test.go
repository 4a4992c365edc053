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

// tempTable creates a table of photos [0, n) in a new temporary folder and
// returns it with a func that closes it and removes the folder.
func tempTable(ctx context.Context, n int) (*table.Table, func()) {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	r := photos(0, n)
	defer r.Release()
	t, err := table.Create(ctx, filepath.Join(dir, "photos.lance"), r, nil, nil)
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	return t, func() {
		t.Close()
		os.RemoveAll(dir)
	}
}

// Index a vector column, then find the rows nearest a query vector among
// those a filter keeps. Without an index the search is exact.
func ExampleTable_Search() {
	ctx := context.Background()
	t, done := tempTable(ctx, 100)
	defer done()

	if err := t.CreateIndex(ctx, "embedding", nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("index:", t.Indices()[0].Name)

	// The default index (IVF_HNSW_SQ) compares 8-bit codes; a refine
	// factor re-ranks its candidates by their exact vectors.
	res, err := t.Search(ctx, "embedding", []float32{42.3, 1}, &dataset.SearchOptions{
		K:            3,
		RefineFactor: 4,
		Filter:       "tag = 'cat'",
		Columns:      []string{"id", "tag"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer res.Release()
	for i := range int(res.NumRows()) {
		fmt.Println("near:", res.Column(0).(*array.Int64).Value(i), res.Column(1).(*array.String).Value(i))
	}
	// Output:
	// index: embedding_idx
	// near: 42 cat
	// near: 44 cat
	// near: 40 cat
}

// Ask how a search would run: the index it uses, the rows it scores
// exactly and how it filters.
func ExampleTable_ExplainSearch() {
	ctx := context.Background()
	t, done := tempTable(ctx, 100)
	defer done()

	if err := t.CreateIndex(ctx, "embedding", nil); err != nil {
		log.Fatal(err)
	}
	plan, err := t.ExplainSearch(ctx, "embedding", []float32{42.3, 1}, &dataset.SearchOptions{K: 3, Filter: "tag = 'cat'"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("index:", plan.Index, plan.IndexType, "lancer:", plan.Lancer)
	fmt.Println("rows scored exactly:", plan.RowsScoredExactly)
	fmt.Println("filter:", plan.FilterMode, plan.Filter)
	// Output:
	// index: embedding_idx IvfHnswSq lancer: false
	// rows scored exactly: 0
	// filter: prefilter tag = 'cat'
}

// Work on a branch while main moves on, then merge the branch back: both
// sides' changes are kept, in one new version of main.
func ExampleTable_Merge() {
	ctx := context.Background()
	t, done := tempTable(ctx, 4)
	defer done()

	fix, err := t.CreateBranch(ctx, "fix", table.Ref{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer fix.Close()
	if _, err := fix.Update(ctx, map[string]string{"tag": "'bird'"}, "id = 1", nil); err != nil {
		log.Fatal(err)
	}
	r := photos(4, 6)
	err = t.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}

	res, err := t.Merge(ctx, table.Ref{Branch: "fix"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// The row keeps its identity across the update even without stable
	// row ids: the merge follows the fix branch's Update transaction.
	rep := res.Report
	fmt.Printf("merged %s into %s (base %s): %d added, %d updated, %d deleted, fast-forward %t\n",
		res.Source, res.Target, res.Base, rep.RowsAdded, rep.RowsUpdated, rep.RowsDeleted, res.FastForward)
	rows, _ := t.Count(ctx, "")
	birds, _ := t.Count(ctx, "tag = 'bird'")
	fmt.Printf("main@%d: %d rows, %d bird\n", t.Version(), rows, birds)
	// Output:
	// merged fix@2 into main@2 (base main@1): 0 added, 1 updated, 0 deleted, fast-forward false
	// main@3: 6 rows, 1 bird
}

// List what changed between two versions, row by row, then the history
// of every line, newest first, with its parents.
func ExampleTable_Diff() {
	ctx := context.Background()
	t, done := tempTable(ctx, 4)
	defer done()

	if err := t.Delete(ctx, "id = 0", nil); err != nil {
		log.Fatal(err)
	}
	if _, err := t.Update(ctx, map[string]string{"tag": "'bird'"}, "id = 3", nil); err != nil {
		log.Fatal(err)
	}
	r := photos(4, 5)
	err := t.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}

	// Without stable row ids an update is a deletion and an insertion.
	changes, err := t.Diff(ctx, table.Ref{Version: 1}, t.Ref(), &dataset.DiffOptions{Columns: []string{"id", "tag"}})
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range changes.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		change := rec.Column(rec.Schema().FieldIndices(dataset.ChangeColumn)[0]).(*array.String)
		ids := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
		tags := rec.Column(rec.Schema().FieldIndices("tag")[0]).(*array.String)
		for i := range int(rec.NumRows()) {
			fmt.Println(change.Value(i), ids.Value(i), tags.Value(i))
		}
	}

	commits, err := t.Log(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range commits {
		fmt.Println(c.Ref(), c.Operation, "parents", c.Parents)
	}
	// Output:
	// delete 0 cat
	// delete 3 dog
	// insert 3 bird
	// insert 4 cat
	// main@4 Append parents [main@3]
	// main@3 Update parents [main@2]
	// main@2 Delete parents [main@1]
	// main@1 Overwrite parents []
}
