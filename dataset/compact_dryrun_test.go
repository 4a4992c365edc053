package dataset

import (
	"context"
	"maps"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
)

// TestCompactDryRun: a dry run writes nothing and predicts the stats of
// the compaction that follows, but the files it adds.
func TestCompactDryRun(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore(t.Name())
	d := smallFragments(t, store, mem, format.Version2_1, false, 10, 10)
	d, err := d.Delete(ctx, "id >= 21 and id < 29 or id = 55", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := func() map[string]int64 {
		out := map[string]int64{}
		for info, err := range store.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			out[info.Key] = info.Size
		}
		return out
	}
	listing := keys()
	opts := &CompactOptions{TargetRowsPerFragment: 25, CommitOptions: CommitOptions{Allocator: mem}}
	opts.DryRun = true
	dry, planned, err := d.Compact(ctx, opts)
	if err != nil || dry != d || !maps.Equal(listing, keys()) {
		t.Fatalf("dry run: version %d (from %d), %v; store changed: %t", dry.Version(), d.Version(), err, !maps.Equal(listing, keys()))
	}
	opts.DryRun = false
	_, stats, err := d.Compact(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if planned.FragmentsRemoved == 0 || planned.FilesAdded != 0 {
		t.Errorf("dry run planned %+v", planned)
	}
	planned.FilesAdded = stats.FilesAdded
	if planned != stats {
		t.Errorf("dry run planned %+v, compaction did %+v", planned, stats)
	}
}
