package table

import (
	"context"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// OptimizeOptions configures Optimize (branch.OptimizeOptions; nil: the
// defaults, which keep every tagged version, what branches and merges
// need, and the versions younger than a week).
type OptimizeOptions = branch.OptimizeOptions

// OptimizeReport says what Optimize did (branch.OptimizeReport).
type OptimizeReport = branch.OptimizeReport

// IndexUpdate is an index Optimize extended (branch.IndexUpdate).
type IndexUpdate = branch.IndexUpdate

// Optimize compacts the handle's line, brings its indices up to date and
// cleans up old versions of the table and its branches (branch.Optimize;
// invariant 4 holds: the cleanup is branch.Cleanup). The line is always
// the handle's (opts.Branch is ignored) and, unless opts.Open is set, it
// is opened with the handle's options. The handle advances to the version
// committed, as after any write (invariant 1); a dry run leaves it.
func (t *Table) Optimize(ctx context.Context, opts *OptimizeOptions) (OptimizeReport, error) {
	ds, err := t.current()
	if err != nil {
		return OptimizeReport{}, err
	}
	var o OptimizeOptions
	if opts != nil {
		o = *opts
	}
	o.Branch = t.Ref().Branch
	if o.Open == nil {
		oo := t.opts
		o.Open = &oo
	}
	// The compaction's and the index update's commits take turns with
	// the handle's appends (see inTurn).
	var co dataset.CompactOptions
	if o.Compact != nil {
		co = *o.Compact
	}
	t.inTurn(ds, &co.CommitOptions)
	o.Compact = &co
	var io dataset.OptimizeIndexesOptions
	if o.Index != nil {
		io = *o.Index
	}
	t.inTurn(ds, &io.CommitOptions)
	o.Index = &io
	rep, err := branch.Optimize(ctx, t.root.store, &o)
	if rep.Version > ds.Version() {
		// Reopen what was committed with the handle's options; a failure
		// to do so leaves the handle where it was, its write done.
		if out, cerr := ds.Checkout(ctx, rep.Version); cerr == nil {
			t.advance(out)
		}
	}
	return rep, err
}
