package dataset

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// TakeBlobs returns the bytes of blob column column for the rows with the
// given _rowid values, in the order given; a null blob is nil. A scan of a
// blob column returns descriptors (position, size, and for blob v2 kind and
// blob id); this reads what they point at: bytes inside the data file
// (legacy blobs, inline blob v2 values) or in its sidecar .blob files
// (packed and dedicated blob v2 values), or in an object of a base path
// (managed blob v2 values, docs/spec/managed-blobs.md). Each blob is read with one ranged
// read. Asking for a column that is not a blob column is an error wrapping
// lancer.ErrInvalidArgument.
func (d *Dataset) TakeBlobs(ctx context.Context, column string, ids []uint64) ([][]byte, error) {
	f := d.manifest.Schema.Field(column)
	switch {
	case f == nil:
		return nil, fmt.Errorf("dataset: take blobs: no column %q: %w", column, lancer.ErrNotFound)
	case f.Blob == schema.NotBlob:
		return nil, fmt.Errorf("dataset: take blobs: column %q is not a blob column: %w", column, lancer.ErrInvalidArgument)
	}
	locs, err := d.locateRowIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	proj, err := d.project([]string{column}, false, false)
	if err != nil {
		return nil, err
	}
	byFragment := map[int][]int{} // fragment → indices into ids
	for i, l := range locs {
		byFragment[l.frag] = append(byFragment[l.frag], i)
	}
	out := make([][]byte, len(ids))
	for k, idxs := range byFragment {
		if err := d.takeFragmentBlobs(ctx, proj, k, idxs, locs, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// takeFragmentBlobs fills out[i] for the requests idxs, all in fragment k.
func (d *Dataset) takeFragmentBlobs(ctx context.Context, proj *projection, k int, idxs []int, locs []rowLoc, out [][]byte) error {
	frag := d.manifest.Fragments[k]
	fr, err := d.openFragment(ctx, proj, frag)
	if err != nil {
		return err
	}
	defer fr.close()
	if len(fr.files) == 0 {
		return nil // the column was added after this fragment: all null
	}
	file := fr.files[0]
	rows := make([]uint64, len(idxs))
	for j, i := range idxs {
		rows[j] = locs[i].offset
	}
	arrs, err := file.cursor.Take(ctx, rows)
	if err != nil {
		return fmt.Errorf("dataset: fragment %d: %w", frag.ID, err)
	}
	defer releaseArrays(arrs)
	for j, i := range idxs {
		desc, ok, err := format.BlobDescriptorAt(arrs[0], j)
		if err != nil {
			return fmt.Errorf("dataset: fragment %d: %w", frag.ID, err)
		}
		if !ok {
			continue
		}
		if desc.Kind == format.BlobManaged {
			out[i], err = d.readManagedBlob(ctx, desc)
		} else {
			out[i], err = file.reader.ReadBlob(ctx, desc)
		}
		if err != nil {
			return fmt.Errorf("dataset: fragment %d (%s) row %d: %w", frag.ID, file.reader.Key(), rows[j], err)
		}
	}
	return nil
}

// managedBlobStore returns the store a managed (kind 4) descriptor's
// BlobID names: a base path of this version's manifest, the dataset root
// included only through an explicit binding (docs/spec/managed-blobs.md
// §2). An unknown id, or a managed descriptor in a dataset that does not
// declare managed blobs, is ErrCorrupt: reading it as some other kind
// would return the wrong bytes.
func (d *Dataset) managedBlobStore(ctx context.Context, desc format.BlobDescriptor) (blob.Store, error) {
	if d.manifest.ReaderFeatureFlags&manifest.FlagManagedBlobs == 0 {
		return nil, fmt.Errorf("managed blob %q in a dataset without the managed_blobs reader flag: %w", desc.URI, lancer.ErrCorrupt)
	}
	if _, ok := d.basePath(desc.BlobID); !ok {
		return nil, fmt.Errorf("managed blob %q names base path %d, which the manifest does not bind: %w",
			desc.URI, desc.BlobID, lancer.ErrCorrupt)
	}
	s, _, err := d.baseStore(ctx, desc.BlobID)
	if err != nil {
		return nil, fmt.Errorf("managed blob %q: %w", desc.URI, err)
	}
	return s, nil
}

// readManagedBlob reads the value of a managed descriptor.
func (d *Dataset) readManagedBlob(ctx context.Context, desc format.BlobDescriptor) ([]byte, error) {
	s, err := d.managedBlobStore(ctx, desc)
	if err != nil {
		return nil, err
	}
	return format.ReadManagedBlob(ctx, s, desc)
}
