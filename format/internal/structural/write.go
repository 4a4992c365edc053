package structural

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// Writing fields of 2.1 and 2.2 files (docs/spec/lance-format.md §8–§11): the inverse of
// cursor.go.
//
// Every top-level field is shredded into its leaves (the columns, in schema
// pre-order; fixed-size lists, blobs and packed structs are leaves). For each
// leaf the shredder (write_shred.go) produces one entry per item
// with its repetition level and a "null key" naming the outermost layer at
// which the item is null or empty, plus the slots of the leaf array that hold
// the visible values. A leaf buffers these pieces until about
// WriterOptions.PageSize bytes are pending, then encodes a page of whole rows
// (write_page.go): the layers are classified from the page's own
// data (a layer that holds no null in the page is all-valid), the null keys
// become definition levels, and the page takes the layout Lance's default
// writer would choose: all-null or constant, dictionary, mini-block for
// narrow values, full-zip for wide ones (encode_*.go).

// valueKind is how a leaf's values are stored.
type valueKind uint8

const (
	kindFixed       valueKind = iota // fixed-width values (bools as bits)
	kindVariable                     // utf8, binary and their large forms
	kindFSL                          // fixed-size lists of fixed-width items
	kindDictionary                   // Arrow dictionaries
	kindPacked                       // packed structs
	kindNull                         // the null type
	kindEmptyStruct                  // a top-level struct without members
	kindBlobLegacy                   // legacy blob (2.1): bytes out of line, descriptors in the page
	kindBlobV2                       // blob v2 (2.2): descriptors, bytes inline or in sidecars
)

// leafSpec is one leaf column of a field: where it sits and how its values
// are stored.
type leafSpec struct {
	field *schema.Field
	col   int
	// lists[j] tells whether layer j (top-down: the top-level field first,
	// the leaf last) is a list layer; the leaf itself is an item layer.
	lists []bool
	// innerList is the index of the innermost list layer, -1 without lists.
	innerList int
	// sticky[j] makes item layer j nullable in every page, whether or not
	// the page has a null there: nullable structs with a list below them.
	// Lance 12 misreads a struct whose layer is all-valid in some pages and
	// nullable in others when a list lies below it (it builds the struct's
	// validity from the wrong levels), so such layers keep one meaning.
	sticky []bool
	maxRep uint16
	kind   valueKind
	dt     arrow.DataType
	large  bool // variable: 64-bit offsets
}

// structuralFieldWriter writes one top-level field of a 2.1+ file.
type structuralFieldWriter struct {
	w      *fileio.Sink
	field  *schema.Field
	leaves []*leafWriter
	// blobs holds the sidecar files of blob v2 leaves.
	blobs *blobSidecars
}

// leafWriter buffers the pieces of one leaf until a page is due.
type leafWriter struct {
	spec    *leafSpec
	pending []*leafPiece
	// pendingBytes estimates the encoded size of pending.
	pendingBytes int
	// nextRow is the first row of the next page.
	nextRow uint64
}

// NewFieldWriter returns the 2.1/2.2 encoder of field f, whose
// first column will be firstCol.
func NewFieldWriter(w *fileio.Sink, f *schema.Field, firstCol int) (fileio.FieldWriter, error) {
	fw := &structuralFieldWriter{w: w, field: f}
	var specs []*leafSpec
	if err := planLeaves(w, f, nil, nil, &specs, true); err != nil {
		return nil, err
	}
	for _, s := range specs {
		s.col = w.AddColumn(s.field.ID)
		fw.leaves = append(fw.leaves, &leafWriter{spec: s})
	}
	if len(fw.leaves) > 0 && fw.leaves[0].spec.col != firstCol {
		return nil, fmt.Errorf("first column %d, want %d: %w", fw.leaves[0].spec.col, firstCol, lancer.ErrInvalidArgument)
	}
	return fw, nil
}

