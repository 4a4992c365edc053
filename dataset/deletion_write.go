package dataset

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// writeDeletionFile writes a new deletion file of fragment fragID holding
// every offset of dv, for a transaction that read readVersion, and returns
// its manifest entry and key. The key is returned whenever the file may
// exist, also on error.
func writeDeletionFile(ctx context.Context, store blob.Store, fragID, readVersion uint64, dv *roaring.Bitmap) (*manifest.DeletionFile, string, error) {
	data, kind, err := manifest.EncodeDeletionFile(dv)
	if err != nil {
		return nil, "", fmt.Errorf("dataset: encode deletion file of fragment %d: %w", fragID, err)
	}
	d := &manifest.DeletionFile{Kind: kind, ReadVersion: readVersion, ID: randomUint64(), NumDeletedRows: dv.GetCardinality()}
	key := d.Key(fragID)
	if err := store.Write(ctx, key, data); err != nil {
		return nil, key, fmt.Errorf("dataset: write deletion file %s: %w", manifest.Location(store, key), err)
	}
	return d, key, nil
}

// DeleteRowIDs deletes the rows with the given row ids (the _rowid values a
// scan returns: stable row ids when the dataset has them, else row
// addresses) and returns the new version. Ids that name no live row of this
// version are ignored, as a SQL DELETE ignores rows that are not there. Each
// fragment that loses rows gets a new deletion file holding all its deleted
// rows; a fragment that loses all its rows leaves the manifest. The commit
// is rebased over concurrent commits as Lance does (see ConflictError).
// opts configure the commit (nil: the defaults).
func (d *Dataset) DeleteRowIDs(ctx context.Context, ids []uint64, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	rows, err := d.rowIDsToOffsets(ctx, ids)
	if err != nil {
		return nil, err
	}
	return d.deleteRows(ctx, "", rows, opts)
}

// addRow adds row offset of fragment frag to rows, the row offsets of each
// fragment.
func addRow(rows map[uint64]*roaring.Bitmap, frag, offset uint64) {
	bm := rows[frag]
	if bm == nil {
		bm = roaring.New()
		rows[frag] = bm
	}
	bm.Add(uint32(offset))
}

// rowIDsToOffsets maps row ids to the live row offsets of each fragment.
func (d *Dataset) rowIDsToOffsets(ctx context.Context, ids []uint64) (map[uint64]*roaring.Bitmap, error) {
	rows := map[uint64]*roaring.Bitmap{}
	if !d.manifest.StableRowIDs() {
		byID := map[uint64]*manifest.Fragment{}
		for _, f := range d.manifest.Fragments {
			byID[f.ID] = f
		}
		for _, id := range ids {
			f := byID[id>>32]
			if f == nil {
				continue
			}
			physical, err := d.physicalRows(ctx, f)
			if err != nil {
				return nil, err
			}
			if off := id & 0xFFFFFFFF; off < physical {
				addRow(rows, f.ID, off)
			}
		}
		return rows, nil
	}
	want := map[uint64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, f := range d.manifest.Fragments {
		if len(want) == 0 {
			break
		}
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return nil, err
		}
		seq, err := d.rowIDs(ctx, f, physical)
		if err != nil {
			return nil, err
		}
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return nil, err
		}
		for id := range want {
			for _, off := range seq.Offsets(id) {
				if !dv.contains(off) {
					addRow(rows, f.ID, off)
					delete(want, id)
				}
			}
		}
	}
	return rows, nil
}

// deleteRows commits a Delete of the given row offsets per fragment
// (offsets already deleted are ignored). predicate is recorded in the
// transaction.
func (d *Dataset) deleteRows(ctx context.Context, predicate string, rows map[uint64]*roaring.Bitmap, opts *CommitOptions) (*Dataset, error) {
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	del, err := d.planDelete(ctx, predicate, rows)
	if err != nil {
		return nil, err
	}
	return d.commit(ctx, &operation{kind: opDelete, del: del}, opts)
}

// planDelete writes the deletion files that delete the given row offsets
// per fragment (offsets already deleted are ignored) and returns the
// deleteOp recording them; Delete commits it alone, Update with the
// rewritten rows. On error the files written are removed.
func (d *Dataset) planDelete(ctx context.Context, predicate string, rows map[uint64]*roaring.Bitmap) (*deleteOp, error) {
	del := &deleteOp{
		predicate:   predicate,
		readVersion: d.manifest.Version,
		base:        map[uint64]*manifest.Fragment{},
		affected:    map[uint64]*roaring.Bitmap{},
		baseDV:      map[uint64]*roaring.Bitmap{},
	}
	ok := false
	defer func() {
		if !ok {
			for _, key := range del.written {
				_ = d.store.Delete(context.WithoutCancel(ctx), key)
			}
		}
	}()
	raw := d.manifest.Fragments
	for i, f := range d.manifest.Fragments {
		want := rows[f.ID]
		if want == nil || want.IsEmpty() {
			continue
		}
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return nil, err
		}
		if uint64(want.Maximum()) >= physical {
			return nil, fmt.Errorf("dataset: delete: row %d of fragment %d, which has %d rows: %w",
				want.Maximum(), f.ID, physical, lancer.ErrInvalidArgument)
		}
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return nil, err
		}
		current := dv.bitmap()
		affected := roaring.AndNot(want, current)
		if affected.IsEmpty() {
			continue
		}
		del.base[f.ID] = raw[i]
		del.baseDV[f.ID] = current.Clone()
		del.affected[f.ID] = affected
		current.Or(affected)
		u, err := d.withDeletions(ctx, raw[i], physical, current, &del.written)
		switch {
		case err != nil:
			return nil, err
		case u == nil:
			del.deleted = append(del.deleted, f.ID)
		default:
			del.updated = append(del.updated, u)
		}
	}
	slices.Sort(del.deleted)
	ok = true
	return del, nil
}

// withDeletions returns fragment raw of d's version, of physical rows, with
// the rows of dv deleted, for a transaction read at d's version: nil when
// dv holds every row (the fragment leaves the manifest), else a copy with a
// new deletion file, whose key is appended to written whenever the file may
// exist, also on error.
func (d *Dataset) withDeletions(ctx context.Context, raw *manifest.Fragment, physical uint64, dv *roaring.Bitmap, written *[]string) (*manifest.Fragment, error) {
	if dv.GetCardinality() >= physical {
		return nil, nil
	}
	df, key, err := writeDeletionFile(ctx, d.store, raw.ID, d.manifest.Version, dv)
	if key != "" {
		*written = append(*written, key)
	}
	if err != nil {
		return nil, err
	}
	u := raw.Clone()
	u.DeletionFile = df
	u.PhysicalRows = physical
	return u, nil
}
