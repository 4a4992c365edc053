package dataset

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Reading data overlay files (flag 64, docs/spec/data-overlays.md). A
// cell (offset, field) of a fragment takes the value of the newest overlay
// covering it, else the base data file's; deletions still win, which
// needs nothing here: an overlaid deleted row is dropped with the row.
//
// lancer resolves a projected top-level field as a whole: an overlay
// covers a top-level field when it lists the field's id, and then it must
// list every member of it with the same coverage (as Lance's writers list
// a file's fields). What lancer cannot read exactly it refuses with
// lancer.ErrUnsupported naming the flag: an overlay of only some members
// of a nested field, an overlay of a blob column, and a sparse overlay
// whose value columns have different lengths.

// overlayField is one overlay's values of one projected top-level field.
type overlayField struct {
	overlay *manifest.Overlay
	offsets *roaring.Bitmap // the physical offsets it covers
	cursor  *format.Cursor  // the overlay file, projected to the field
}

// fragmentOverlays are the overlays of a fragment prepared for one
// projection: for each output position, the overlays covering its field,
// newest first.
type fragmentOverlays struct {
	byOut map[int][]*overlayField
}

func (o *fragmentOverlays) close() {
	if o == nil {
		return
	}
	for _, fields := range o.byOut {
		for _, f := range fields {
			if f.cursor != nil {
				f.cursor.Close()
				f.cursor = nil
			}
		}
	}
}

// unsupportedOverlay is the error of an overlay lancer cannot read exactly.
func unsupportedOverlay(frag uint64, o *manifest.Overlay, format string, args ...any) error {
	return fmt.Errorf("dataset: fragment %d: data overlay file %s (feature flag 64, data_overlays): %s: %w",
		frag, o.File.Path, fmt.Sprintf(format, args...), lancer.ErrUnsupported)
}

// openOverlays prepares the overlays of fragment f for reading proj; nil
// when none covers a projected field.
func (d *Dataset) openOverlays(ctx context.Context, proj *projection, f *manifest.Fragment, physical uint64) (*fragmentOverlays, error) {
	if len(f.Overlays) == 0 {
		return nil, nil
	}
	out := &fragmentOverlays{byOut: map[int][]*overlayField{}}
	for _, k := range f.OverlaysNewestFirst() {
		o := &f.Overlays[k]
		cov, err := o.DecodeCoverage(physical)
		if err != nil {
			out.close()
			return nil, fmt.Errorf("dataset: fragment %d: %w", f.ID, err)
		}
		var reader *format.Reader
		for pos, field := range proj.schema.Fields {
			offsets, err := overlayCoverageOf(f.ID, o, cov, d.manifest.Schema.FieldByID(field.ID))
			if err != nil {
				out.close()
				return nil, err
			}
			if offsets == nil {
				continue
			}
			if field.Blob != schema.NotBlob {
				out.close()
				return nil, unsupportedOverlay(f.ID, o, "it covers blob column %q", field.Name)
			}
			if reader == nil {
				if reader, err = d.openDataFile(ctx, &o.File); err != nil {
					out.close()
					return nil, err
				}
			}
			if n := offsets.GetCardinality(); n != reader.NumRows() {
				if cov.Dense {
					out.close()
					return nil, fmt.Errorf("dataset: fragment %d: overlay %s covers %d offsets but holds %d rows: %w",
						f.ID, o.File.Path, n, reader.NumRows(), lancer.ErrCorrupt)
				}
				out.close()
				return nil, unsupportedOverlay(f.ID, o, "sparse overlay whose column %q holds %d values in a file of %d rows", field.Name, n, reader.NumRows())
			}
			c, err := reader.NewCursor(format.Projection{Fields: []*schema.Field{field}, Column: columnMap(&o.File)})
			if err != nil {
				out.close()
				return nil, fmt.Errorf("dataset: fragment %d: overlay: %w", f.ID, err)
			}
			out.byOut[pos] = append(out.byOut[pos], &overlayField{overlay: o, offsets: offsets, cursor: c})
		}
	}
	if len(out.byOut) == 0 {
		return nil, nil
	}
	return out, nil
}

