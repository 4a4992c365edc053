package dataset

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// TakeBlobs returns the bytes of blob column column for the rows with the
// given _rowid values, in the order given; a null blob is nil. A scan of a
// blob column returns descriptors (position, size, and for blob v2 kind and
// blob id); this reads what they point at: bytes inside the data file
// (legacy blobs, inline blob v2 values) or in its sidecar .blob files
// (packed and dedicated blob v2 values). Each blob is read with one ranged
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
		if out[i], err = file.reader.ReadBlob(ctx, desc); err != nil {
			return fmt.Errorf("dataset: fragment %d row %d: %w", frag.ID, rows[j], err)
		}
	}
	return nil
}
