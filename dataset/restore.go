package dataset

import (
	"context"

	"github.com/lancerdb/lancer/dataset/manifest"
)

// Restore commits this version's state (schema, fragments, indices, config)
// as a new latest version, as Lance's restore does, and returns it. The
// versions in between stay in the history. Fragment ids and stable row ids
// handed out since this version are not reused: the new version keeps the
// latest's high-water marks. A Restore wins over concurrent commits, like an
// overwrite. It also rolls back past a latest version whose manifest is
// damaged (the case Lance tells users to roll back in): the high-water
// marks are then this version's, as the damaged manifest's cannot be read.
// opts configure the commit (nil: the defaults).
func (d *Dataset) Restore(ctx context.Context, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	// A version Lance cannot commit on cannot be restored either: its
	// restore publishes the same fragments.
	if err := checkBuildable(d.manifest, manifest.Location(d.store, d.manifestKey)); err != nil {
		return nil, err
	}
	latest, err := LatestVersion(ctx, d.store)
	if err != nil {
		return nil, err
	}
	op := &operation{kind: opRestore, restore: d.manifest}
	return commit(ctx, d.store, d.opts, d.bases, op, commitOptions{readVersion: latest, opts: opts, pastCorrupt: d})
}
