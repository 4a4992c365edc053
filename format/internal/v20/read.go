package v20

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

// Reading files of version 2.0 (footer version 0.3; docs/spec/lance-format.md §6.3, §7).
//
// Every schema field has its own column, numbered in pre-order. A column is
// a sequence of pages, each holding Page.length values of that column, and
// the columns of a file page independently of each other:
//
//   - a leaf (numbers, strings, fixed-size lists, dictionaries, a packed
//     struct, a legacy blob's descriptors) is one column of values;
//   - a struct has a header column (SimpleStruct pages, no buffers) that
//     nobody reads: 2.0 cannot store struct validity, so the members'
//     columns, which hold as many values as the struct, say everything;
//   - a list has an offsets column (List pages) followed by its item
//     field's columns. The item columns count items, not rows; each offsets
//     page says how many items it covers (num_items), and the items of
//     consecutive offsets pages follow each other in the item columns,
//     whose pages need not line up with the offsets pages.
//
// So each field lives in a value space: top-level fields in the file's
// rows, the item field of a list in that list's items (the sum of
// num_items over its offsets pages), struct members in their struct's
// space. The cursor maps a row range down the tree — through list offsets
// into item ranges — and reads, in each column, only the pages that overlap
// the range it needs there. It keeps the last page it decoded in every
// column, so a front-to-back scan in batches decodes each page once.

// v20NodeKind is the shape of a projected field.
type v20NodeKind uint8

const (
	// v20Missing: the field has no column in this file; it reads as nulls.
	v20Missing v20NodeKind = iota
	v20Leaf
	v20Struct
	v20List
)

// v20Node is one field of the projection.
type v20Node struct {
	field *schema.Field
	kind  v20NodeKind
	dt    arrow.DataType // the type read returns: field.ScanType()
	// decodeType is the type a leaf's pages decode to: dt, except for a
	// legacy blob (the descriptor struct) and a pruned packed struct (the
	// whole struct, of which pick keeps some members).
	decodeType arrow.DataType
	pick       []int
	// bytesList marks a utf8 or binary field stored as a list of uint8
	// (isListOfBytes): read as a list, returned as dt.
	bytesList bool
	col       *v20Column // leaf: values; list: offsets
	children  []*v20Node
}

// v20Column is one column read by the cursor, with its cached page.
type v20Column struct {
	index int
	pages []*file2pb.ColumnMetadata_Page
	// starts[p] is the first value of page p; starts[len(pages)] the
	// column's value count.
	starts []uint64
	// lists holds, for an offsets column, what each page's List encoding
	// says.
	lists []v20ListPage

	cached  int // index of the cached page, -1 for none
	page    v20Page
	offsets *v20Offsets64
}

// v20ListPage is the List encoding of one offsets page.
type v20ListPage struct {
	offsets *encpb.ArrayEncoding
	// adjustment is null_offset_adjustment: a stored offset at or above it
	// marks a null list.
	adjustment uint64
	numItems   uint64
	// itemBase is the first item of this page in the item columns.
	itemBase uint64
}

// v20Offsets64 is a decoded offsets page: ends[i] is the end of list i
// relative to the page's first item (its start is ends[i-1], or 0), and
// validity the lists' validity (nil: all valid).
type v20Offsets64 struct {
	ends     []uint64
	validity []byte
}

func (c *v20Column) drop() {
	if c.page != nil {
		c.page.release()
	}
	c.page, c.offsets, c.cached = nil, nil, -1
}

// v20Cursor implements cursorImpl for 2.0 files.
type v20Cursor struct {
	r       *fileio.File
	fields  []*v20Node
	columns []*v20Column
	// requested is the row count of the current readRange: nulls of that
	// many rows are what the caller asked for, whatever they cost.
	requested uint64
}

