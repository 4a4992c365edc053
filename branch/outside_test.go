package branch_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// TestCallsCloseOutsideStores: a shallow clone's files live in its
// source, a store opened for the clone's base path. Merge, CherryPick,
// Check and Optimize read through it and return nothing that reads later,
// so each closes, exactly once, every store it opened.
func TestCallsCloseOutsideStores(t *testing.T) {
	ctx := context.Background()
	src := blob.NewMemStore("src")
	r := rowsReader(0, 40, 20)
	_, err := dataset.Write(ctx, src, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	srcDS, err := dataset.Open(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	const srcURI = "fake://source-table"
	root := blob.NewMemStore("dst")
	if _, err := dataset.Clone(ctx, srcDS, root, &dataset.CloneOptions{SourcePath: srcURI}); err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		opened []*blobtest.ClosingStore
	)
	defer branch.SetOpenOutside(func(_ context.Context, uri string, _ map[string]string) (blob.Store, error) {
		if uri != srcURI {
			t.Errorf("opened %q, want the clone's source %q", uri, srcURI)
		}
		mu.Lock()
		defer mu.Unlock()
		s := &blobtest.ClosingStore{Store: src}
		opened = append(opened, s)
		return s, nil
	})()
	// during runs call and checks that it opened the source and closed
	// every store it opened exactly once.
	during := func(what string, call func() error) {
		t.Helper()
		mu.Lock()
		opened = nil
		mu.Unlock()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(opened) == 0 {
			t.Fatalf("%s read nothing of the clone's source: the test proves nothing", what)
		}
		for i, s := range opened {
			if n := s.Closes(); n != 1 {
				t.Errorf("%s: store %d of %d opened outside the family closed %d times, want 1", what, i+1, len(opened), n)
			}
		}
	}

	if _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	appendRows(t, root, "exp", 100, 110)
	appendRows(t, root, "", 40, 50)
	if _, err := mustOpen(t, root, branch.Ref{}).Delete(ctx, "id = 7", nil); err != nil {
		t.Fatal(err)
	}

	during("Check", func() error {
		rep, err := branch.Check(ctx, root, nil)
		if err == nil && len(rep.Violations) > 0 {
			return errors.New(rep.Violations[0].Message)
		}
		return err
	})
	during("Merge", func() error {
		_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, nil)
		return err
	})
	during("CherryPick", func() error {
		// main@3 is the deletion of id 7.
		_, err := branch.CherryPick(ctx, root, branch.Ref{Version: 3}, &branch.MergeOptions{Into: "exp"})
		return err
	})
	during("Optimize", func() error {
		_, err := branch.Optimize(ctx, root, &branch.OptimizeOptions{SkipCleanup: true})
		return err
	})
}
