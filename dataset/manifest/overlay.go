package manifest

import (
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
)

// Data overlay files (reader and writer feature flag 64; spec:
// docs/spec/data-overlays.md). An overlay of a fragment supplies new values
// for some (physical row offset, field) cells: its data file holds one
// value column per entry of File.Fields, the value of a covered offset at
// the offset's rank in that field's coverage bitmap, and no key column.

// OverlayCoverage is an overlay's decoded coverage.
type OverlayCoverage struct {
	// Fields are the overlay's field ids (its data file's fields, in order).
	Fields []int32
	// Offsets holds, for each entry of Fields, the physical row offsets it
	// covers. A dense overlay shares one bitmap among all of them.
	Offsets []*roaring.Bitmap
	// Dense says the overlay records one shared bitmap.
	Dense bool
}

// For returns the coverage of field id (nil when the overlay does not cover
// it). A field listed twice is rejected by DecodeCoverage.
func (c *OverlayCoverage) For(id int32) *roaring.Bitmap {
	if i := slices.Index(c.Fields, id); i >= 0 {
		return c.Offsets[i]
	}
	return nil
}

// Dense reports whether the overlay records one shared offset bitmap.
func (o *Overlay) Dense() bool { return o.FieldOffsetBitmaps == nil && o.SharedOffsetBitmap != nil }

// DecodeCoverage decodes the overlay's coverage bitmaps and checks them
// against the fragment they belong to (physicalRows; 0 = unknown, then up
// to 2^32): exactly one coverage form, one bitmap per field of a sparse
// overlay, every offset below physicalRows, field ids listed once and not
// negative. Bad bytes yield an error wrapping lancer.ErrCorrupt (M2).
func (o *Overlay) DecodeCoverage(physicalRows uint64) (*OverlayCoverage, error) {
	limit := physicalRows
	if limit == 0 {
		limit = MaxRowsPerFragment
	}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("overlay %s: %s: %w", o.File.Path, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
	}
	fields := o.File.Fields
	if len(fields) == 0 {
		return nil, corrupt("no fields")
	}
	for i, id := range fields {
		if id < 0 {
			return nil, corrupt("field id %d", id)
		}
		if slices.Contains(fields[:i], id) {
			return nil, corrupt("field %d listed twice", id)
		}
	}
	check := func(bm *roaring.Bitmap, what string) error {
		if !bm.IsEmpty() && uint64(bm.Maximum()) >= limit {
			return corrupt("%s covers row offset %d of a fragment of %d rows", what, bm.Maximum(), limit)
		}
		return nil
	}
	cov := &OverlayCoverage{Fields: fields, Offsets: make([]*roaring.Bitmap, len(fields))}
	switch {
	case o.SharedOffsetBitmap != nil && o.FieldOffsetBitmaps != nil:
		return nil, corrupt("both a shared and per-field coverage")
	case o.SharedOffsetBitmap != nil:
		bm, err := DecodeRoaring(o.SharedOffsetBitmap)
		if err != nil {
			return nil, fmt.Errorf("overlay %s: shared offset bitmap: %w", o.File.Path, err)
		}
		if err := check(bm, "shared offset bitmap"); err != nil {
			return nil, err
		}
		for i := range cov.Offsets {
			cov.Offsets[i] = bm
		}
		cov.Dense = true
	case o.FieldOffsetBitmaps != nil:
		if len(o.FieldOffsetBitmaps) != len(fields) {
			return nil, corrupt("%d per-field offset bitmaps for %d fields", len(o.FieldOffsetBitmaps), len(fields))
		}
		for i, data := range o.FieldOffsetBitmaps {
			bm, err := DecodeRoaring(data)
			if err != nil {
				return nil, fmt.Errorf("overlay %s: offset bitmap of field %d: %w", o.File.Path, fields[i], err)
			}
			if err := check(bm, fmt.Sprintf("offset bitmap of field %d", fields[i])); err != nil {
				return nil, err
			}
			cov.Offsets[i] = bm
		}
	default:
		return nil, corrupt("no coverage")
	}
	return cov, nil
}

// NewDenseOverlay returns an overlay of file covering offsets for every
// field of file, committed at version.
func NewDenseOverlay(file DataFile, offsets *roaring.Bitmap, version uint64) (Overlay, error) {
	data, err := offsets.ToBytes()
	if err != nil {
		return Overlay{}, fmt.Errorf("overlay %s: encode coverage: %w", file.Path, err)
	}
	return Overlay{File: file, SharedOffsetBitmap: data, CommittedVersion: version}, nil
}