// NewCursor reads files of version 2.0.
func NewCursor(r *fileio.File, proj fileio.Projection) (fileio.Cursor, error) {
	c := &v20Cursor{r: r}
	for _, f := range proj.Fields {
		n, err := c.plan(f, r.NumRows, proj)
		if err != nil {
			return nil, fmt.Errorf("format: %s: field %q (id %d): %w", r.Key, f.Name, f.ID, err)
		}
		c.fields = append(c.fields, n)
	}
	return c, nil
}

// plan builds the node of field f, which lives in a value space of total
// values.
func (c *v20Cursor) plan(f *schema.Field, total uint64, proj fileio.Projection) (*v20Node, error) {
	n := &v20Node{field: f, dt: f.ScanType()}
	n.decodeType = n.dt
	colIdx, hasCol := proj.Column(f.ID)
	if hasCol && (colIdx < 0 || colIdx >= len(c.r.Columns)) {
		return nil, v20Corruptf("column %d of a file with %d columns", colIdx, len(c.r.Columns))
	}
	switch {
	case f.Blob == schema.BlobV2:
		return nil, v20Unsupportedf("blob v2 field in a 2.0 file")
	case f.Blob == schema.BlobLegacy:
		if !hasCol {
			return n, nil
		}
		n.kind, n.decodeType = v20Leaf, schema.LegacyBlobDescriptor
		return n, c.useColumn(n, colIdx, total, true)
	case n.dt.ID() == arrow.STRUCT:
		if hasCol && c.isPacked(f, colIdx) {
			n.kind = v20Leaf
			if err := c.planPacked(n); err != nil {
				return nil, err
			}
			return n, c.useColumn(n, colIdx, total, false)
		}
		anyColumn := hasCol
		for _, child := range f.Children {
			cn, err := c.plan(child, total, proj)
			if err != nil {
				return nil, fmt.Errorf("member %q (id %d): %w", child.Name, child.ID, err)
			}
			n.children = append(n.children, cn)
			anyColumn = anyColumn || cn.kind != v20Missing
		}
		if anyColumn {
			n.kind = v20Struct
		} else {
			n.children = nil
		}
		return n, nil
	case n.dt.ID() == arrow.LIST || n.dt.ID() == arrow.LARGE_LIST:
		if !hasCol {
			return n, nil
		}
		if len(f.Children) != 1 {
			return nil, v20Corruptf("list field with %d children", len(f.Children))
		}
		n.kind = v20List
		if err := c.useColumn(n, colIdx, total, false); err != nil {
			return nil, err
		}
		items, err := c.planLists(n.col)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", colIdx, err)
		}
		child, err := c.plan(f.Children[0], items, proj)
		if err != nil {
			return nil, fmt.Errorf("list item: %w", err)
		}
		n.children = []*v20Node{child}
		return n, nil
	case n.dt.ID() == arrow.MAP:
		// Lance refuses to write maps in 2.0 files.
		return nil, v20Unsupportedf("map field in a 2.0 file")
	}
	if !hasCol {
		return n, nil
	}
	if c.isListOfBytes(n.dt, colIdx) {
		return n, c.planListOfBytes(n, colIdx, total)
	}
	n.kind = v20Leaf
	return n, c.useColumn(n, colIdx, total, false)
}

// isListOfBytes reports whether the utf8 or binary field of type dt is
// stored in column colIdx in the layout Lance 0.12 and 0.13 wrote: an
// offsets column of List pages followed by a column of its bytes as uint8
// values (@lancedb/lancedb 0.5 with 2.0 files; Lance 12 still reads it,
// telling it by the first page's encoding).
func (c *v20Cursor) isListOfBytes(dt arrow.DataType, colIdx int) bool {
	if _, ok := arrays.BinaryType(dt); !ok {
		return false
	}
	pages := c.r.Columns[colIdx].GetPages()
	if len(pages) == 0 {
		return false
	}
	var enc encpb.ArrayEncoding
	if err := v20ParseEncoding(pages[0].GetEncoding(), ArrayEncodingName, &enc); err != nil {
		return false // the leaf's own decoding reports it
	}
	return enc.GetList() != nil
}

