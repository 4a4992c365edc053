package dataset

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// deletionVector is the set of deleted row offsets of one fragment. A nil
// *deletionVector deletes nothing.
type deletionVector struct {
	bm *roaring.Bitmap
}

// count returns the number of deleted rows.
func (dv *deletionVector) count() uint64 {
	if dv == nil {
		return 0
	}
	return dv.bm.GetCardinality()
}

// bitmap returns a copy of the deleted offsets, for the caller to change.
func (dv *deletionVector) bitmap() *roaring.Bitmap {
	if dv == nil {
		return roaring.New()
	}
	return dv.bm.Clone()
}

// contains reports whether the row at offset is deleted.
func (dv *deletionVector) contains(offset uint64) bool {
	return dv != nil && offset <= 0xFFFFFFFF && dv.bm.Contains(uint32(offset))
}

// deletedBefore returns the number of deleted offsets below p.
func (dv *deletionVector) deletedBefore(p uint64) uint64 {
	switch {
	case dv == nil || p == 0:
		return 0
	case p > 0xFFFFFFFF:
		return dv.bm.GetCardinality()
	}
	return dv.bm.Rank(uint32(p - 1))
}

// skipLive returns the smallest p ≥ from such that [from, p) holds exactly
// k live rows: where to start reading to skip k live rows, or where to stop
// reading to get k of them.
func (dv *deletionVector) skipLive(from, k uint64) uint64 {
	base := dv.deletedBefore(from)
	p := from + k
	for {
		next := from + k + dv.deletedBefore(p) - base
		if next == p {
			return p
		}
		p = next
	}
}

// nextLive returns the first offset ≥ p that is not deleted.
func (dv *deletionVector) nextLive(p uint64) uint64 {
	if dv == nil || p > 0xFFFFFFFF {
		return p
	}
	it := dv.bm.Iterator()
	it.AdvanceIfNeeded(uint32(p))
	for it.HasNext() && uint64(it.PeekNext()) == p {
		it.Next()
		p++
	}
	return p
}

// liveRuns calls fn with each maximal run [a, b) of live offsets inside
// [start, end), in order.
func (dv *deletionVector) liveRuns(start, end uint64, fn func(a, b uint64)) {
	if start >= end {
		return
	}
	if dv == nil || dv.deletedBefore(end) == dv.deletedBefore(start) {
		fn(start, end)
		return
	}
	it := dv.bm.Iterator()
	it.AdvanceIfNeeded(uint32(start))
	a := start
	for it.HasNext() {
		d := uint64(it.PeekNext())
		if d >= end {
			break
		}
		it.Next()
		if d > a {
			fn(a, d)
		}
		a = d + 1
	}
	if a < end {
		fn(a, end)
	}
}

// readDeletionFile reads and decodes the deletion file of fragment frag
// stored at key in store.
func readDeletionFile(ctx context.Context, store blob.Store, key string, frag *manifest.Fragment) (*deletionVector, error) {
	where := manifest.Location(store, key)
	info, err := store.Stat(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("dataset: deletion file %s: %w", where, err)
	}
	if info.Size > manifest.MaxDeletionFileSize {
		return nil, fmt.Errorf("dataset: deletion file %s: %d bytes exceed the %d a deletion file can need: %w",
			where, info.Size, manifest.MaxDeletionFileSize, lancer.ErrCorrupt)
	}
	data, err := store.ReadAll(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("dataset: deletion file %s: %w", where, err)
	}
	dv, err := decodeDeletionFile(frag.DeletionFile.Kind, data, frag.PhysicalRows)
	if err != nil {
		return nil, fmt.Errorf("dataset: deletion file %s: %w", where, err)
	}
	if n := frag.DeletionFile.NumDeletedRows; n != 0 && n != dv.count() {
		return nil, fmt.Errorf("dataset: deletion file %s holds %d rows but the manifest says %d: %w",
			where, dv.count(), n, lancer.ErrCorrupt)
	}
	return dv, nil
}

// decodeDeletionFile decodes a deletion file (manifest.DecodeDeletionFile).
func decodeDeletionFile(kind manifest.DeletionFileKind, data []byte, physicalRows uint64) (*deletionVector, error) {
	bm, err := manifest.DecodeDeletionFile(kind, data, physicalRows)
	if err != nil {
		return nil, err
	}
	return &deletionVector{bm: bm}, nil
}
