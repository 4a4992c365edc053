package legacy

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// maxLegacyValues bounds the number of values one node may produce. Most
// counts are bounded by the bytes they read, but null-type fields, zero-width
// fixed-size lists and lists of them read no bytes, so a corrupt count could
// otherwise make an array of 2^60 nulls.
const maxLegacyValues = math.MaxInt32

// legacyCursor reads a projection of a v1 file. It keeps nothing between
// calls: every call reads only the byte ranges of the rows asked for (and
// the small gaps between ranges it merges), so reading a file front to back
// reads each byte about once anyway.
type legacyCursor struct {
	r    *Reader
	proj fileio.Projection
}

// NewCursor prepares reading proj from the open v1 file r, refusing the
// columns Lance cannot read back from v1 files either (blobs, maps).
func NewCursor(r *Reader, proj fileio.Projection) (fileio.Cursor, error) {
	if r.Legacy == nil {
		return nil, fmt.Errorf("format: %s: legacy file metadata not loaded: %w", r.Key, lancer.ErrInvalidArgument)
	}
	var err error
	for _, top := range proj.Fields {
		top.Walk(func(f *schema.Field) {
			if err != nil {
				return
			}
			switch {
			case f.Blob != schema.NotBlob:
				// Lance itself panics reading legacy blob columns back.
				err = fmt.Errorf("format: %s: field %q (id %d): blob columns in legacy files: %w", r.Key, f.Name, f.ID, lancer.ErrUnsupported)
			case f.Type.ID() == arrow.MAP:
				err = fmt.Errorf("format: %s: field %q (id %d): map columns in legacy files: %w", r.Key, f.Name, f.ID, lancer.ErrUnsupported)
			case f.Type.ID() == arrow.DICTIONARY && r.Legacy.dictionaries[f.ID] == nil:
				err = r.Corruptf("dictionary field %q (id %d) has no dictionary in this file", f.Name, f.ID)
			}
		})
	}
	if err != nil {
		return nil, err
	}
	return &legacyCursor{r: r, proj: proj}, nil
}

func (c *legacyCursor) Release() {}

