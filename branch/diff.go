package branch

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// Diff streams the rows that differ between two states of the dataset
// rooted at root (any versions, branches or tags of its family): deleted
// rows as they were in a, inserted and updated rows as they are in b (see
// dataset.Diff). Like Open, it leaves open the stores the changes read
// outside the family (the source of a shallow clone); the table handle's
// Diff opens them as its own and closes them with the handle.
func Diff(ctx context.Context, root blob.Store, a, b Ref, opts *dataset.DiffOptions) (*dataset.Changes, error) {
	from, err := Open(ctx, root, a, nil)
	if err != nil {
		return nil, err
	}
	to, err := Open(ctx, root, b, nil)
	if err != nil {
		return nil, err
	}
	r, err := dataset.Diff(ctx, from, to, opts)
	if err != nil {
		return nil, fmt.Errorf("branch: diff %s %s: %w", a, b, err)
	}
	return r, nil
}
