package table

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// CreateBranch creates branch name from ref without copying data
// (branch.CreateBranch) and returns a handle on it, sharing t's store.
func (t *Table) CreateBranch(ctx context.Context, name string, from Ref, opts *branch.CreateBranchOptions) (*Table, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	if _, err := branch.CreateBranch(ctx, t.root.store, name, from, opts); err != nil {
		return nil, err
	}
	return t.Checkout(ctx, Ref{Branch: name})
}

// ListBranches returns the table's branches, by name.
func (t *Table) ListBranches(ctx context.Context) ([]branch.Branch, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	return branch.ListBranches(ctx, t.root.store)
}

// DeleteBranch removes branch name and the files only it uses
// (branch.DeleteBranch).
func (t *Table) DeleteBranch(ctx context.Context, name string, opts *branch.DiscardOptions) (branch.DiscardStats, error) {
	if _, err := t.current(); err != nil {
		return branch.DiscardStats{}, err
	}
	return branch.DeleteBranch(ctx, t.root.store, name, opts)
}

// CreateTag makes tag name point at target (branch.CreateTag).
func (t *Table) CreateTag(ctx context.Context, name string, target Ref) (branch.Tag, error) {
	if _, err := t.current(); err != nil {
		return branch.Tag{}, err
	}
	return branch.CreateTag(ctx, t.root.store, name, target)
}

// UpdateTag moves tag name to target (branch.UpdateTag).
func (t *Table) UpdateTag(ctx context.Context, name string, target Ref) (branch.Tag, error) {
	if _, err := t.current(); err != nil {
		return branch.Tag{}, err
	}
	return branch.UpdateTag(ctx, t.root.store, name, target)
}

// ListTags returns the table's tags, by name.
func (t *Table) ListTags(ctx context.Context) ([]branch.Tag, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	return branch.ListTags(ctx, t.root.store)
}

// DeleteTag removes tag name (branch.DeleteTag).
func (t *Table) DeleteTag(ctx context.Context, name string) error {
	if _, err := t.current(); err != nil {
		return err
	}
	return branch.DeleteTag(ctx, t.root.store, name)
}

// Merge merges source into opts.Into (branch.Merge). Into names the target
// line; "" there means the handle's line, not main as for branch.Merge
// (write "main" to merge into main from a branch's handle). A merge into
// the handle's line advances the handle to the merge's version.
func (t *Table) Merge(ctx context.Context, source Ref, opts *branch.MergeOptions) (*branch.MergeResult, error) {
	return t.mergeInto(ctx, opts, func(o *branch.MergeOptions) (*branch.MergeResult, error) {
		return branch.Merge(ctx, t.root.store, source, o)
	})
}

// CherryPick applies the changes of one commit to opts.Into
// (branch.CherryPick); Into defaults to the handle's line, as for Merge.
func (t *Table) CherryPick(ctx context.Context, commit Ref, opts *branch.MergeOptions) (*branch.MergeResult, error) {
	return t.mergeInto(ctx, opts, func(o *branch.MergeOptions) (*branch.MergeResult, error) {
		return branch.CherryPick(ctx, t.root.store, commit, o)
	})
}

// mergeInto runs a merge or cherry-pick with Into defaulting to the
// handle's line, and advances the handle when it committed there.
func (t *Table) mergeInto(ctx context.Context, opts *branch.MergeOptions, merge func(*branch.MergeOptions) (*branch.MergeResult, error)) (*branch.MergeResult, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	var o branch.MergeOptions
	if opts != nil {
		o = *opts
	}
	line := t.Ref().Branch
	if o.Into == "" {
		o.Into = line
	}
	res, err := merge(&o)
	if err != nil {
		return res, err
	}
	if target := res.Target.Branch; target == line && !o.DryRun && !res.UpToDate {
		out, err := ds.Checkout(ctx, res.Version)
		if err != nil {
			return res, err
		}
		t.advance(out)
	}
	return res, nil
}

// MergeBase returns the newest state a and b share (branch.MergeBase).
func (t *Table) MergeBase(ctx context.Context, a, b Ref) (Ref, error) {
	if _, err := t.current(); err != nil {
		return Ref{}, err
	}
	return branch.MergeBase(ctx, t.root.store, a, b)
}

// Diff computes the rows that differ between states a and b of the table
// (as branch.Diff does); its Batches(ctx) streams them. Both states are
// opened as Checkout opens them, so the stores they need outside the
// table's family are the handle's and its Close closes them.
func (t *Table) Diff(ctx context.Context, a, b Ref, opts *dataset.DiffOptions) (*dataset.Changes, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	from, err := newTable(ctx, t.root, t.opts, a)
	if err != nil {
		return nil, err
	}
	to, err := newTable(ctx, t.root, t.opts, b)
	if err != nil {
		return nil, err
	}
	changes, err := dataset.Diff(ctx, from.ds, to.ds, opts)
	if err != nil {
		return nil, fmt.Errorf("table: diff %s %s: %w", a, b, err)
	}
	return changes, nil
}

// Log returns every version of every line, newest first, with its parents
// (branch.Log).
func (t *Table) Log(ctx context.Context) ([]branch.Commit, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	return branch.Log(ctx, t.root.store)
}

// Cleanup removes old versions and unreferenced files of the table and of
// each of its branches without breaking a tag, a branch or a later merge
// (branch.Cleanup; invariant 4).
func (t *Table) Cleanup(ctx context.Context, opts *dataset.CleanupOptions) (dataset.CleanupStats, error) {
	if _, err := t.current(); err != nil {
		return dataset.CleanupStats{}, err
	}
	return branch.Cleanup(ctx, t.root.store, opts)
}
