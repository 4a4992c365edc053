package table

import (
	"context"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// Check verifies the table's invariants (branch.Check): the versions of
// main and of every branch (dataset's D1-D12: referenced files there with
// their sizes, row counts, deletions, row ids, indices) and the refs
// (branch's B1-B2). A nil opts checks the latest version of each line from
// metadata; base paths are reached with the handle's storage options
// unless opts names its own. The error is for failures to reach the data;
// what is wrong with it is in the report.
func (t *Table) Check(ctx context.Context, opts *dataset.CheckOptions) (*branch.CheckReport, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	var o dataset.CheckOptions
	if opts != nil {
		o = *opts
	}
	if o.StorageOptions == nil {
		o.StorageOptions = t.opts.StorageOptions
	}
	return branch.Check(ctx, t.root.store, &o)
}
