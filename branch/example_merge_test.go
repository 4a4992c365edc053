package branch_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// Branch a dataset without copying it, clean the branch while main gets
// new rows, look at the difference, and merge the branch back.
func ExampleMerge() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root, err := blob.NewLocalStore(filepath.Join(dir, "labels.lance"))
	if err != nil {
		log.Fatal(err)
	}
	r := kv(span(0, 5), map[int64]string{3: "??"})
	_, err = dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: true})
	r.Release()
	if err != nil {
		log.Fatal(err)
	}

	// Clean the labels on a branch.
	exp, err := branch.CreateBranch(ctx, root, "cleanup", branch.Ref{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err = exp.Update(ctx, map[string]string{"val": "'v3'"}, "val = '??'", nil); err != nil {
		log.Fatal(err)
	}
	// Meanwhile main gets new rows.
	main, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	r = kv([]int64{5}, nil)
	_, err = main.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}

	diff, err := branch.Diff(ctx, root, branch.Ref{}, branch.Ref{Branch: "cleanup"}, &dataset.DiffOptions{Columns: []string{"id", "val"}})
	if err != nil {
		log.Fatal(err)
	}
	for rec, err := range diff.Batches(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			fmt.Println("diff:", rec.Column(0).(*array.String).Value(i), rec.Column(2).(*array.Int64).Value(i), rec.Column(3).(*array.String).Value(i))
		}
	}

	res, err := branch.Merge(ctx, root, branch.Ref{Branch: "cleanup"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("merged %s into main (base %s): %d updated, fast-forward %v\n", res.Source, res.Base, res.Report.RowsUpdated, res.FastForward)
	merged, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := merged.Count(ctx, "val = 'v3' OR id = 5")
	fmt.Println("main has the clean label and the new row:", n == 2)
	// Output:
	// diff: delete 5 v5
	// diff: update 3 v3
	// merged cleanup@2 into main (base main@1): 1 updated, fast-forward false
	// main has the clean label and the new row: true
}