// planListOfBytes plans n (a utf8 or binary field) as a list of uint8
// items in the column after colIdx; read turns the lists into values.
func (c *v20Cursor) planListOfBytes(n *v20Node, colIdx int, total uint64) error {
	if colIdx+1 >= len(c.r.Columns) {
		return v20Corruptf("column %d holds the offsets of %s values, and no column of their bytes follows", colIdx, n.dt)
	}
	n.kind, n.bytesList = v20List, true
	if err := c.useColumn(n, colIdx, total, false); err != nil {
		return err
	}
	items, err := c.planLists(n.col)
	if err != nil {
		return fmt.Errorf("column %d: %w", colIdx, err)
	}
	bytes := &v20Node{field: &schema.Field{ID: -1, ParentID: n.field.ID, Name: "item", Type: arrow.PrimitiveTypes.Uint8}, kind: v20Leaf, dt: arrow.PrimitiveTypes.Uint8}
	bytes.decodeType = bytes.dt
	if err := c.useColumn(bytes, colIdx+1, items, false); err != nil {
		return fmt.Errorf("the bytes of %s values: %w", n.dt, err)
	}
	n.children = []*v20Node{bytes}
	return nil
}

// bytesOfLists returns the list<uint8> array lists as values of the utf8
// or binary type dt: the same validity, offsets and bytes. It releases
// lists.
func bytesOfLists(dt arrow.DataType, lists arrow.Array) arrow.Array {
	defer lists.Release()
	ld := lists.Data()
	items := ld.Children()[0]
	values := items.Buffers()[1]
	if values != nil {
		values = memory.SliceBuffer(values, items.Offset(), items.Len())
		defer values.Release()
	}
	data := array.NewData(dt, ld.Len(), []*memory.Buffer{ld.Buffers()[0], ld.Buffers()[1], values}, nil, ld.NullN(), ld.Offset())
	defer data.Release()
	return array.MakeFromData(data)
}

// useColumn attaches column colIdx to n after checking its column encoding
// and that its pages hold total values.
func (c *v20Cursor) useColumn(n *v20Node, colIdx int, total uint64, blob bool) error {
	cm := c.r.Columns[colIdx]
	if err := v20CheckColumnEncoding(cm, blob); err != nil {
		return fmt.Errorf("column %d: %w", colIdx, err)
	}
	col := &v20Column{index: colIdx, pages: cm.GetPages(), cached: -1}
	col.starts = make([]uint64, len(col.pages)+1)
	for p, page := range col.pages {
		length := page.GetLength()
		if length > maxV20PageValues {
			return v20Corruptf("column %d page %d holds %d values", colIdx, p, length)
		}
		if col.starts[p]+length < col.starts[p] {
			return v20Corruptf("column %d: page lengths overflow", colIdx)
		}
		col.starts[p+1] = col.starts[p] + length
	}
	if got := col.starts[len(col.pages)]; got != total {
		return v20Corruptf("column %d holds %d values, the field has %d", colIdx, got, total)
	}
	n.col = col
	c.columns = append(c.columns, col)
	return nil
}

// v20CheckColumnEncoding checks that a column holds plain values (or, for
// a legacy blob field, blob descriptors).
func v20CheckColumnEncoding(cm *file2pb.ColumnMetadata, blob bool) error {
	var ce encpb.ColumnEncoding
	switch cm.GetEncoding().GetLocation().(type) {
	case nil, *file2pb.Encoding_None:
		// Lance 0.12 and 0.13 recorded "none" for columns of plain values.
	default:
		if err := v20ParseEncoding(cm.GetEncoding(), ColumnEncodingName, &ce); err != nil {
			return fmt.Errorf("column encoding: %w", err)
		}
	}
	switch ce.GetColumnEncoding().(type) {
	case nil, *encpb.ColumnEncoding_Values:
		if blob {
			return v20Unsupportedf("legacy blob field stored without the blob column encoding")
		}
		return nil
	case *encpb.ColumnEncoding_Blob:
		if !blob {
			return v20Unsupportedf("blob column read as a field without lance-encoding:blob")
		}
		return nil
	}
	return v20Unsupportedf("column encoding %T", ce.GetColumnEncoding())
}