// NewSparseOverlay returns an overlay of file covering offsets[i] for
// file.Fields[i], committed at version.
func NewSparseOverlay(file DataFile, offsets []*roaring.Bitmap, version uint64) (Overlay, error) {
	if len(offsets) != len(file.Fields) {
		return Overlay{}, fmt.Errorf("overlay %s: %d bitmaps for %d fields: %w", file.Path, len(offsets), len(file.Fields), lancer.ErrInvalidArgument)
	}
	o := Overlay{File: file, FieldOffsetBitmaps: make([][]byte, len(offsets)), CommittedVersion: version}
	for i, bm := range offsets {
		data, err := bm.ToBytes()
		if err != nil {
			return Overlay{}, fmt.Errorf("overlay %s: encode coverage: %w", file.Path, err)
		}
		o.FieldOffsetBitmaps[i] = data
	}
	return o, nil
}

// OverlaysNewestFirst returns the indices of f.Overlays in read precedence,
// newest first: higher committed_version first, and among equal versions
// the later entry of DataFragment.overlays first.
func (f *Fragment) OverlaysNewestFirst() []int {
	order := make([]int, len(f.Overlays))
	for i := range order {
		order[i] = len(order) - 1 - i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		va, vb := f.Overlays[a].CommittedVersion, f.Overlays[b].CommittedVersion
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	return order
}

// HasOverlays reports whether some fragment of m carries overlay files.
func (m *Manifest) HasOverlays() bool {
	return slices.ContainsFunc(m.Fragments, func(f *Fragment) bool { return len(f.Overlays) > 0 })
}

// validateOverlays checks the overlays of fragment f (Validate, M3): the
// flag is set, each overlay's data file is a plain 2.x file name with a
// column index per field, and its coverage decodes (DecodeCoverage).
func (f *Fragment) validateOverlays(flags FeatureFlags) error {
	if len(f.Overlays) == 0 {
		return nil
	}
	if flags&FlagDataOverlays == 0 {
		return fmt.Errorf("%d overlay files without the data overlay feature flag (64)", len(f.Overlays))
	}
	for i := range f.Overlays {
		o := &f.Overlays[i]
		df := &o.File
		if !isPlainName(df.Path) {
			return fmt.Errorf("overlay #%d: data file path %q is not a plain file name", i, df.Path)
		}
		if df.IsLegacy() {
			return fmt.Errorf("overlay %s: a legacy (%d.%d) data file; overlays are 2.x files", df.Path, df.MajorVersion, df.MinorVersion)
		}
		if len(df.ColumnIndices) != len(df.Fields) {
			return fmt.Errorf("overlay %s lists %d fields but %d column indices", df.Path, len(df.Fields), len(df.ColumnIndices))
		}
		if o.CommittedVersion == 0 {
			return fmt.Errorf("overlay %s: committed version 0", df.Path)
		}
		if _, err := o.DecodeCoverage(f.PhysicalRows); err != nil {
			return err
		}
	}
	return nil
}

// withoutStaleOverlays removes from frags (an index segment's coverage)
// the fragments holding an overlay newer than the segment that covers one
// of the fields the segment indexes or carries (StaleOverlay). The spec's
// exclusion set is the overlay's covered cells of those fields; lancer
// excludes the whole fragment, a superset: its rows fall to the flat path
// of every query, which evaluates them on their overlaid values, so an
// index result is never stale and no current match is lost.
func withoutStaleOverlays(frags []uint32, ix *IndexMetadata, m *Manifest) []uint32 {
	if !m.HasOverlays() {
		return frags
	}
	stale := map[uint32]bool{}
	for _, f := range m.Fragments {
		if m.StaleOverlay(ix, f) {
			stale[uint32(f.ID)] = true
		}
	}
	if len(stale) == 0 {
		return frags
	}
	return slices.DeleteFunc(frags, func(id uint32) bool { return stale[id] })
}

// StaleOverlay reports whether fragment f holds an overlay that index
// segment ix has not seen (committed after ix.DatasetVersion) covering a
// field ix is keyed on or carries, or a member of one: ix's entries for
// that fragment may hold values the overlay replaced.
func (m *Manifest) StaleOverlay(ix *IndexMetadata, f *Fragment) bool {
	for i := range f.Overlays {
		o := &f.Overlays[i]
		if o.CommittedVersion <= ix.DatasetVersion {
			continue
		}
		if slices.ContainsFunc(o.File.Fields, func(id int32) bool {
			return slices.Contains(ix.Fields, id) || slices.Contains(ix.CoveringFields, id) || indexesMember(m, ix, id)
		}) {
			return true
		}
	}
	return false
}

// indexesMember reports whether field id lies inside a field the index
// names (an overlay of a struct member changes the struct's value).
func indexesMember(m *Manifest, ix *IndexMetadata, id int32) bool {
	if m.Schema == nil {
		return true // cannot tell: exclude
	}
	for _, fid := range slices.Concat(ix.Fields, ix.CoveringFields) {
		f := m.Schema.FieldByID(fid)
		if f == nil {
			continue
		}
		found := false
		f.Walk(func(c *schema.Field) { found = found || c.ID == id })
		if found {
			return true
		}
	}
	return false
}