// planLeaves appends the leaves of f (below the list/item layers lists,
// top-down, whose item layers sticky marks as in leafSpec) to specs, in
// column order.
func planLeaves(w *fileio.Sink, f *schema.Field, lists, sticky []bool, specs *[]*leafSpec, top bool) error {
	// NewWriter names the top-level field in errors; members name
	// themselves.
	at := ""
	if !top {
		at = fmt.Sprintf("member %q: ", f.Name)
	}
	if f.Type == nil {
		return fmt.Errorf("%sno type: %w", at, lancer.ErrInvalidArgument)
	}
	if f.StoredAsLeaf() {
		s := &leafSpec{field: f, dt: f.Type, innerList: -1}
		s.lists = append(append([]bool(nil), lists...), false)
		s.sticky = append(append([]bool(nil), sticky...), false)
		for j, l := range s.lists {
			if l {
				s.innerList = j
				s.maxRep++
			}
		}
		kind, err := leafKind(w, f, top)
		if err != nil {
			return fmt.Errorf("%s%w", at, err)
		}
		switch c := strings.ToLower(f.Metadata[fileio.MetaCompression]); c {
		case "", "none", "fsst", "zstd", "lz4":
		default:
			return fmt.Errorf("%sunknown %s %q: %w", at, fileio.MetaCompression, c, lancer.ErrInvalidArgument)
		}
		if kind == kindBlobLegacy && s.maxRep > 0 {
			// The descriptors keep the levels of null items only.
			return fmt.Errorf("%slegacy blob inside a list: %w", at, lancer.ErrUnsupported)
		}
		s.kind = kind
		if kind == kindVariable {
			s.large, _ = arrays.BinaryType(f.Type)
		}
		*specs = append(*specs, s)
		return nil
	}
	var isList bool
	switch f.Type.ID() {
	case arrow.STRUCT:
	case arrow.LIST, arrow.LARGE_LIST:
		isList = true
	case arrow.MAP:
		if !w.Version.Less(fileio.Version2_2) {
			isList = true
			break
		}
		return fmt.Errorf("%smaps need file version 2.2 or later: %w", at, lancer.ErrUnsupported)
	default:
		return fmt.Errorf("%stype %s with %d children: %w", at, f.Type, len(f.Children), lancer.ErrUnsupported)
	}
	if isList && len(f.Children) != 1 {
		return fmt.Errorf("%s%s with %d children, want 1: %w", at, f.Type, len(f.Children), lancer.ErrInvalidArgument)
	}
	lists = append(lists[:len(lists):len(lists)], isList)
	sticky = append(sticky[:len(sticky):len(sticky)], !isList && f.Nullable && hasListBelow(f))
	for _, c := range f.Children {
		if err := planLeaves(w, c, lists, sticky, specs, false); err != nil {
			return err
		}
	}
	return nil
}

// hasListBelow reports whether a list layer lies below f.
func hasListBelow(f *schema.Field) bool {
	for _, c := range f.Children {
		if c.StoredAsLeaf() {
			continue
		}
		switch c.Type.ID() {
		case arrow.LIST, arrow.LARGE_LIST, arrow.MAP:
			return true
		}
		if hasListBelow(c) {
			return true
		}
	}
	return false
}

// leafKind classifies a leaf field's values, refusing what Lance cannot
// store in this file version.
func leafKind(w *fileio.Sink, f *schema.Field, top bool) (valueKind, error) {
	switch f.Blob {
	case schema.BlobLegacy:
		if !w.Version.Less(fileio.Version2_2) {
			return 0, fmt.Errorf("legacy blob columns are not supported for file version %s (use blob v2): %w", w.Version, lancer.ErrUnsupported)
		}
		return kindBlobLegacy, nil
	case schema.BlobV2:
		if w.Version.Less(fileio.Version2_2) {
			return 0, fmt.Errorf("blob v2 columns need file version 2.2 or later: %w", lancer.ErrUnsupported)
		}
		st, ok := f.Type.(*arrow.StructType)
		if !ok || !blobV2Input(st) {
			return 0, fmt.Errorf("blob v2 column of type %s, want struct<data: large_binary, uri: utf8>: %w", f.Type, lancer.ErrUnsupported)
		}
		return kindBlobV2, nil
	}
	dt := f.Type
	if isBinaryLike(dt) {
		return kindVariable, nil
	}
	switch dt.ID() {
	case arrow.NULL:
		return kindNull, nil
	case arrow.FIXED_SIZE_LIST:
		if _, _, err := fslShape(dt); err != nil {
			return 0, err
		}
		return kindFSL, nil
	case arrow.DICTIONARY:
		d := dt.(*arrow.DictionaryType)
		if _, ok := d.IndexType.(arrow.FixedWidthDataType); !ok || !arrow.IsInteger(d.IndexType.ID()) {
			return 0, fmt.Errorf("dictionary index type %s: %w", d.IndexType, lancer.ErrUnsupported)
		}
		if !isBinaryLike(d.ValueType) && fixedBits(d.ValueType) <= 0 {
			return 0, fmt.Errorf("dictionary of %s values: %w", d.ValueType, lancer.ErrUnsupported)
		}
		return kindDictionary, nil
	case arrow.STRUCT:
		st := dt.(*arrow.StructType)
		if st.NumFields() == 0 {
			if !top {
				return 0, fmt.Errorf("an empty struct below the top level: %w", lancer.ErrUnsupported)
			}
			return kindEmptyStruct, nil
		}
		// A packed struct: every member fixed-width, or (2.2) variable-width.
		for _, m := range st.Fields() {
			switch {
			case fixedBits(m.Type) > 0 && fixedBits(m.Type)%8 == 0:
			case isBinaryLike(m.Type) && !w.Version.Less(fileio.Version2_2):
			default:
				return 0, fmt.Errorf("packed struct member %q of type %s: %w", m.Name, m.Type, lancer.ErrUnsupported)
			}
		}
		return kindPacked, nil
	}
	if fixedBits(dt) > 0 {
		return kindFixed, nil
	}
	return 0, fmt.Errorf("type %s: %w", dt, lancer.ErrUnsupported)
}

