package structural

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
)

// Shredding: Arrow arrays → per-leaf items (docs/spec/lance-format.md §8.2, in reverse).
//
// The walk goes top-down through a field's arrays carrying a stream of
// entries, one per item seen so far: the slot of the current array the
// entry stands for (-1 for an item without a slot: a null or empty list, or
// a list hidden under a null), the list that starts at the entry (as the
// ordinal of that list layer counted from the top, 0 if none; the outermost
// list that starts there wins) and a null key. The null key names the
// outermost layer at which the entry is null or empty: 2j+1 for a null at
// layer j (top-down, the top-level field is layer 0), 2j+2 for an empty
// list at list layer j, 0 when the entry is valid all the way down.
// Structs pass the stream to each member, marking their nulls; lists expand
// each valid entry into one per child; a leaf marks its own nulls and keeps
// the result. List ordinals and null keys do not depend on the leaf, so one
// stream serves every leaf below a node; each leaf turns ordinals into its
// own repetition levels (outermost list = its number of lists).
//
// Entries with a slot are exactly the visible items: a null struct hides
// only the lists below it, and those become slot-less entries.

// leafPiece is what one batch contributes to one leaf: whole rows.
type leafPiece struct {
	rows  int
	items int
	rep   []uint16 // repetition levels; nil without list layers
	key   []uint16 // null keys; nil when every item is valid
	// src holds the visible values at the slots in ranges, in order. The
	// piece owns one reference.
	Src    arrow.Array
	Ranges []valueRange
	values int
	bytes  int // estimated encoded size
}

type valueRange struct{ Start, End int }

func (p *leafPiece) release() {
	if p.Src != nil {
		p.Src.Release()
		p.Src = nil
	}
}

// keyLayer returns the layer a non-zero null key names and whether it marks
// an empty list.
func keyLayer(k uint16) (layer int, empty bool) {
	return int(k-1) / 2, (k-1)%2 == 1
}

// visibleKey reports whether an item with null key k has a value slot.
func (s *leafSpec) visibleKey(k uint16) bool {
	if k == 0 {
		return true
	}
	j, _ := keyLayer(k)
	return j > s.innerList
}

// split cuts p before row r (0 < r < p.rows) into two pieces sharing src.
func (p *leafPiece) split(spec *leafSpec, r int) (*leafPiece, *leafPiece) {
	item := r
	if p.rep != nil {
		seen := 0
		for i, lv := range p.rep {
			if lv == spec.maxRep {
				if seen == r {
					item = i
					break
				}
				seen++
			}
		}
	}
	values := item
	if p.key != nil {
		values = 0
		for _, k := range p.key[:item] {
			if spec.visibleKey(k) {
				values++
			}
		}
	}
	head := &leafPiece{rows: r, items: item, Src: p.Src, values: values}
	tail := &leafPiece{rows: p.rows - r, items: p.items - item, Src: p.Src, values: p.values - values}
	p.Src.Retain()
	if p.rep != nil {
		head.rep, tail.rep = p.rep[:item:item], p.rep[item:]
	}
	if p.key != nil {
		head.key, tail.key = p.key[:item:item], p.key[item:]
	}
	left := values
	for i, rg := range p.Ranges {
		n := rg.End - rg.Start
		if left >= n {
			left -= n
			continue
		}
		head.Ranges = append(head.Ranges, p.Ranges[:i]...)
		if left > 0 {
			head.Ranges = append(head.Ranges, valueRange{rg.Start, rg.Start + left})
		}
		tail.Ranges = append(tail.Ranges, valueRange{rg.Start + left, rg.End})
		tail.Ranges = append(tail.Ranges, p.Ranges[i+1:]...)
		left = -1
		break
	}
	if left >= 0 {
		head.Ranges = p.Ranges
	}
	// Split the estimate by rows.
	head.bytes = int(int64(p.bytes) * int64(r) / int64(max(p.rows, 1)))
	tail.bytes = p.bytes - head.bytes
	p.Src = nil
	return head, tail
}

// stream is the entries of one node of the walk.
//
// Slots are kept as runs, not one int per entry: below a list layer the
// entries of consecutive valid lists are consecutive child slots, so a
// column of n list items costs a few runs rather than 8n bytes (issue #17:
// that table was the largest allocation of an HNSW index's write). Runs
// hold only the entries with slots; which entries have none follows from
// their null keys (slotless), so nulls and empty lists do not break runs.
type stream struct {
	n    int
	runs []slotRun // the slots of the entries that have one, in order; nil: entry i is slot i
	ord  []uint16  // list ordinal starting at each entry; nil: all 0
	key  []uint16  // null key per entry; nil: all 0
	// list is the layer of the innermost list above the node, -1 for none.
	// An entry null or empty at that layer or further out has no slot:
	// only lists turn entries into slot-less ones, and the nulls marked
	// below them (structs, leaves) are at deeper layers and keep theirs.
	list int
	// ownOrd: no other stream shares ord, so the one leaf below may turn
	// it into its repetition levels in place.
	ownOrd bool
}