// isPacked tells a packed struct (one column of PackedStruct pages) from a
// struct with a header column.
func (c *v20Cursor) isPacked(f *schema.Field, colIdx int) bool {
	if f.Packed() {
		return true
	}
	pages := c.r.Columns[colIdx].GetPages()
	if len(pages) == 0 {
		return false
	}
	var enc encpb.ArrayEncoding
	if err := v20ParseEncoding(pages[0].GetEncoding(), ArrayEncodingName, &enc); err != nil {
		return false
	}
	return enc.GetPackedStruct() != nil
}

// planPacked sets the type a packed struct's pages decode to: the struct
// as the file wrote it, all members included, of which a pruned field keeps
// some.
func (c *v20Cursor) planPacked(n *v20Node) error {
	whole := c.r.Schema.FieldByID(n.field.ID)
	if whole == nil || whole.Type.ID() != arrow.STRUCT {
		return nil // not in the file's schema: take the field as written
	}
	identity := len(whole.Children) == len(n.field.Children)
	for i, child := range n.field.Children {
		k := slices.IndexFunc(whole.Children, func(wc *schema.Field) bool { return wc.ID == child.ID })
		if k < 0 {
			return v20Corruptf("packed struct member %q (id %d) is not in the file's struct", child.Name, child.ID)
		}
		identity = identity && k == i
		n.pick = append(n.pick, k)
	}
	if identity {
		n.pick = nil
		return nil
	}
	n.decodeType = whole.Type
	return nil
}

// planLists reads the List encodings of an offsets column's pages and
// returns how many items they cover together.
func (c *v20Cursor) planLists(col *v20Column) (uint64, error) {
	col.lists = make([]v20ListPage, len(col.pages))
	var items uint64
	for p, page := range col.pages {
		col.lists[p].itemBase = items
		if page.GetLength() == 0 {
			continue // Lance skips empty offsets pages, num_items and all
		}
		var enc encpb.ArrayEncoding
		if err := v20ParseEncoding(page.GetEncoding(), ArrayEncodingName, &enc); err != nil {
			return 0, fmt.Errorf("page %d: %w", p, err)
		}
		list := enc.GetList()
		if list == nil {
			return 0, v20Corruptf("page %d of a list's offsets column is %s, not list", p, v20EncodingName(&enc))
		}
		if list.GetNullOffsetAdjustment() == 0 {
			return 0, v20Corruptf("page %d: list offsets with a null adjustment of 0", p)
		}
		if items+list.GetNumItems() < items {
			return 0, v20Corruptf("page %d: item counts overflow", p)
		}
		col.lists[p] = v20ListPage{
			offsets:    list.GetOffsets(),
			adjustment: list.GetNullOffsetAdjustment(),
			numItems:   list.GetNumItems(),
			itemBase:   items,
		}
		items += list.GetNumItems()
	}
	return items, nil
}

