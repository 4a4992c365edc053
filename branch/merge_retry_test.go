package branch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// racingRoot deletes a row of main, through the store underneath, just
// before each of the first lose manifest creations on main, so that the
// merge loses its race and then cannot be rebased over the delete.
type racingRoot struct {
	blob.Store
	t       *testing.T
	lose    int
	creates int
}

func (r *racingRoot) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, "_versions/") {
		r.creates++
		if r.creates <= r.lose {
			ds, err := branch.Open(ctx, r.Store, branch.Ref{}, nil)
			if err != nil {
				r.t.Fatal(err)
			}
			if _, err := ds.Delete(ctx, fmt.Sprintf("id = %d", 60+r.creates), nil); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	return r.Store.CreateIfAbsent(ctx, key, data)
}

// TestMergeRetries: a merge whose target moves under it is retried within
// MergeOptions.Retries, one budget for the commit's rebases and the
// merge's recomputations (each lost race here costs one of each), and
// fails wrapping lancer.ErrConflict past it.
func TestMergeRetries(t *testing.T) {
	cases := []struct {
		lose, retries int
		ok            bool
	}{
		{lose: 0, retries: -1, ok: true},
		{lose: 1, retries: -1},
		{lose: 1, retries: 1},
		{lose: 1, retries: 2, ok: true},
		{lose: 2, retries: 3},
		{lose: 2, retries: 4, ok: true},
		{lose: 2, retries: 0, ok: true}, // dataset.DefaultCommitRetries
	}
	for _, pick := range []bool{false, true} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("cherrypick=%v/lose%d/retries%d", pick, tc.lose, tc.retries), func(t *testing.T) {
				root, main := newFamily(t, true, span(0, 100))
				exp := main.branch("exp")
				exp.add(span(100, 110)...)
				main.add(span(200, 205)...) // not a fast-forward
				racing := &racingRoot{Store: root, t: t, lose: tc.lose}
				opts := &branch.MergeOptions{CommitOptions: dataset.CommitOptions{Retries: tc.retries}}
				var err error
				if pick {
					_, err = branch.CherryPick(context.Background(), racing, branch.Ref{Branch: "exp", Version: 0}, opts)
				} else {
					_, err = branch.Merge(context.Background(), racing, branch.Ref{Branch: "exp"}, opts)
				}
				if !tc.ok {
					var ce *dataset.ConflictError
					if !errors.As(err, &ce) || !errors.Is(err, lancer.ErrConflict) {
						t.Fatalf("got %v, want a conflict", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if racing.creates != tc.lose+1 {
					t.Errorf("%d manifest creations, want %d", racing.creates, tc.lose+1)
				}
				got := contents(t, root, branch.Ref{})
				for i := 1; i <= tc.lose; i++ {
					if _, ok := got[int64(60+i)]; ok {
						t.Errorf("row %d, deleted concurrently, is back", 60+i)
					}
				}
				for _, id := range span(100, 110) {
					if _, ok := got[id]; !ok {
						t.Fatalf("row %d of exp was not merged", id)
					}
				}
			})
		}
	}
}
