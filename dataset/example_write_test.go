package dataset_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// Create a dataset, append to it, delete rows by filter, and go back to
// an earlier version: every write commits a new version, and old versions
// stay readable until Cleanup removes them.
func ExampleWrite() {
	ctx := context.Background()
	store := blob.NewMemStore("shop") // blob.NewLocalStore(dir) for a directory on disk

	r := goods([]int64{1, 2}, []string{"pen", "ink"}, []float64{2, 10})
	d, err := dataset.Write(ctx, store, r, nil) // a new dataset, file version 2.2
	r.Release()
	if err != nil {
		log.Fatal(err)
	}
	r = goods([]int64{3, 4}, []string{"pad", "cap"}, []float64{4, 1})
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		log.Fatal(err)
	}
	if d, err = d.Delete(ctx, "price < 3", nil); err != nil {
		log.Fatal(err)
	}
	printGoods(ctx, d)

	versions, err := d.Versions(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range versions {
		fmt.Println("version", v.Version, v.Operation)
	}

	v2, err := d.Checkout(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	if d, err = v2.Restore(ctx, nil); err != nil { // version 4: version 2's rows again
		log.Fatal(err)
	}
	n, err := d.CountRows(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", d.Version(), "has", n, "rows")
	// Output:
	// 2 ink 10
	// 3 pad 4
	// version 1 Overwrite
	// version 2 Append
	// version 3 Delete
	// version 4 has 4 rows
}