func (c *legacyCursor) ReadRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	l := c.r.Legacy
	out := make([]arrow.Array, len(c.proj.Fields))
	// Plan every page read of every batch the range touches, then run the
	// reads in rounds (values, then what offsets point at), so ranges of one
	// round that lie close together are read with one request.
	s := newLegacyScan(c.r, c.proj.Column)
	s.requested = end - start
	first := sort.Search(l.NumBatches(), func(b int) bool { return l.batchOffsets[b+1] > start })
	nodes := make([][]legacyNode, len(c.proj.Fields))
	for b := first; b < l.NumBatches() && l.batchOffsets[b] < end; b++ {
		bStart := max(start, l.batchOffsets[b]) - l.batchOffsets[b]
		bEnd := min(end, l.batchOffsets[b+1]) - l.batchOffsets[b]
		if bStart == bEnd {
			continue
		}
		s.batch = b
		for i, f := range c.proj.Fields {
			n, err := s.node(f, bStart, bEnd)
			if err != nil {
				return nil, err
			}
			nodes[i] = append(nodes[i], n)
		}
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	for i, f := range c.proj.Fields {
		a, err := c.buildConcat(f, nodes[i], start, end)
		if err != nil {
			fileio.ReleaseAll(out)
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// buildConcat builds the pieces of field f, one per batch, and joins them.
func (c *legacyCursor) buildConcat(f *schema.Field, pieces []legacyNode, start, end uint64) (arrow.Array, error) {
	if len(pieces) == 0 {
		return nil, c.r.Corruptf("no batch holds rows [%d, %d)", start, end)
	}
	arrs := make([]arrow.Array, 0, len(pieces))
	defer func() { fileio.ReleaseAll(arrs) }()
	for _, p := range pieces {
		a, err := p.build(c.r.Mem)
		if err != nil {
			return nil, err
		}
		arrs = append(arrs, a)
	}
	if len(arrs) == 1 {
		arrs[0].Retain()
		return arrs[0], nil
	}
	a, err := array.Concatenate(arrs, c.r.Mem)
	if err != nil {
		// Each batch fit its type, so this is the whole range being too big
		// for one array (more than 2 GiB of utf8, say); Lance fails too.
		return nil, fmt.Errorf("format: %s: field %q: rows [%d, %d) do not fit one %s array: %v: %w",
			c.r.Key, f.Name, start, end, f.Type, err, lancer.ErrUnsupported)
	}
	return a, nil
}

// legacyScan plans and performs the reads of one readRange call. Nodes ask
// for byte ranges with read; run performs all pending reads of a round at
// once and hands each node its bytes, which may ask for more ranges (a
// list's items, a string page's bytes) for the next round.
//
// Ranges of a round that lie close together are read with one request, and
// later rounds take their bytes from what earlier rounds fetched when they
// can: a v1 batch stores its pages back to back, string bytes just before
// their positions, so reading all of a batch costs one request, not one per
// round.
type legacyScan struct {
	r      *Reader
	column func(fieldID int32) (int, bool)
	// batch is the batch the nodes being planned read from.
	batch int
	// requested is the number of rows the read asked for (allowSynthetic).
	requested uint64
	pending   []legacyRead
	// spans are the file bytes fetched so far.
	spans []legacySpan
}

type legacyRead struct {
	rng  fileio.Range
	then func([]byte) error
}

// legacySpan is a run of file bytes starting at off.
type legacySpan struct {
	off uint64
	buf []byte
}

func newLegacyScan(r *Reader, column func(int32) (int, bool)) *legacyScan {
	return &legacyScan{r: r, column: column}
}

// read asks for the file bytes rng, passed to then once read. rng must have
// been checked against the file size.
func (s *legacyScan) read(rng fileio.Range, then func([]byte) error) {
	s.pending = append(s.pending, legacyRead{rng, then})
}

func (s *legacyScan) run(ctx context.Context) error {
	for len(s.pending) > 0 {
		round := s.pending
		s.pending = nil
		if err := s.fetch(ctx, round); err != nil {
			return err
		}
		for _, rd := range round {
			b, _ := s.fetched(rd.rng)
			if err := rd.then(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetched returns the bytes of rng if a span holds them.
func (s *legacyScan) fetched(rng fileio.Range) ([]byte, bool) {
	if rng.Size == 0 {
		return nil, true
	}
	for _, sp := range s.spans {
		if rng.Offset >= sp.off && rng.Offset-sp.off <= uint64(len(sp.buf)) && rng.Size <= uint64(len(sp.buf))-(rng.Offset-sp.off) {
			o := rng.Offset - sp.off
			return sp.buf[o : o+rng.Size : o+rng.Size], true
		}
	}
	return nil, false
}

// fetch reads the ranges of round that no span holds yet, merging ranges
// less than mergeGap apart into one request.
func (s *legacyScan) fetch(ctx context.Context, round []legacyRead) error {
	const mergeGap = 64 << 10
	var missing []fileio.Range
	for _, rd := range round {
		if _, ok := s.fetched(rd.rng); !ok {
			missing = append(missing, rd.rng)
		}
	}
	slices.SortFunc(missing, func(a, b fileio.Range) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 0; i < len(missing); {
		start, end := missing[i].Offset, missing[i].Offset+missing[i].Size
		j := i + 1
		for j < len(missing) && missing[j].Offset <= end+mergeGap {
			end = max(end, missing[j].Offset+missing[j].Size)
			j++
		}
		buf, err := s.r.ReadAt(ctx, start, end-start)
		if err != nil {
			return err
		}
		s.spans = append(s.spans, legacySpan{start, buf})
		i = j
	}
	return nil
}

// legacyNode is one field of one batch, planned; build assembles its array
// once run has delivered its bytes.
type legacyNode interface {
	build(mem memory.Allocator) (arrow.Array, error)
}

// errorf returns a corruption error naming the file, field and batch.
func (s *legacyScan) errorf(f *schema.Field, format string, args ...any) error {
	return s.r.Corruptf("field %q (id %d) batch %d: %s", f.Name, f.ID, s.batch, fmt.Sprintf(format, args...))
}

// page finds the page of f in the current batch; ok is false when the
// projection has no column for f (it then reads as nulls).
func (s *legacyScan) page(f *schema.Field) (p pageEntry, ok bool, err error) {
	col, ok := s.column(f.ID)
	if !ok {
		return pageEntry{}, false, nil
	}
	if col < 0 || col > math.MaxInt32 {
		return pageEntry{}, false, s.errorf(f, "column %d is not a field id", col)
	}
	p, ok = s.r.Legacy.pageOf(int32(col), s.batch)
	if !ok {
		l := s.r.Legacy
		return pageEntry{}, false, s.errorf(f, "field id %d is outside the page table (ids %d..%d, %d batches)",
			col, l.minFieldID, int(l.minFieldID)+l.numFieldIDs-1, l.NumBatches())
	}
	return p, true, nil
}

// node plans reading values [start, end) of f's page (for top-level fields:
// rows of the current batch).
func (s *legacyScan) node(f *schema.Field, start, end uint64) (legacyNode, error) {
	n := end - start
	if n > maxLegacyValues {
		return nil, s.errorf(f, "%d values in one batch", n)
	}
	if st, ok := f.Type.(*arrow.StructType); ok {
		if len(st.Fields()) != len(f.Children) {
			return nil, s.errorf(f, "struct type has %d members but the field %d children", len(st.Fields()), len(f.Children))
		}
		sn := &legacyStructNode{dt: st, n: int(n), children: make([]legacyNode, len(f.Children))}
		for i, c := range f.Children {
			cn, err := s.node(c, start, end)
			if err != nil {
				return nil, err
			}
			sn.children[i] = cn
		}
		return sn, nil
	}
	p, ok, err := s.page(f)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := arrays.AllowSynthetic(int(n), s.requested, f.Type); err != nil {
			return nil, fmt.Errorf("format: %s: field %q (id %d) batch %d has no column: %w", s.r.Key, f.Name, f.ID, s.batch, err)
		}
		return &legacyNullNode{dt: f.Type, n: int(n)}, nil
	}
	switch t := f.Type.(type) {
	case *arrow.NullType:
		if end > p.Length {
			return nil, s.errorf(f, "rows [%d, %d) past the page's %d", start, end, p.Length)
		}
		return &legacyNullNode{dt: t, n: int(n)}, nil
	case *arrow.ListType, *arrow.LargeListType:
		return s.listNode(f, p, start, end)
	case *arrow.DictionaryType:
		idx, err := s.plainNode(&schema.Field{ID: f.ID, Name: f.Name, Type: t.IndexType}, p, start, end)
		if err != nil {
			return nil, err
		}
		return &legacyDictNode{s: s, f: f, batch: s.batch, dt: t, indices: idx, dict: s.r.Legacy.dictionaries[f.ID]}, nil
	}
	if _, ok := arrays.BinaryType(f.Type); ok {
		return s.binaryNode(f, p, start, end)
	}
	return s.plainNode(f, p, start, end)
}

// FixedStride describes a type stored as plain values: leaf is the innermost
// element type and perRow how many leaf values one row holds (the product of
// the fixed-size list dimensions).
func FixedStride(dt arrow.DataType) (leaf arrow.DataType, perRow uint64, ok bool) {
	perRow = 1
	for {
		switch t := dt.(type) {
		case *arrow.FixedSizeListType:
			hi, lo := bits.Mul64(perRow, uint64(t.Len()))
			if hi != 0 || t.Len() < 0 {
				return nil, 0, false
			}
			perRow, dt = lo, t.Elem()
			continue
		case *arrow.BooleanType, *arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type,
			*arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
			*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
			*arrow.Date32Type, *arrow.Date64Type, *arrow.Time32Type, *arrow.Time64Type,
			*arrow.TimestampType, *arrow.DurationType, *arrow.Decimal128Type, *arrow.Decimal256Type,
			*arrow.FixedSizeBinaryType:
			return dt, perRow, true
		}
		return nil, 0, false
	}
}

// byteRange returns the file range holding elements [start, end) of elements
// of width bits each, starting at pos, checked against the file; bitOffset
// is where element start sits in the first byte (booleans only).
func (s *legacyScan) byteRange(f *schema.Field, pos, start, end, width uint64) (rng fileio.Range, bitOffset int, err error) {
	hi1, lo := bits.Mul64(start, width)
	hi2, hiBits := bits.Mul64(end, width)
	if hi1 != 0 || hi2 != 0 {
		return fileio.Range{}, 0, s.errorf(f, "values [%d, %d) of %d bits overflow", start, end, width)
	}
	first, last := lo/8, (hiBits+7)/8
	if pos > uint64(s.r.Size) || last > uint64(s.r.Size)-pos {
		return fileio.Range{}, 0, s.errorf(f, "values [%d, %d) at %d run past the end of the file (%d bytes)", start, end, pos, s.r.Size)
	}
	return fileio.Range{Offset: pos + first, Size: last - first}, int(lo % 8), nil
}

// plainNode plans reading rows [start, end) of a fixed-stride page.
func (s *legacyScan) plainNode(f *schema.Field, p pageEntry, start, end uint64) (legacyNode, error) {
	leaf, perRow, ok := FixedStride(f.Type)
	if !ok {
		return nil, fmt.Errorf("format: %s: field %q (id %d): %s in legacy files: %w", s.r.Key, f.Name, f.ID, f.Type, lancer.ErrUnsupported)
	}
	if end > p.Length {
		return nil, s.errorf(f, "rows [%d, %d) past the page's %d", start, end, p.Length)
	}
	hi1, vStart := bits.Mul64(start, perRow)
	hi2, vEnd := bits.Mul64(end, perRow)
	if hi1 != 0 || hi2 != 0 || vEnd-vStart > maxLegacyValues {
		return nil, s.errorf(f, "rows [%d, %d) of %d values each are too many", start, end, perRow)
	}
	width := uint64(leaf.(arrow.FixedWidthDataType).BitWidth())
	rng, bitOffset, err := s.byteRange(f, p.Pos, vStart, vEnd, width)
	if err != nil {
		return nil, err
	}
	node := &legacyPlainNode{dt: f.Type, n: int(end - start), bitOffset: bitOffset}
	s.read(rng, func(b []byte) error { node.buf = b; return nil })
	return node, nil
}

// binaryNode plans reading values [start, end) of a utf8/binary page: first
// their n+1 positions, then the bytes between the first and the last.
func (s *legacyScan) binaryNode(f *schema.Field, p pageEntry, start, end uint64) (legacyNode, error) {
	if end > p.Length {
		return nil, s.errorf(f, "values [%d, %d) past the page's %d", start, end, p.Length)
	}
	if end-start > maxLegacyValues {
		return nil, s.errorf(f, "%d values in one page", end-start)
	}
	rng, _, err := s.byteRange(f, p.Pos, start, end+1, 64)
	if err != nil {
		return nil, err
	}
	node := &legacyBinaryNode{s: s, f: f, batch: s.batch, n: int(end - start)}
	batch := s.batch
	s.read(rng, func(b []byte) error {
		first := binary.LittleEndian.Uint64(b)
		last := binary.LittleEndian.Uint64(b[len(b)-8:])
		prev := first
		for i := 8; i < len(b); i += 8 {
			pos := binary.LittleEndian.Uint64(b[i:])
			if pos < prev {
				return s.r.Corruptf("field %q (id %d) batch %d: value positions decrease (%d after %d)", f.Name, f.ID, batch, pos, prev)
			}
			prev = pos
		}
		if last > uint64(s.r.Size) {
			return s.r.Corruptf("field %q (id %d) batch %d: values [%d, %d) run past the end of the file (%d bytes)", f.Name, f.ID, batch, first, last, s.r.Size)
		}
		if narrow := f.Type.ID() == arrow.STRING || f.Type.ID() == arrow.BINARY; narrow && last-first > math.MaxInt32 {
			return s.r.Corruptf("field %q (id %d) batch %d: %d bytes of values do not fit 32-bit offsets", f.Name, f.ID, batch, last-first)
		}
		node.positions = b
		s.read(fileio.Range{Offset: first, Size: last - first}, func(data []byte) error { node.data = data; return nil })
		return nil
	})
	return node, nil
}

// listNode plans reading rows [start, end) of a list page: first the n+1
// offsets, then the items they span from the child's page.
func (s *legacyScan) listNode(f *schema.Field, p pageEntry, start, end uint64) (legacyNode, error) {
	if len(f.Children) != 1 {
		return nil, s.errorf(f, "list has %d child fields, want 1", len(f.Children))
	}
	if end >= p.Length { // the page holds rows+1 offsets
		return nil, s.errorf(f, "offsets of rows [%d, %d) past the page's %d", start, end, p.Length)
	}
	width := uint64(32)
	if f.Type.ID() == arrow.LARGE_LIST {
		width = 64
	}
	rng, _, err := s.byteRange(f, p.Pos, start, end+1, width)
	if err != nil {
		return nil, err
	}
	node := &legacyListNode{dt: f.Type, n: int(end - start)}
	batch := s.batch
	s.read(rng, func(b []byte) error {
		offsets, first, last, err := relativeOffsets(b, int(width/8))
		if err != nil {
			return s.r.Corruptf("field %q (id %d) batch %d: %v", f.Name, f.ID, batch, err)
		}
		node.offsets = offsets
		// The items are planned now, as part of the next round, in the
		// same batch as the list.
		saved := s.batch
		s.batch = batch
		defer func() { s.batch = saved }()
		node.items, err = s.node(f.Children[0], first, last)
		return err
	})
	return node, nil
}

// relativeOffsets turns stored list offsets (little-endian, width bytes each)
// into offsets starting at 0, and returns the stored first and last.
func relativeOffsets(b []byte, width int) (rel []byte, first, last uint64, err error) {
	n := len(b) / width
	read := func(i int) int64 {
		if width == 4 {
			return int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	base := read(0)
	if base < 0 {
		return nil, 0, 0, fmt.Errorf("list offsets start at %d", base)
	}
	rel = make([]byte, len(b))
	prev := base
	for i := 0; i < n; i++ {
		o := read(i)
		if o < prev {
			return nil, 0, 0, fmt.Errorf("list offsets decrease (%d after %d)", o, prev)
		}
		prev = o
		if width == 4 {
			binary.LittleEndian.PutUint32(rel[4*i:], uint32(o-base))
		} else {
			binary.LittleEndian.PutUint64(rel[8*i:], uint64(o-base))
		}
	}
	return rel, uint64(base), uint64(prev), nil
}

type legacyNullNode struct {
	dt arrow.DataType
	n  int
}

func (nn *legacyNullNode) build(mem memory.Allocator) (arrow.Array, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return arrays.NullArray(mem, nn.dt, nn.n), nil
}

type legacyPlainNode struct {
	dt        arrow.DataType
	n         int
	bitOffset int
	buf       []byte
}

func (pn *legacyPlainNode) build(memory.Allocator) (arrow.Array, error) {
	if pn.buf == nil {
		pn.buf = []byte{} // a zero-byte read; Arrow wants a values buffer
	}
	return plainArray(pn.dt, pn.n, pn.buf, pn.bitOffset)
}

// plainArray wraps n values of a fixed-stride type stored back to back in
// buf, the first one bitOffset bits into buf (booleans only).
func plainArray(dt arrow.DataType, n int, buf []byte, bitOffset int) (arrow.Array, error) {
	switch t := dt.(type) {
	case *arrow.FixedSizeListType:
		items, err := plainArray(t.Elem(), n*int(t.Len()), buf, bitOffset)
		if err != nil {
			return nil, err
		}
		defer items.Release()
		return arrays.FixedSizeListArray(t, n, items, nil), nil
	case *arrow.BooleanType:
		if bitOffset != 0 {
			shifted := make([]byte, bitutil.BytesForBits(int64(n)))
			bitutil.CopyBitmap(buf, bitOffset, n, shifted, 0)
			buf = shifted
		}
	}
	return arrays.FixedWidthArray(dt, n, buf, nil)
}

type legacyBinaryNode struct {
	s               *legacyScan
	f               *schema.Field
	batch           int
	n               int
	positions, data []byte
}

// build makes the array; a zero-length value is null when the field is
// nullable, as Lance reads it.
func (bn *legacyBinaryNode) build(memory.Allocator) (arrow.Array, error) {
	dt := bn.f.Type
	large, _ := arrays.BinaryType(dt)
	offsets := arrays.NewOffsetWriter(large, bn.n)
	validity := arrays.NullBitmap{N: bn.n}
	first := binary.LittleEndian.Uint64(bn.positions)
	prev := first
	for i := range bn.n {
		pos := binary.LittleEndian.Uint64(bn.positions[8*(i+1):])
		offsets.Add(pos - first)
		if pos == prev && bn.f.Nullable {
			validity.SetNull(i)
		}
		prev = pos
	}
	if dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING {
		// Lance validates UTF-8 when it builds the array.
		if err := checkUTF8Values(bn.positions, bn.data, bn.n); err != nil {
			return nil, bn.s.r.Corruptf("field %q (id %d) batch %d: %v", bn.f.Name, bn.f.ID, bn.batch, err)
		}
	}
	return arrays.VarWidthArray(dt, bn.n, offsets.Buf, bn.data, validity.Finish())
}

// checkUTF8Values reports the first of n values that is not valid UTF-8.
// The common case costs one pass: the bytes as a whole are valid and no
// value starts with a continuation byte, so no boundary splits a rune and
// every value is valid on its own.
func checkUTF8Values(positions, data []byte, n int) error {
	first := binary.LittleEndian.Uint64(positions)
	value := func(i int) []byte {
		a := binary.LittleEndian.Uint64(positions[8*i:]) - first
		b := binary.LittleEndian.Uint64(positions[8*i+8:]) - first
		return data[a:b]
	}
	if utf8.Valid(data) {
		splits := false
		for i := 0; i < n && !splits; i++ {
			v := value(i)
			splits = len(v) > 0 && !utf8.RuneStart(v[0])
		}
		if !splits {
			return nil
		}
	}
	for i := 0; i < n; i++ {
		if !utf8.Valid(value(i)) {
			return fmt.Errorf("value %d is not valid UTF-8", i)
		}
	}
	return nil
}

type legacyListNode struct {
	dt      arrow.DataType
	n       int
	offsets []byte
	items   legacyNode
}

func (ln *legacyListNode) build(mem memory.Allocator) (arrow.Array, error) {
	items, err := ln.items.build(mem)
	if err != nil {
		return nil, err
	}
	defer items.Release()
	return arrays.ListArray(ln.dt, ln.n, ln.offsets, items, nil), nil
}

type legacyStructNode struct {
	dt       *arrow.StructType
	n        int
	children []legacyNode
}

func (sn *legacyStructNode) build(mem memory.Allocator) (arrow.Array, error) {
	members := make([]arrow.Array, 0, len(sn.children))
	defer func() { fileio.ReleaseAll(members) }()
	for _, c := range sn.children {
		m, err := c.build(mem)
		if err != nil {
			return nil, err
		}
		members = append(members, m)
	}
	return arrays.StructArray(sn.dt, sn.n, members, nil), nil
}

type legacyDictNode struct {
	s       *legacyScan
	f       *schema.Field
	batch   int
	dt      *arrow.DictionaryType
	indices legacyNode
	dict    arrow.Array
}

// build checks every index against the dictionary (Lance refuses an index
// out of range) and wraps indices and values.
func (dn *legacyDictNode) build(mem memory.Allocator) (arrow.Array, error) {
	idx, err := dn.indices.build(mem)
	if err != nil {
		return nil, err
	}
	defer idx.Release()
	size := int64(dn.dict.Len())
	raw := idx.Data().Buffers()[1].Bytes()
	width := dn.dt.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	signed := arrow.IsSignedInteger(dn.dt.IndexType.ID())
	for i := 0; i < idx.Len(); i++ {
		var v int64
		switch width {
		case 1:
			v = int64(raw[i])
			if signed {
				v = int64(int8(raw[i]))
			}
		case 2:
			u := binary.LittleEndian.Uint16(raw[2*i:])
			v = int64(u)
			if signed {
				v = int64(int16(u))
			}
		case 4:
			u := binary.LittleEndian.Uint32(raw[4*i:])
			v = int64(u)
			if signed {
				v = int64(int32(u))
			}
		default:
			u := binary.LittleEndian.Uint64(raw[8*i:])
			v = int64(u)
			if !signed && u > math.MaxInt64 {
				v = -1
			}
		}
		if v < 0 || v >= size {
			return nil, dn.s.r.Corruptf("field %q (id %d) batch %d: dictionary index %d of row %d outside the %d values",
				dn.f.Name, dn.f.ID, dn.batch, v, i, size)
		}
	}
	return array.NewDictionaryArray(dn.dt, idx, dn.dict), nil
}