// slotless reports whether entry i has no slot.
func (s *stream) slotless(i int) bool {
	if s.key == nil || s.key[i] == 0 {
		return false
	}
	j, _ := keyLayer(s.key[i])
	return j <= s.list
}

// slotRun is n consecutive slots from start.
type slotRun struct{ start, n int }

// slotCursor yields a stream's slots in order.
type slotCursor struct {
	runs []slotRun // nil: slots 0, 1, …
	r, j int
}

func (s *stream) cursor() slotCursor { return slotCursor{runs: s.runs} }

// next returns the next slot; the caller calls it once per entry with a
// slot, so the runs cannot run out.
func (c *slotCursor) next() int {
	if c.runs == nil {
		c.j++
		return c.j - 1
	}
	for c.j == c.runs[c.r].n {
		c.r, c.j = c.r+1, 0
	}
	c.j++
	return c.runs[c.r].start + c.j - 1
}

// appendRun appends n slots from start, merging with the last run when
// they continue it.
func appendRun(runs []slotRun, start, n int) []slotRun {
	if k := len(runs) - 1; k >= 0 && runs[k].start+runs[k].n == start {
		runs[k].n += n
		return runs
	}
	return append(runs, slotRun{start, n})
}

// appendZeros appends n zeros to s.
func appendZeros(s []uint16, n int) []uint16 {
	s = slices.Grow(s, n)
	at := len(s)
	s = s[:at+n]
	clear(s[at:])
	return s
}

// shredder walks one top-level array.
type shredder struct {
	fw     *structuralFieldWriter
	next   int // index of the next leaf
	pieces []*leafPiece
}

// shredField shreds one batch of a field into one piece per leaf.
func shredField(fw *structuralFieldWriter, arr arrow.Array) (pieces []*leafPiece, err error) {
	sh := &shredder{fw: fw}
	defer func() {
		if r := recover(); r != nil {
			// Arrow accessors panic on arrays whose buffers do not match
			// their type; report it instead of taking the process down.
			releasePieces(sh.pieces)
			pieces, err = nil, fmt.Errorf("malformed %s array: %v: %w", arr.DataType(), r, lancer.ErrInvalidArgument)
		}
	}()
	if err := sh.node(fw.field, arr, 0, 0, stream{n: arr.Len(), list: -1}); err != nil {
		releasePieces(sh.pieces)
		return nil, err
	}
	if len(sh.pieces) != len(fw.leaves) {
		releasePieces(sh.pieces)
		return nil, fmt.Errorf("shredded %d leaves, the field has %d: %w", len(sh.pieces), len(fw.leaves), lancer.ErrInvalidArgument)
	}
	return sh.pieces, nil
}

// node shreds arr, the array of field f at layer depth below lists list
// layers, whose entries are s.
func (sh *shredder) node(f *schema.Field, arr arrow.Array, depth, lists int, s stream) error {
	if f.StoredAsLeaf() {
		return sh.leaf(arr, depth, s)
	}
	switch a := arr.(type) {
	case *array.Struct:
		if len(f.Children) != a.NumField() {
			return fmt.Errorf("struct %q has %d members, the schema %d: %w", f.Name, a.NumField(), len(f.Children), lancer.ErrInvalidArgument)
		}
		if a.NullN() > 0 {
			s = markNulls(s, depth, a.IsNull)
		}
		if len(f.Children) > 1 {
			s.ownOrd = false // every member sees the same ordinals
		}
		for i, c := range f.Children {
			if err := sh.node(c, a.Field(i), depth+1, lists, s); err != nil {
				return err
			}
		}
		return nil
	case *array.List:
		out, err := expandList(s, depth, uint16(lists+1), a.IsNull, a.ValueOffsets, a.Len(), a.ListValues().Len())
		if err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
		return sh.node(f.Children[0], a.ListValues(), depth+1, lists+1, out)
	case *array.LargeList:
		out, err := expandList(s, depth, uint16(lists+1), a.IsNull, a.ValueOffsets, a.Len(), a.ListValues().Len())
		if err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
		return sh.node(f.Children[0], a.ListValues(), depth+1, lists+1, out)
	case *array.Map:
		out, err := expandList(s, depth, uint16(lists+1), a.IsNull, a.ValueOffsets, a.Len(), a.ListValues().Len())
		if err != nil {
			return fmt.Errorf("field %q: %w", f.Name, err)
		}
		return sh.node(f.Children[0], a.ListValues(), depth+1, lists+1, out)
	}
	return fmt.Errorf("field %q: array of type %s: %w", f.Name, arr.DataType(), lancer.ErrInvalidArgument)
}

