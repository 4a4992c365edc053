package manifest

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// RowIDSequence is the decoded RowIdSequence of a fragment: the stable row id
// of each row, in row order, as a list of segments. It answers "id of row i"
// and "row of id x" without materializing the ids.
type RowIDSequence struct {
	segs []rowIDSegment
	// starts[i] is the row offset of segs[i]'s first row; starts[len(segs)]
	// is the total length.
	starts []uint64
}

// segmentKind is the kind of a U64Segment.
type segmentKind uint8

const (
	segRange       segmentKind = iota // every value of [start, end)
	segRangeHoles                     // [start, end) minus sorted holes
	segRangeBitmap                    // values of [start, end) whose bit is set
	segSortedArray                    // sorted values
	segArray                          // values in any order
)

// rowIDSegment is one decoded U64Segment.
type rowIDSegment struct {
	kind       segmentKind
	start, end uint64
	holes      u64Array // segRangeHoles
	bitmap     []byte   // segRangeBitmap: bit i (LSB first) set = start+i present
	// ranks[w] is the number of set bits of bitmap before 64-bit word w.
	ranks  []uint32
	values u64Array // segSortedArray, segArray
	n      uint64   // number of values
}

// u64Array is a decoded EncodedU64Array: values base + LE offsets of width
// bytes (2 or 4), or plain LE u64 values (width 8, base 0).
type u64Array struct {
	base  uint64
	width int
	data  []byte
}

func (a u64Array) len() int { return len(a.data) / a.width }

func (a u64Array) at(i int) uint64 {
	switch a.width {
	case 2:
		return a.base + uint64(binary.LittleEndian.Uint16(a.data[2*i:]))
	case 4:
		return a.base + uint64(binary.LittleEndian.Uint32(a.data[4*i:]))
	}
	return binary.LittleEndian.Uint64(a.data[8*i:])
}

// search returns the index of x in the sorted array and whether it is there.
func (a u64Array) search(x uint64) (int, bool) {
	i := sort.Search(a.len(), func(i int) bool { return a.at(i) >= x })
	return i, i < a.len() && a.at(i) == x
}

// sorted reports whether the values strictly increase.
func (a u64Array) sorted() bool {
	for i := 1; i < a.len(); i++ {
		if a.at(i) <= a.at(i-1) {
			return false
		}
	}
	return true
}

func decodeU64Array(p *tablepb.EncodedU64Array) (u64Array, error) {
	var a u64Array
	switch arr := p.GetArray().(type) {
	case *tablepb.EncodedU64Array_U16Array_:
		a = u64Array{base: arr.U16Array.GetBase(), width: 2, data: arr.U16Array.GetOffsets()}
	case *tablepb.EncodedU64Array_U32Array_:
		a = u64Array{base: arr.U32Array.GetBase(), width: 4, data: arr.U32Array.GetOffsets()}
	case *tablepb.EncodedU64Array_U64Array_:
		a = u64Array{width: 8, data: arr.U64Array.GetValues()}
	default:
		return u64Array{}, fmt.Errorf("encoded u64 array of no known kind")
	}
	if len(a.data)%a.width != 0 {
		return u64Array{}, fmt.Errorf("encoded u64 array of %d bytes is not a multiple of %d", len(a.data), a.width)
	}
	return a, nil
}

// DecodeRowIDSequence decodes a serialized RowIdSequence and checks that it
// holds exactly physicalRows ids.
func DecodeRowIDSequence(data []byte, physicalRows uint64) (*RowIDSequence, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("row id sequence: %s: %w", fmt.Sprintf(format, args...), lancer.ErrCorrupt)
	}
	var p tablepb.RowIdSequence
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, corrupt("%v", err)
	}
	seq := &RowIDSequence{
		segs:   make([]rowIDSegment, 0, len(p.GetSegments())),
		starts: make([]uint64, 0, len(p.GetSegments())+1),
	}
	var total uint64
	for i, ps := range p.GetSegments() {
		s, err := decodeSegment(ps)
		if err != nil {
			return nil, corrupt("segment %d: %v", i, err)
		}
		seq.starts = append(seq.starts, total)
		seq.segs = append(seq.segs, s)
		var carry uint64
		if total, carry = bits.Add64(total, s.n, 0); carry != 0 || total > physicalRows {
			return nil, corrupt("segments hold more than the fragment's %d rows", physicalRows)
		}
	}
	if total != physicalRows {
		return nil, corrupt("segments hold %d ids for %d rows", total, physicalRows)
	}
	seq.starts = append(seq.starts, total)
	return seq, nil
}

