package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// TestThreeWayMergeReplayBoundPerMerge: the versions a merge replays to
// match rows are bounded over the whole merge (both sides), not per
// replay: each side alone stays under maxMergeReplay, together they pass
// it, and the merge stops with a clear lancer.ErrUnsupported. Under the
// bound the same merge gets past the replay.
func TestThreeWayMergeReplayBoundPerMerge(t *testing.T) {
	for _, tc := range []struct {
		bound   int
		wantErr bool
	}{{bound: 5, wantErr: true}, {bound: 6, wantErr: false}} {
		t.Run(fmt.Sprint(tc.bound), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			ours := blob.NewMemStore(t.Name() + "/ours")
			if _, err := Write(ctx, ours, idRows(t, mem, 0, 10), nil); err != nil {
				t.Fatal(err)
			}
			theirs := blob.NewMemStore(t.Name() + "/theirs")
			if _, err := Write(ctx, theirs, idRows(t, mem, 0, 10), nil); err != nil {
				t.Fatal(err)
			}
			base := openStore(t, ours, 1, mem)
			o, th := openStore(t, ours, 1, mem), openStore(t, theirs, 1, mem)
			var err error
			for i := range 3 {
				if o, err = o.Delete(ctx, fmt.Sprintf("id = %d", i), nil); err != nil {
					t.Fatal(err)
				}
				if th, err = th.Delete(ctx, fmt.Sprintf("id = %d", 5+i), nil); err != nil {
					t.Fatal(err)
				}
			}
			old := maxMergeReplay
			maxMergeReplay = tc.bound
			defer func() { maxMergeReplay = old }()
			_, _, err = ThreeWayMerge(ctx, base, o, th, &ThreeWayOptions{DryRun: true})
			// Under the bound the merge goes on to match rows (the
			// separate stores' rows cannot be, a conflict): only the
			// bound's error is in question.
			bounded := errors.Is(err, lancer.ErrUnsupported) && strings.Contains(err.Error(), "replays more than")
			if tc.wantErr != bounded {
				t.Fatalf("bound %d: %v, want error %v", tc.bound, err, tc.wantErr)
			}
		})
	}
}