// markNulls returns s with the entries whose slot isNull reports null (and
// that are not null further out) marked null at layer depth.
func markNulls(s stream, depth int, isNull func(int) bool) stream {
	key := make([]uint16, s.n)
	if s.key != nil {
		copy(key, s.key)
	}
	k := uint16(2*depth + 1)
	cur := s.cursor()
	for i := range s.n {
		if s.slotless(i) {
			continue
		}
		if slot := cur.next(); key[i] == 0 && isNull(slot) {
			key[i] = k
		}
	}
	s.key = key
	return s
}

// expandList expands the entries of a list layer at depth (the ord-th
// list from the top) into entries of its children, of which there are
// children: offsets outside them are an error, not entries to make.
func expandList(s stream, depth int, ord uint16, isNull func(int) bool, offsets func(int) (int64, int64), length, children int) (stream, error) {
	// runs is never nil below a list: nil means every entry is its slot.
	out := stream{runs: []slotRun{}, list: depth, ownOrd: true}
	capHint := s.n
	if s.runs == nil && s.key == nil && s.n == length && length > 0 {
		// Every row a slot: the children are the offsets' span.
		first, _ := offsets(0)
		_, last := offsets(length - 1)
		capHint = max(int(last-first), 0) + s.n
	}
	out.ord = make([]uint16, 0, capHint)
	// The null keys are allocated at the first null or empty entry: most
	// list columns have none.
	var key []uint16
	nullKey, emptyKey := uint16(2*depth+1), uint16(2*depth+2)
	cur := s.cursor()
	for i := range s.n {
		first := ord
		if s.ord != nil && s.ord[i] != 0 {
			first = s.ord[i]
		}
		var k uint16
		if s.key != nil {
			k = s.key[i]
		}
		slot := -1
		if !s.slotless(i) {
			slot = cur.next()
		}
		switch {
		case slot < 0 || k != 0:
		case isNull(slot):
			k = nullKey
		default:
			start, end := offsets(slot)
			if start == end {
				k = emptyKey
				break
			}
			if start < 0 || end < start || end > int64(children) {
				return stream{}, fmt.Errorf("list %d spans values %d to %d of %d: %w", slot, start, end, children, lancer.ErrInvalidArgument)
			}
			n := int(end - start)
			out.runs = appendRun(out.runs, int(start), n)
			out.ord = append(out.ord, first)
			out.ord = appendZeros(out.ord, n-1)
			if key != nil {
				key = appendZeros(key, n)
			}
			continue
		}
		if key == nil {
			key = appendZeros(make([]uint16, 0, capHint), len(out.ord))
		}
		out.ord = append(out.ord, first)
		key = append(key, k)
	}
	out.n = len(out.ord)
	out.key = key
	return out, nil
}

// leaf finishes the piece of the next leaf from its array and entries.
func (sh *shredder) leaf(arr arrow.Array, depth int, s stream) error {
	if sh.next >= len(sh.fw.leaves) {
		return fmt.Errorf("more leaves than columns: %w", lancer.ErrInvalidArgument)
	}
	spec := sh.fw.leaves[sh.next].spec
	sh.next++
	if spec.kind != kindEmptyStruct && !arrow.TypeEqual(arr.DataType(), spec.dt) && !sameLayout(arr.DataType(), spec.dt) {
		return fmt.Errorf("field %q: array of type %s, the schema says %s: %w", spec.field.Name, arr.DataType(), spec.dt, lancer.ErrInvalidArgument)
	}
	if isNull := leafNulls(spec, arr); isNull != nil {
		s = markNulls(s, depth, isNull)
	}
	p := &leafPiece{items: s.n, key: s.key, Src: arr}
	arr.Retain()
	if s.ord != nil {
		// Levels from ordinals, in place when no other leaf reads them.
		p.rep = s.ord
		if !s.ownOrd {
			p.rep = make([]uint16, s.n)
		}
		for i, o := range s.ord {
			if o != 0 {
				p.rep[i] = spec.maxRep + 1 - o
			}
		}
	}
	if p.key != nil && !anyNonZero(p.key) {
		p.key = nil
	}
	// Rows: entries that start a row.
	if spec.maxRep == 0 {
		p.rows = s.n
	} else {
		for _, lv := range p.rep {
			if lv == spec.maxRep {
				p.rows++
			}
		}
	}
	if s.runs == nil {
		p.Ranges = []valueRange{{0, s.n}}
		p.values = s.n
	} else {
		// Slot-less entries hold no value: the ranges join across them.
		for _, r := range s.runs {
			p.values += r.n
			if n := len(p.Ranges); n > 0 && p.Ranges[n-1].End == r.start {
				p.Ranges[n-1].End += r.n
			} else {
				p.Ranges = append(p.Ranges, valueRange{r.start, r.start + r.n})
			}
		}
	}
	p.bytes = estimateBytes(spec, p)
	sh.pieces = append(sh.pieces, p)
	return nil
}