func (c *v20Cursor) ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	c.requested = end - start
	out := make([]arrow.Array, 0, len(c.fields))
	for _, n := range c.fields {
		a, err := c.read(ctx, n, start, end)
		if err != nil {
			fileio.ReleaseAll(out)
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (c *v20Cursor) Release() {
	for _, col := range c.columns {
		col.drop()
	}
}

// read returns values [a, b) of node n's value space.
func (c *v20Cursor) read(ctx context.Context, n *v20Node, a, b uint64) (arrow.Array, error) {
	if a == b {
		return arrays.NullArray(c.r.Mem, n.dt, 0), nil
	}
	switch n.kind {
	case v20Leaf:
		return c.readLeaf(ctx, n, a, b)
	case v20List:
		if n.bytesList {
			lists, err := c.readList(ctx, n, a, b)
			if err != nil {
				return nil, err
			}
			return bytesOfLists(n.dt, lists), nil
		}
		return c.readList(ctx, n, a, b)
	case v20Struct:
		members := make([]arrow.Array, 0, len(n.children))
		defer func() { fileio.ReleaseAll(members) }()
		for _, child := range n.children {
			m, err := c.read(ctx, child, a, b)
			if err != nil {
				return nil, err
			}
			members = append(members, m)
		}
		return arrays.StructArray(n.dt.(*arrow.StructType), int(b-a), members, nil), nil
	}
	if err := c.allow(v20Count(b-a), n.dt); err != nil {
		return nil, fmt.Errorf("format: %s: field %q (id %d) has no column: %w", c.r.Key, n.field.Name, n.field.ID, err)
	}
	return arrays.NullArray(c.r.Mem, n.dt, int(b-a)), nil
}

// v20Count converts a value count to an int, saturating (callers bound it
// before allocating).
func v20Count(n uint64) int { return int(min(n, math.MaxInt)) }

// allow is the budget for values without buffers behind them in the
// current read (allowSynthetic).
func (c *v20Cursor) allow(n int, dt arrow.DataType) error {
	return arrays.AllowSynthetic(n, c.requested, dt)
}

// pageRange yields the pages of col overlapping [a, b) with the part of
// each inside the range, relative to the page.
func (col *v20Column) pageRange(a, b uint64, fn func(p int, lo, hi uint64) error) error {
	p := sort.Search(len(col.pages), func(i int) bool { return col.starts[i+1] > a })
	for ; p < len(col.pages) && col.starts[p] < b; p++ {
		s, e := max(a, col.starts[p]), min(b, col.starts[p+1])
		if s >= e {
			continue
		}
		if err := fn(p, s-col.starts[p], e-col.starts[p]); err != nil {
			return err
		}
	}
	return nil
}

// readLeaf reads values [a, b) of a leaf column, a slice of each page it
// overlaps.
func (c *v20Cursor) readLeaf(ctx context.Context, n *v20Node, a, b uint64) (arrow.Array, error) {
	var pieces []arrow.Array
	defer func() { fileio.ReleaseAll(pieces) }()
	err := n.col.pageRange(a, b, func(p int, lo, hi uint64) error {
		page, err := c.leafPage(ctx, n, p)
		if err != nil {
			return err
		}
		piece, err := page.slice(int(lo), int(hi-lo))
		if err != nil {
			return c.pageError(n, p, err)
		}
		pieces = append(pieces, piece)
		return nil
	})
	if err != nil {
		return nil, err
	}
	arr, err := c.concat(n, pieces)
	if err != nil || n.pick == nil {
		return arr, err
	}
	defer arr.Release()
	return v20PickMembers(n.dt.(*arrow.StructType), arr.(*array.Struct), n.pick), nil
}

// concat joins the pieces of one read.
func (c *v20Cursor) concat(n *v20Node, pieces []arrow.Array) (arrow.Array, error) {
	if len(pieces) == 1 {
		pieces[0].Retain()
		return pieces[0], nil
	}
	arr, err := array.Concatenate(pieces, c.r.Mem)
	if err != nil {
		return nil, fmt.Errorf("format: %s: column %d (field %q): joining pages: %v: %w", c.r.Key, n.col.index, n.field.Name, err, errV20Join)
	}
	return arr, nil
}

// errV20Join is what a failure to join decoded pages wraps: pages of one
// column that decode to different types are malformed.
var errV20Join = v20Corruptf("pages do not join")

// v20PickMembers keeps the members pick of a packed struct.
func v20PickMembers(dt *arrow.StructType, whole *array.Struct, pick []int) arrow.Array {
	members := make([]arrow.Array, len(pick))
	for i, k := range pick {
		members[i] = whole.Field(k)
	}
	var validity []byte
	if whole.NullN() > 0 {
		bm := arrays.NullBitmap{N: whole.Len()}
		for i := range whole.Len() {
			if whole.IsNull(i) {
				bm.SetNull(i)
			}
		}
		validity = bm.Finish()
	}
	return arrays.StructArray(dt, whole.Len(), members, validity)
}

// readList reads lists [a, b): their offsets from the overlapping offsets
// pages, then the items those lists cover from the item field.
func (c *v20Cursor) readList(ctx context.Context, n *v20Node, a, b uint64) (arrow.Array, error) {
	count := v20Count(b - a)
	dt := n.dt
	if n.bytesList {
		dt = arrow.ListOf(arrow.PrimitiveTypes.Uint8)
		if large, _ := arrays.BinaryType(n.dt); large {
			dt = arrow.LargeListOf(arrow.PrimitiveTypes.Uint8)
		}
	}
	large := dt.ID() == arrow.LARGE_LIST
	offsets := arrays.NewOffsetWriter(large, count)
	validity := arrays.NullBitmap{N: count}
	type itemRange struct{ start, end uint64 }
	var ranges []itemRange
	var total uint64
	row := 0
	err := n.col.pageRange(a, b, func(p int, lo, hi uint64) error {
		op, err := c.offsetsPage(ctx, n, p)
		if err != nil {
			return err
		}
		var first uint64
		if lo > 0 {
			first = op.ends[lo-1]
		}
		prev := first
		for j := lo; j < hi; j++ {
			total += op.ends[j] - prev
			prev = op.ends[j]
			if !large && total > math.MaxInt32 {
				return c.pageError(n, p, v20Corruptf("lists hold %d items, past 32-bit offsets", total))
			}
			offsets.Add(total)
			if op.validity != nil && !bitutil.BitIsSet(op.validity, int(j)) {
				validity.SetNull(row)
			}
			row++
		}
		if prev > first {
			base := n.col.lists[p].itemBase
			if k := len(ranges) - 1; k >= 0 && ranges[k].end == base+first {
				ranges[k].end = base + prev
			} else {
				ranges = append(ranges, itemRange{base + first, base + prev})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if row != count { // the column's pages hold the whole value space (useColumn)
		return nil, fmt.Errorf("format: %s: column %d (field %q): %w", c.r.Key, n.col.index, n.field.Name,
			v20Corruptf("%d of %d lists found", row, count))
	}
	var items arrow.Array
	switch len(ranges) {
	case 0:
		items, err = c.read(ctx, n.children[0], 0, 0)
	case 1:
		items, err = c.read(ctx, n.children[0], ranges[0].start, ranges[0].end)
	default:
		parts := make([]arrow.Array, 0, len(ranges))
		for _, r := range ranges {
			part, err := c.read(ctx, n.children[0], r.start, r.end)
			if err != nil {
				fileio.ReleaseAll(parts)
				return nil, err
			}
			parts = append(parts, part)
		}
		items, err = array.Concatenate(parts, c.r.Mem)
		fileio.ReleaseAll(parts)
		if err != nil {
			err = fmt.Errorf("format: %s: list field %q: joining items: %v: %w", c.r.Key, n.field.Name, err, errV20Join)
		}
	}
	if err != nil {
		return nil, err
	}
	defer items.Release()
	return arrays.ListArray(dt, count, offsets.Buf, items, validity.Finish()), nil
}

// leafPage returns page p of a leaf's column, decoding it unless cached.
func (c *v20Cursor) leafPage(ctx context.Context, n *v20Node, p int) (v20Page, error) {
	col := n.col
	if col.cached == p && col.page != nil {
		return col.page, nil
	}
	d, enc, err := c.pageDecoder(ctx, n, p)
	if err != nil {
		return nil, err
	}
	page, err := d.page(enc, n.decodeType, int(col.pages[p].GetLength()))
	if err != nil {
		return nil, c.pageError(n, p, err)
	}
	col.drop()
	col.cached, col.page = p, page
	return page, nil
}

// offsetsPage returns page p of a list's offsets column, decoding it
// unless cached: the lists' ends relative to the page's first item, and
// their validity.
func (c *v20Cursor) offsetsPage(ctx context.Context, n *v20Node, p int) (*v20Offsets64, error) {
	col := n.col
	if col.cached == p && col.offsets != nil {
		return col.offsets, nil
	}
	d, _, err := c.pageDecoder(ctx, n, p)
	if err != nil {
		return nil, err
	}
	info := col.lists[p]
	length := v20Count(col.pages[p].GetLength())
	raw, _, err := d.uints(info.offsets, length)
	if err != nil {
		return nil, c.pageError(n, p, fmt.Errorf("list offsets: %w", err))
	}
	op := &v20Offsets64{ends: raw}
	validity := arrays.NullBitmap{N: length}
	var prev uint64
	for i, v := range raw {
		if v >= info.adjustment {
			validity.SetNull(i)
		}
		end := v % info.adjustment
		if end < prev || end > info.numItems {
			return nil, c.pageError(n, p, v20Corruptf("list %d ends at item %d, after %d, of %d items", i, end, prev, info.numItems))
		}
		raw[i], prev = end, end
	}
	op.validity = validity.Finish()
	col.drop()
	col.cached, col.offsets = p, op
	return op, nil
}

// pageDecoder parses page p's encoding and reads its buffers, and those of
// the column and the file it names.
func (c *v20Cursor) pageDecoder(ctx context.Context, n *v20Node, p int) (*v20PageDecoder, *encpb.ArrayEncoding, error) {
	page := n.col.pages[p]
	enc := &encpb.ArrayEncoding{}
	if err := v20ParseEncoding(page.GetEncoding(), ArrayEncodingName, enc); err != nil {
		return nil, nil, c.pageError(n, p, err)
	}
	bufs, err := c.r.PageBuffers(ctx, page)
	if err != nil {
		return nil, nil, err
	}
	d := &v20PageDecoder{r: c.r, col: n.col.index, bufs: bufs, mem: c.r.Mem, allow: c.allow}
	if err := c.readOtherBuffers(ctx, d, enc.ProtoReflect()); err != nil {
		return nil, nil, err
	}
	return d, enc, nil
}

// readOtherBuffers reads the column and file buffers an encoding names
// (Lance's 2.0 writer uses only page buffers, but the format allows them).
func (c *v20Cursor) readOtherBuffers(ctx context.Context, d *v20PageDecoder, m protoreflect.Message) error {
	if b, ok := m.Interface().(*encpb.Buffer); ok {
		var r fileio.Range
		i := uint64(b.GetBufferIndex())
		switch b.GetBufferType() {
		case encpb.Buffer_column:
			cm := c.r.Columns[d.col]
			if i >= uint64(len(cm.GetBufferOffsets())) {
				return nil // the decoder reports the bad index
			}
			r = fileio.Range{Offset: cm.GetBufferOffsets()[i], Size: cm.GetBufferSizes()[i]}
		case encpb.Buffer_file:
			if i >= uint64(len(c.r.GlobalBuffers)) {
				return nil
			}
			r = c.r.GlobalBuffers[i]
		default:
			return nil
		}
		data, err := c.r.ReadAt(ctx, r.Offset, r.Size)
		if err != nil {
			return err
		}
		if d.other == nil {
			d.other = map[v20BufferKey][]byte{}
		}
		d.other[v20BufferKey{b.GetBufferType(), i}] = data
		return nil
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil || fd.IsMap():
		case fd.IsList():
			for i := 0; i < v.List().Len() && err == nil; i++ {
				err = c.readOtherBuffers(ctx, d, v.List().Get(i).Message())
			}
		default:
			err = c.readOtherBuffers(ctx, d, v.Message())
		}
		return err == nil
	})
	return err
}

// pageError names the file, column, page and field of a decoding error.
func (c *v20Cursor) pageError(n *v20Node, p int, err error) error {
	return fmt.Errorf("format: %s: column %d page %d (field %q): %w", c.r.Key, n.col.index, p, n.field.Name, err)
}