func decodeSegment(ps *tablepb.U64Segment) (rowIDSegment, error) {
	checkRange := func(start, end uint64) error {
		if end < start {
			return fmt.Errorf("range [%d, %d) ends before it starts", start, end)
		}
		return nil
	}
	switch seg := ps.GetSegment().(type) {
	case *tablepb.U64Segment_Range_:
		s := rowIDSegment{kind: segRange, start: seg.Range.GetStart(), end: seg.Range.GetEnd()}
		if err := checkRange(s.start, s.end); err != nil {
			return s, err
		}
		s.n = s.end - s.start
		return s, nil
	case *tablepb.U64Segment_RangeWithHoles_:
		r := seg.RangeWithHoles
		s := rowIDSegment{kind: segRangeHoles, start: r.GetStart(), end: r.GetEnd()}
		if err := checkRange(s.start, s.end); err != nil {
			return s, err
		}
		holes, err := decodeU64Array(r.GetHoles())
		if err != nil {
			return s, fmt.Errorf("holes: %v", err)
		}
		if !holes.sorted() {
			return s, fmt.Errorf("holes are not sorted and distinct")
		}
		if n := holes.len(); n > 0 && (holes.at(0) < s.start || holes.at(n-1) >= s.end) {
			return s, fmt.Errorf("holes outside the range [%d, %d)", s.start, s.end)
		}
		s.holes = holes
		s.n = s.end - s.start - uint64(holes.len())
		return s, nil
	case *tablepb.U64Segment_RangeWithBitmap_:
		r := seg.RangeWithBitmap
		s := rowIDSegment{kind: segRangeBitmap, start: r.GetStart(), end: r.GetEnd(), bitmap: r.GetBitmap()}
		if err := checkRange(s.start, s.end); err != nil {
			return s, err
		}
		if span := s.end - s.start; uint64(len(s.bitmap)) < span/8+min(span%8, 1) {
			return s, fmt.Errorf("bitmap of %d bytes cannot cover %d values", len(s.bitmap), span)
		}
		span := s.end - s.start
		words := (span + 63) / 64
		s.ranks = make([]uint32, words+1)
		for w := uint64(0); w < words; w++ {
			s.ranks[w+1] = s.ranks[w] + uint32(bits.OnesCount64(s.bitmapWord(w)))
		}
		s.n = uint64(s.ranks[words])
		return s, nil
	case *tablepb.U64Segment_SortedArray:
		values, err := decodeU64Array(seg.SortedArray)
		if err != nil {
			return rowIDSegment{}, err
		}
		if !values.sorted() {
			return rowIDSegment{}, fmt.Errorf("sorted array is not sorted")
		}
		return rowIDSegment{kind: segSortedArray, values: values, n: uint64(values.len())}, nil
	case *tablepb.U64Segment_Array:
		values, err := decodeU64Array(seg.Array)
		if err != nil {
			return rowIDSegment{}, err
		}
		return rowIDSegment{kind: segArray, values: values, n: uint64(values.len())}, nil
	}
	return rowIDSegment{}, fmt.Errorf("segment of no known kind")
}

// bitmapWord returns bits [64w, 64w+64) of a bitmap segment, LSB first,
// with the bits past the range cleared.
func (s *rowIDSegment) bitmapWord(w uint64) uint64 {
	var buf [8]byte
	copy(buf[:], s.bitmap[min(uint64(len(s.bitmap)), 8*w):])
	word := binary.LittleEndian.Uint64(buf[:])
	if span := s.end - s.start; 64*(w+1) > span {
		word &= (1 << (span - 64*w)) - 1
	}
	return word
}

// at returns the i-th value of the segment (i < s.n).
func (s *rowIDSegment) at(i uint64) uint64 {
	switch s.kind {
	case segRange:
		return s.start + i
	case segRangeHoles:
		// The i-th present value v satisfies v = start + i + (holes < v).
		v := s.start + i
		for {
			h, _ := s.holes.search(v + 1) // holes ≤ v
			next := s.start + i + uint64(h)
			if next == v {
				return v
			}
			v = next
		}
	case segRangeBitmap:
		// Find the word holding the i-th set bit, then the bit.
		w := sort.Search(len(s.ranks)-1, func(w int) bool { return uint64(s.ranks[w+1]) > i })
		word := s.bitmapWord(uint64(w))
		for r := i - uint64(s.ranks[w]); r > 0; r-- {
			word &= word - 1
		}
		return s.start + 64*uint64(w) + uint64(bits.TrailingZeros64(word))
	}
	return s.values.at(int(i))
}

// position returns the index of value x in the segment, if present.
func (s *rowIDSegment) position(x uint64) (uint64, bool) {
	switch s.kind {
	case segRange:
		if x >= s.start && x < s.end {
			return x - s.start, true
		}
	case segRangeHoles:
		if x >= s.start && x < s.end {
			h, isHole := s.holes.search(x)
			if !isHole {
				return x - s.start - uint64(h), true
			}
		}
	case segRangeBitmap:
		if x >= s.start && x < s.end {
			off := x - s.start
			w := off / 64
			word := s.bitmapWord(w)
			if word>>(off%64)&1 == 1 {
				below := word & (1<<(off%64) - 1)
				return uint64(s.ranks[w]) + uint64(bits.OnesCount64(below)), true
			}
		}
	case segSortedArray:
		if i, ok := s.values.search(x); ok {
			return uint64(i), true
		}
	case segArray:
		for i := 0; i < s.values.len(); i++ {
			if s.values.at(i) == x {
				return uint64(i), true
			}
		}
	}
	return 0, false
}

// Len returns the number of row ids.
func (q *RowIDSequence) Len() uint64 { return q.starts[len(q.starts)-1] }

// At returns the row id of row offset i (i < Len()).
func (q *RowIDSequence) At(i uint64) uint64 {
	k := sort.Search(len(q.segs), func(k int) bool { return q.starts[k+1] > i })
	return q.segs[k].at(i - q.starts[k])
}

// Offsets returns every row offset whose id is x, in ascending order. Lance
// never repeats an id within a fragment, but a fragment is the unit that
// says so, not this decoder.
func (q *RowIDSequence) Offsets(x uint64) []uint64 {
	var out []uint64
	for k := range q.segs {
		if i, ok := q.segs[k].position(x); ok {
			out = append(out, q.starts[k]+i)
		}
	}
	return out
}
