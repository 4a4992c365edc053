package interop_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset"
)

// TestChangeFeedOfLanceHistory: real Lance appends, updates (rows of
// several fragments), deletes and compacts a dataset lancer wrote, with
// and without stable row ids; lancer's change feed of that history has
// each update as its pre- and post-images, the compaction as no change.
func TestChangeFeedOfLanceHistory(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri, _, main, _ := branchedIDs(t, "f.lance", stable)
			start := main.Version()
			rs := graphOps(t, node, ref,
				graphRequest{URI: uri, Op: "append", Rows: []map[string]any{{"id": 100, "val": "new"}}},
				graphRequest{URI: uri, Op: "update", Filter: "id IN (3, 25, 45)", ValuesSQL: map[string]string{"val": "concat('u', CAST(id AS VARCHAR))"}},
				graphRequest{URI: uri, Op: "delete", Filter: "id = 7 OR id = 100"},
				graphRequest{URI: uri, Op: "optimize"},
			)
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Version() <= rs[2].Version {
				t.Fatalf("Lance's optimize committed no version (at %d)", d.Version())
			}
			f, err := d.ChangeFeed(ctx, &dataset.ChangeFeedOptions{Since: start})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rec, err := range f.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				n := int(rec.NumCols())
				for i := range int(rec.NumRows()) {
					got = append(got, fmt.Sprintf("%d %s %d %s", rec.Column(n-2).(*array.Int64).Value(i), rec.Column(n-3).(*array.String).Value(i),
						rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i)))
				}
			}
			v := func(i int) uint64 { return rs[i].Version }
			want := []string{fmt.Sprintf("%d insert 100 new", v(0))}
			for _, id := range []int{3, 25, 45} {
				want = append(want, fmt.Sprintf("%d update_preimage %d v%d", v(1), id, id), fmt.Sprintf("%d update_postimage %d u%d", v(1), id, id))
			}
			want = append(want, fmt.Sprintf("%d delete 7 v7", v(2)), fmt.Sprintf("%d delete 100 new", v(2)))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("change feed of Lance's history:\n got %q\nwant %q", got, want)
			}
		})
	}
}