// fixedBits returns the bits per value of a fixed-width type (1 for bool),
// or 0 when the type is not fixed-width.
func fixedBits(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.BOOL:
		return 1
	case arrow.FIXED_SIZE_LIST, arrow.STRUCT, arrow.DICTIONARY, arrow.NULL, arrow.EXTENSION,
		arrow.INTERVAL_MONTH_DAY_NANO, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTHS, arrow.RUN_END_ENCODED:
		return 0
	}
	if fw, ok := dt.(arrow.FixedWidthDataType); ok && fw.BitWidth() > 0 && fw.BitWidth()%8 == 0 {
		return fw.BitWidth()
	}
	return 0
}

// isBinaryLike reports whether dt is utf8 or binary, large or not.
func isBinaryLike(dt arrow.DataType) bool {
	_, ok := arrays.BinaryType(dt)
	return ok
}

// fslShape returns the dims (outermost first) and item type of a
// (possibly nested) fixed-size list of fixed-width items.
func fslShape(dt arrow.DataType) ([]int, arrow.DataType, error) {
	var dims []int
	for dt.ID() == arrow.FIXED_SIZE_LIST {
		t := dt.(*arrow.FixedSizeListType)
		if t.Len() <= 0 {
			return nil, nil, fmt.Errorf("fixed-size list of %d items: %w", t.Len(), lancer.ErrUnsupported)
		}
		dims = append(dims, int(t.Len()))
		dt = t.Elem()
	}
	if fixedBits(dt) <= 0 {
		return nil, nil, fmt.Errorf("fixed-size list of %s items: %w", dt, lancer.ErrUnsupported)
	}
	return dims, dt, nil
}

// Write implements fieldWriter.
func (fw *structuralFieldWriter) Write(ctx context.Context, arr arrow.Array) error {
	if arr.Len() == 0 {
		return nil
	}
	pieces, err := shredField(fw, arr)
	if err != nil {
		return err
	}
	for i, lw := range fw.leaves {
		lw.pending = append(lw.pending, pieces[i])
		lw.pendingBytes += pieces[i].bytes
		pieces[i] = nil
		for lw.pendingBytes >= fw.w.PageSize {
			if err := fw.flushPage(ctx, lw, fw.w.PageSize); err != nil {
				releasePieces(pieces)
				return err
			}
		}
	}
	return nil
}

// Finish implements fieldWriter.
func (fw *structuralFieldWriter) Finish(ctx context.Context) error {
	for _, lw := range fw.leaves {
		for len(lw.pending) > 0 {
			if err := fw.flushPage(ctx, lw, -1); err != nil {
				return err
			}
		}
	}
	if fw.blobs != nil {
		return fw.blobs.close()
	}
	return nil
}

// Abort releases what the writer holds and discards sidecar files.
func (fw *structuralFieldWriter) Abort(ctx context.Context) {
	for _, lw := range fw.leaves {
		releasePieces(lw.pending)
		lw.pending = nil
	}
	if fw.blobs != nil {
		fw.blobs.Abort(ctx)
	}
}

func releasePieces(pieces []*leafPiece) {
	for _, p := range pieces {
		if p != nil {
			p.release()
		}
	}
}

// flushPage encodes pending pieces of lw worth about limit bytes (all of
// them when limit < 0) as one page of whole rows.
func (fw *structuralFieldWriter) flushPage(ctx context.Context, lw *leafWriter, limit int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	take := len(lw.pending)
	if limit >= 0 {
		acc := 0
		for i, p := range lw.pending {
			if acc+p.bytes <= limit || p.rows == 1 {
				acc += p.bytes
				if acc >= limit {
					take = i + 1
					break
				}
				continue
			}
			// Cut this piece: the rows that fill the page go now.
			rows := int(int64(p.rows) * int64(limit-acc) / int64(max(p.bytes, 1)))
			rows = max(rows, 1)
			if rows < p.rows {
				head, tail := p.split(lw.spec, rows)
				lw.pending[i] = head
				lw.pending = slices.Insert(lw.pending, i+1, tail)
			}
			take = i + 1
			break
		}
	}
	page := lw.pending[:take]
	rest := lw.pending[take:]
	bytes := 0
	for _, p := range page {
		bytes += p.bytes
	}
	defer func() { releasePieces(page) }()
	rows, err := fw.encodePage(ctx, lw.spec, page, lw.nextRow)
	lw.pending = append([]*leafPiece(nil), rest...)
	lw.pendingBytes -= bytes
	if err != nil {
		return fmt.Errorf("column %d (field %q) page at row %d: %w", lw.spec.col, lw.spec.field.Name, lw.nextRow, err)
	}
	lw.nextRow += uint64(rows)
	return nil
}
