package blob_test

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer/blob"
)

// Counting the requests a piece of work makes, as the benchmarks do: wrap
// the store, take a snapshot before and after, and subtract.
func ExampleCountingStore() {
	ctx := context.Background()
	store := blob.NewCountingStore(blob.NewMemStore("example"))
	_ = store.Write(ctx, "data/a.lance", make([]byte, 1000))

	before := store.Snapshot()
	_, _ = store.ReadRange(ctx, "data/a.lance", 0, 100)
	ranges := []blob.Range{{Offset: 200, Length: 50}, {Offset: 300, Length: 50}, {Offset: 900, Length: 100}}
	_, _ = blob.ReadRanges(ctx, store, "data/a.lance", ranges, nil) // one merged request
	work := store.Snapshot().Sub(before)

	fmt.Println(work.ReadRange.Requests, "range requests,", work.BytesRead(), "bytes read")
	fmt.Println(work)
	// Output:
	// 2 range requests, 900 bytes read
	// ReadRange 2 (900 B); total 2 requests, 900 B read, 0 B written
}