func anyNonZero(s []uint16) bool {
	for _, v := range s {
		if v != 0 {
			return true
		}
	}
	return false
}

// leafNulls returns a leaf array's null test, or nil when it has no nulls.
func leafNulls(spec *leafSpec, arr arrow.Array) func(int) bool {
	switch spec.kind {
	case kindEmptyStruct:
		return nil
	case kindNull:
		return func(int) bool { return true }
	case kindBlobV2:
		// A blob with neither bytes nor a URI is a null blob.
		st, ok := arr.(*array.Struct)
		if !ok || st.NumField() != 2 {
			break
		}
		data, uri := st.Field(0), st.Field(1)
		if arr.NullN() == 0 && data.NullN() == 0 {
			return nil
		}
		return func(i int) bool { return st.IsNull(i) || (data.IsNull(i) && uri.IsNull(i)) }
	case kindDictionary:
		d, ok := arr.(*array.Dictionary)
		if !ok {
			break
		}
		dict := d.Dictionary()
		if dict.NullN() == 0 {
			break
		}
		// A valid index pointing at a null dictionary value is a null.
		return func(i int) bool {
			return d.IsNull(i) || dict.IsNull(d.GetValueIndex(i))
		}
	}
	if arr.NullN() == 0 {
		return nil
	}
	return arr.IsNull
}

// estimateBytes estimates the encoded size of a piece, to size pages.
func estimateBytes(spec *leafSpec, p *leafPiece) int {
	n := 0
	if p.rep != nil {
		n += 2 * p.items
	}
	if p.key != nil {
		n += 2 * p.items
	}
	switch spec.kind {
	case kindFixed:
		n += p.values * fixedBits(spec.dt) / 8
	case kindVariable, kindBlobLegacy:
		n += 4 * p.values
		for _, rg := range p.Ranges {
			n += varSpan(p.Src, rg)
		}
	case kindFSL:
		dims, item, _ := fslShape(spec.dt)
		row := fixedBits(item)
		for _, d := range dims {
			row *= d
		}
		n += p.values * row / 8
	case kindDictionary, kindPacked:
		n += p.values * 8
	case kindBlobV2:
		n += 32 * p.values
		if s, ok := p.Src.(*array.Struct); ok {
			for _, rg := range p.Ranges {
				n += varSpan(s.Field(0), rg)
			}
		}
	}
	return n
}

// varSpan returns the value bytes of slots rg of a variable-width array.
func varSpan(arr arrow.Array, rg valueRange) int {
	if rg.End <= rg.Start {
		return 0
	}
	offs := varOffsets(arr)
	if offs == nil {
		return 0
	}
	return int(offs(rg.End) - offs(rg.Start))
}

// varOffsets returns the offset accessor of a utf8/binary array (large or
// not): offs(i) is where logical value i starts, offs(len) the end.
func varOffsets(arr arrow.Array) func(i int) int64 {
	data := arr.Data()
	bufs := data.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return nil
	}
	raw := bufs[1].Bytes()
	off := data.Offset()
	switch arr.DataType().ID() {
	case arrow.STRING, arrow.BINARY:
		return func(i int) int64 { return int64(int32(binary.LittleEndian.Uint32(raw[4*(off+i):]))) }
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return func(i int) int64 { return int64(binary.LittleEndian.Uint64(raw[8*(off+i):])) }
	}
	return nil
}

// varData returns the value bytes buffer of a utf8/binary array.
func varData(arr arrow.Array) []byte {
	bufs := arr.Data().Buffers()
	if len(bufs) < 3 || bufs[2] == nil {
		return nil
	}
	return bufs[2].Bytes()
}
