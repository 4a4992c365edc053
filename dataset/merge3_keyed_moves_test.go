package dataset

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer/blob"
)

// TestThreeWayMergeKeyedMovesWithoutReplay: with a key, the replay that
// tells a compaction's moves from updates is only a shortcut. When it
// cannot run (over the replay budget) the merge still succeeds, as keyed
// merges did before they replayed anything, and tells moves from updates
// by comparing the moved rows' values: the source's compaction counts as
// no change, its one update as one. Over the bound a keyed merge that
// passed the replay's error on would fail here.
func TestThreeWayMergeKeyedMovesWithoutReplay(t *testing.T) {
	for _, bound := range []int{maxMergeReplay, 0} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			dir := t.TempDir()
			ours, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Write(ctx, ours, idRows(t, mem, 0, 30), &WriteOptions{MaxRowsPerFile: 12}); err != nil {
				t.Fatal(err)
			}
			theirs, err := blob.NewLocalStore(filepath.Join(dir, "b.lance"))
			if err != nil {
				t.Fatal(err)
			}
			base := openStore(t, ours, 1, mem)
			th, err := Clone(ctx, base, theirs, &CloneOptions{Branch: "b"})
			if err != nil {
				t.Fatal(err)
			}
			th = openStore(t, theirs, 0, mem)
			if th, _, err = th.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 64}); err != nil {
				t.Fatal(err)
			}
			if th, _, err = th.Update(ctx, map[string]string{"s": "'theirs'"}, "id = 4", nil); err != nil {
				t.Fatal(err)
			}
			o, _, err := openStore(t, ours, 0, mem).Update(ctx, map[string]string{"s": "'ours'"}, "id = 20", nil)
			if err != nil {
				t.Fatal(err)
			}
			old := maxMergeReplay
			maxMergeReplay = bound
			defer func() { maxMergeReplay = old }()
			_, r, err := ThreeWayMerge(ctx, base, o, th, &ThreeWayOptions{On: []string{"id"}, DryRun: true})
			if err != nil {
				t.Fatalf("replay bound %d: %v, want the keyed merge made", bound, err)
			}
			if r.RowsUpdated != 1 || r.RowsAdded != 0 || r.RowsDeleted != 0 || len(r.Conflicts) != 0 {
				t.Errorf("replay bound %d: report %+v, want 1 row updated and nothing else (the compaction moved 29 rows it did not change)", bound, r)
			}
		})
	}
}