// overlayCoverageOf returns the offsets overlay o covers of top-level
// field full (the schema's field, unpruned), nil when it covers none of
// it. An overlay holds a field whole: the members it lists (the field
// itself, its members or both, as 2.0 and 2.1+ files list them) share one
// coverage, and it lists every member stored as a column of its own
// (schema.Field.StoredAsLeaf), so that the values it holds are whole
// values of the field.
func overlayCoverageOf(frag uint64, o *manifest.Overlay, cov *manifest.OverlayCoverage, full *schema.Field) (*roaring.Bitmap, error) {
	if full == nil {
		return nil, nil
	}
	var (
		first   *roaring.Bitmap
		missing *schema.Field
		err     error
	)
	var visit func(c *schema.Field, whole bool)
	visit = func(c *schema.Field, whole bool) {
		if err != nil {
			return
		}
		bm := cov.For(c.ID)
		switch {
		case bm == nil:
		case first == nil:
			first = bm
		case !bm.Equals(first):
			err = unsupportedOverlay(frag, o, "members of field %q have different coverage", full.Name)
			return
		}
		// A leaf column must be listed, unless it lives inside a field
		// stored whole (a packed struct), whose id stands for it.
		if bm == nil && c.StoredAsLeaf() && !whole && missing == nil {
			missing = c
		}
		for _, ch := range c.Children {
			visit(ch, whole || (c.StoredWhole() && bm != nil))
		}
	}
	visit(full, false)
	switch {
	case err != nil:
		return nil, err
	case first == nil:
		return nil, nil
	case missing != nil:
		return nil, unsupportedOverlay(frag, o, "it covers part of field %q but not its member %q", full.Name, missing.Name)
	}
	return first, nil
}

// apply replaces the cells of cols (rows at the physical offsets
// offsets(i), i < n) that overlays cover with the overlays' values. cols
// may hold nil for fields no data file holds: they read as nulls unless
// covered. On error cols is released.
func (o *fragmentOverlays) apply(ctx context.Context, mem memory.Allocator, proj *projection, frag uint64, cols []arrow.Array, n int, offsets func(int) uint64) ([]arrow.Array, error) {
	for pos, fields := range o.byOut {
		col, err := overlayColumn(ctx, mem, fields, cols[pos], proj.arrow.Field(pos).Type, n, offsets)
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("dataset: fragment %d: overlay of column %q: %w", frag, proj.arrow.Field(pos).Name, err)
		}
		if col != nil {
			if cols[pos] != nil {
				cols[pos].Release()
			}
			cols[pos] = col
		}
	}
	return cols, nil
}

// overlayColumn returns base with the covered rows replaced, or nil when
// no row of the batch is covered. fields are newest first: the first that
// covers an offset supplies its value, at the offset's rank.
func overlayColumn(ctx context.Context, mem memory.Allocator, fields []*overlayField, base arrow.Array, dt arrow.DataType, n int, offsets func(int) uint64) (arrow.Array, error) {
	// source[i] = -1 (base) or the index of the overlay supplying row i;
	// ranks[k] the ranks row by row that overlay k supplies.
	source := make([]int, n)
	ranks := make([][]uint64, len(fields))
	covered := false
	for i := range n {
		source[i] = -1
		off := offsets(i)
		if off > 1<<32-1 {
			continue
		}
		for k, f := range fields {
			if f.offsets.Contains(uint32(off)) {
				source[i] = k
				ranks[k] = append(ranks[k], f.offsets.Rank(uint32(off))-1)
				covered = true
				break
			}
		}
	}
	if !covered {
		return nil, nil
	}
	pieces := make([]arrow.Array, 0, len(fields)+1)
	defer func() { releaseArrays(pieces) }()
	if base != nil {
		base.Retain()
		pieces = append(pieces, base)
	} else {
		pieces = append(pieces, array.MakeArrayOfNull(mem, dt, n))
	}
	start := make([]int64, len(fields))
	next := int64(n)
	for k, f := range fields {
		start[k] = next
		if len(ranks[k]) == 0 {
			continue
		}
		arrs, err := f.cursor.Take(ctx, ranks[k])
		if err != nil {
			return nil, err
		}
		if len(arrs) != 1 {
			releaseArrays(arrs)
			return nil, fmt.Errorf("overlay %s returned %d columns for one field: %w", f.overlay.File.Path, len(arrs), lancer.ErrCorrupt)
		}
		a := arrs[0]
		pieces = append(pieces, a)
		if a.Len() != len(ranks[k]) || !arrow.TypeEqual(a.DataType(), dt) {
			return nil, fmt.Errorf("overlay %s returned %d values of %s, want %d of %s: %w",
				f.overlay.File.Path, a.Len(), a.DataType(), len(ranks[k]), dt, lancer.ErrCorrupt)
		}
		next += int64(a.Len())
	}
	if !arrow.TypeEqual(pieces[0].DataType(), dt) || pieces[0].Len() != n {
		return nil, fmt.Errorf("base column of %d rows of %s, want %d of %s: %w", pieces[0].Len(), pieces[0].DataType(), n, dt, lancer.ErrCorrupt)
	}
	all, err := array.Concatenate(pieces, mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	ib.Reserve(n)
	used := make([]int64, len(fields))
	for i, k := range source {
		if k < 0 {
			ib.UnsafeAppend(int64(i))
			continue
		}
		ib.UnsafeAppend(start[k] + used[k])
		used[k]++
	}
	idx := ib.NewArray()
	defer idx.Release()
	return compute.TakeArray(compute.WithAllocator(ctx, mem), all, idx)
}
