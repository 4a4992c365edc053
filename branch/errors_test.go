package branch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// TestSentinels checks that every lookup of a missing or existing ref
// returns the finer sentinel, and that each still wraps its category.
func TestSentinels(t *testing.T) {
	ctx := context.Background()
	_, root := newDataset(t, 20, 8, 100)
	if _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "v1", branch.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		call     func() error
		want     error
		category error
	}{
		{"GetTag", func() error { _, err := branch.GetTag(ctx, root, "nope"); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"UpdateTag", func() error { _, err := branch.UpdateTag(ctx, root, "nope", branch.Ref{}); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"DeleteTag", func() error { return branch.DeleteTag(ctx, root, "nope") }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"Open tag", func() error { _, err := branch.Open(ctx, root, branch.Ref{Tag: "nope"}, nil); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"Merge tag", func() error { _, err := branch.Merge(ctx, root, branch.Ref{Tag: "nope"}, nil); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"CherryPick tag", func() error { _, err := branch.CherryPick(ctx, root, branch.Ref{Tag: "nope"}, nil); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"CreateTag from tag", func() error { _, err := branch.CreateTag(ctx, root, "t2", branch.Ref{Tag: "nope"}); return err }, branch.ErrNoSuchTag, lancer.ErrNotFound},
		{"GetBranch", func() error { _, err := branch.GetBranch(ctx, root, "nope"); return err }, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"Open branch", func() error { _, err := branch.Open(ctx, root, branch.Ref{Branch: "nope"}, nil); return err }, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"Resolve branch", func() error { _, err := branch.Resolve(ctx, root, branch.Ref{Branch: "nope", Version: 1}); return err }, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"Merge source", func() error { _, err := branch.Merge(ctx, root, branch.Ref{Branch: "nope"}, nil); return err }, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"Merge into", func() error {
			_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{Into: "nope"})
			return err
		}, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"DeleteBranch", func() error { _, err := branch.DeleteBranch(ctx, root, "nope", nil); return err }, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"CreateBranch from", func() error {
			_, err := branch.CreateBranch(ctx, root, "b2", branch.Ref{Branch: "nope"}, nil)
			return err
		}, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"MergeBase", func() error {
			_, err := branch.MergeBase(ctx, root, branch.Ref{Branch: "nope"}, branch.Ref{})
			return err
		}, branch.ErrNoSuchBranch, lancer.ErrNotFound},
		{"Open version", func() error { _, err := branch.Open(ctx, root, branch.Ref{Version: 99}, nil); return err }, dataset.ErrNoSuchVersion, lancer.ErrNotFound},
		{"Open branch version", func() error {
			_, err := branch.Open(ctx, root, branch.Ref{Branch: "exp", Version: 99}, nil)
			return err
		}, dataset.ErrNoSuchVersion, lancer.ErrNotFound},
		{"MergeBase version", func() error {
			_, err := branch.MergeBase(ctx, root, branch.Ref{Version: 99}, branch.Ref{Branch: "exp"})
			return err
		}, dataset.ErrNoSuchVersion, lancer.ErrNotFound},
		{"CreateTag exists", func() error { _, err := branch.CreateTag(ctx, root, "v1", branch.Ref{}); return err }, branch.ErrTagExists, lancer.ErrAlreadyExists},
		{"CreateBranch exists", func() error { _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{}, nil); return err }, branch.ErrBranchExists, lancer.ErrAlreadyExists},
	}
	others := []error{branch.ErrNoSuchTag, branch.ErrNoSuchBranch, dataset.ErrNoSuchVersion, branch.ErrTagExists, branch.ErrBranchExists}
	for _, c := range cases {
		err := c.call()
		if !errors.Is(err, c.want) || !errors.Is(err, c.category) {
			t.Errorf("%s: %v, want %v wrapping %v", c.name, err, c.want, c.category)
			continue
		}
		for _, o := range others {
			if o != c.want && errors.Is(err, o) {
				t.Errorf("%s: %v also matches %v", c.name, err, o)
			}
		}
	}
}

// TestResolve checks the one place a tag becomes a line and a version.
func TestResolve(t *testing.T) {
	ctx := context.Background()
	_, root := newDataset(t, 20, 8, 100)
	if _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{Version: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "on-exp", branch.Ref{Branch: "exp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "on-main", branch.Ref{Version: 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in, want branch.Ref
	}{
		{branch.Ref{}, branch.Ref{}},
		{branch.Ref{Branch: branch.Main, Version: 2}, branch.Ref{Version: 2}},
		{branch.Ref{Branch: "exp"}, branch.Ref{Branch: "exp"}},
		{branch.Ref{Tag: "on-exp"}, branch.Ref{Branch: "exp", Version: 1}},
		{branch.Ref{Tag: "on-main"}, branch.Ref{Version: 2}},
	} {
		got, err := branch.Resolve(ctx, root, c.in)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := branch.Resolve(ctx, root, branch.Ref{Tag: "on-main", Version: 1}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("a tag with a version: %v, want ErrInvalidArgument", err)
	}
	if got, want := branch.Store(root, "exp").URI(), root.URI()+"/tree/exp"; got != want {
		t.Errorf("Store(exp) = %s, want %s", got, want)
	}
	if branch.Store(root, branch.Main) != root || branch.Store(root, "") != root {
		t.Error("Store of the main line is not the root")
	}
}

// TestMergeBaseRefs checks MergeBase on refs: a branch's fork point, at
// the latest versions (0) or given ones, and through a tag.
func TestMergeBaseRefs(t *testing.T) {
	ctx := context.Background()
	root, main := newFamily(t, false, span(0, 20))
	exp := main.branch("exp")
	exp.add(span(20, 25)...)
	main.add(span(30, 35)...)
	if _, err := branch.CreateTag(ctx, root, "exp-head", branch.Ref{Branch: "exp"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ a, b branch.Ref }{
		{branch.Ref{Branch: "exp"}, branch.Ref{}},
		{branch.Ref{}, branch.Ref{Branch: "exp", Version: 2}},
		{branch.Ref{Tag: "exp-head"}, branch.Ref{Branch: branch.Main, Version: 2}},
	} {
		got, err := branch.MergeBase(ctx, root, c.a, c.b)
		if want := (branch.Ref{Version: 1}); err != nil || got != want {
			t.Errorf("MergeBase(%s, %s) = %+v, %v; want %+v", c.a, c.b, got, err, want)
		}
	}
	// Once main has merged exp, their base is exp's merged state.
	merge(t, root, "exp", "", "")
	got, err := branch.MergeBase(ctx, root, branch.Ref{Branch: "exp"}, branch.Ref{})
	if want := (branch.Ref{Branch: "exp", Version: 2}); err != nil || got != want {
		t.Errorf("after a merge: MergeBase = %+v, %v; want %+v", got, err, want)
	}
}
