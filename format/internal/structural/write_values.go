package structural

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
)

// Gathering a page's visible values out of the Arrow arrays of its pieces
// into the plain shapes the encoders take. Values of null items are zero
// (fixed-width) or empty (variable-width): their content is arbitrary, and
// zeros compress best.

// fixedVals is n fixed-width values: bits 1 is an LSB-first bitmap from bit
// 0, otherwise bits/8 bytes per value back to back.
type fixedVals struct {
	bits int
	n    int
	data []byte
}

// varVals is n variable-width values: value i is data[off[i]:off[i+1]],
// off[0] == 0. large tells whether the Arrow type has 64-bit offsets.
type varVals struct {
	large bool
	Off   []uint64
	Data  []byte
}

func (v *varVals) Len() int           { return len(v.Off) - 1 }
func (v *varVals) Value(i int) []byte { return v.Data[v.Off[i]:v.Off[i+1]] }

// maxLen returns the longest value's length.
func (v *varVals) maxLen() int {
	m := uint64(0)
	for i := 1; i < len(v.Off); i++ {
		m = max(m, v.Off[i]-v.Off[i-1])
	}
	return int(m)
}

// fslVals is n fixed-size lists (dims outermost first) of fixed-width
// items; validity[k], when not nil, is the bitmap of the children of list
// layer k.
type fslVals struct {
	n        int
	dims     []int
	validity [][]byte
	items    fixedVals
}

// rowBits is the bits of one list's items (without validity).
func (f *fslVals) rowBits() int {
	b := f.items.bits
	for _, d := range f.dims {
		b *= d
	}
	return b
}

// packedVals is n structs stored row-major, one child per member, each a
// *fixedVals or *varVals.
type packedVals struct {
	n        int
	children []any
}

// valueNulls returns, for the visible values of a page in order, which are
// null (their item's def level is not 0), or nil when none is.
func valueNulls(spec *leafSpec, pieces []*leafPiece) []bool {
	var out []bool
	at := 0
	for _, p := range pieces {
		if p.key == nil {
			at += p.values
			continue
		}
		for _, k := range p.key {
			if !spec.visibleKey(k) {
				continue
			}
			if k != 0 {
				if out == nil {
					total := 0
					for _, q := range pieces {
						total += q.values
					}
					out = make([]bool, total)
				}
				out[at] = true
			}
			at++
		}
	}
	return out
}

// gatherFixed copies the values at ranges of arr (bits per value) to out.
func gatherFixed(out *fixedVals, arr arrow.Array, ranges []valueRange) error {
	buf, off := arrays.FixedBuffer(arr)
	if out.bits == 1 {
		for _, rg := range ranges {
			n := rg.End - rg.Start
			if buf == nil {
				out.data = appendZeroBits(out.data, out.n, n)
			} else {
				if (off+rg.End+7)/8 > len(buf) {
					return fmt.Errorf("bool array buffer of %d bytes for slots up to %d: %w", len(buf), off+rg.End, lancer.ErrInvalidArgument)
				}
				out.data = appendBits(out.data, out.n, buf, off+rg.Start, n)
			}
			out.n += n
		}
		return nil
	}
	w := out.bits / 8
	for _, rg := range ranges {
		n := rg.End - rg.Start
		if buf == nil {
			out.data = append(out.data, make([]byte, n*w)...)
		} else {
			if (off+rg.End)*w > len(buf) {
				return fmt.Errorf("%s array buffer of %d bytes for slots up to %d: %w", arr.DataType(), len(buf), off+rg.End, lancer.ErrInvalidArgument)
			}
			out.data = append(out.data, buf[(off+rg.Start)*w:(off+rg.End)*w]...)
		}
		out.n += n
	}
	return nil
}

// appendBits appends bits [srcBit, srcBit+n) of src to dst, a bitmap of
// dstBits bits whose bits past dstBits are zero.
func appendBits(dst []byte, dstBits int, src []byte, srcBit, n int) []byte {
	if srcBit%8 == 0 {
		start := srcBit / 8
		return appendBitmap(dst, dstBits, src[start:start+bytesForBits(n)], n)
	}
	dst = appendZeroBits(dst, dstBits, n)
	for i := range n {
		if bitSet(src, srcBit+i) {
			b := dstBits + i
			dst[b/8] |= 1 << (b % 8)
		}
	}
	return dst
}

// appendZeroBits grows a bitmap of dstBits bits by n zero bits.
func appendZeroBits(dst []byte, dstBits, n int) []byte {
	if need := bytesForBits(dstBits + n); need > len(dst) {
		dst = append(dst, make([]byte, need-len(dst))...)
	}
	return dst
}

// zeroNulls clears the values that nulls marks.
func (f *fixedVals) zeroNulls(nulls []bool) {
	if nulls == nil {
		return
	}
	if f.bits == 1 {
		for i, isNull := range nulls {
			if isNull {
				f.data[i/8] &^= 1 << (i % 8)
			}
		}
		return
	}
	w := f.bits / 8
	for i, isNull := range nulls {
		if isNull {
			clear(f.data[i*w : (i+1)*w])
		}
	}
}

// gatherVar appends the values at ranges of arr to out; values that nulls
// marks (indexed from first) are stored empty.
func gatherVar(out *varVals, arr arrow.Array, ranges []valueRange, nulls []bool, first int) error {
	offs := varOffsets(arr)
	data := varData(arr)
	if offs == nil {
		// No offsets buffer: every value is empty.
		for _, rg := range ranges {
			for range rg.End - rg.Start {
				out.Off = append(out.Off, uint64(len(out.Data)))
			}
		}
		return nil
	}
	at := first
	for _, rg := range ranges {
		if nulls == nil {
			start, end := offs(rg.Start), offs(rg.End)
			if start < 0 || end < start || end > int64(len(data)) {
				return fmt.Errorf("%s array offsets [%d, %d) outside %d value bytes: %w", arr.DataType(), start, end, len(data), lancer.ErrInvalidArgument)
			}
			base := uint64(len(out.Data)) - uint64(start)
			out.Data = append(out.Data, data[start:end]...)
			for i := rg.Start + 1; i <= rg.End; i++ {
				out.Off = append(out.Off, base+uint64(offs(i)))
			}
			at += rg.End - rg.Start
			continue
		}
		for i := rg.Start; i < rg.End; i++ {
			if !nulls[at] {
				start, end := offs(i), offs(i+1)
				if start < 0 || end < start || end > int64(len(data)) {
					return fmt.Errorf("%s array offsets [%d, %d) outside %d value bytes: %w", arr.DataType(), start, end, len(data), lancer.ErrInvalidArgument)
				}
				out.Data = append(out.Data, data[start:end]...)
			}
			out.Off = append(out.Off, uint64(len(out.Data)))
			at++
		}
	}
	return nil
}

// reserveFixed sizes out for the values at ranges of every layer given,
// so that gathering a page allocates its buffer once: appended piece by
// piece it grew by doubling, twice the page's bytes allocated and, at the
// last growth, 1.5 times held (issue #17).
func reserveFixed(out *fixedVals, ranges ...[]valueRange) {
	n := 0
	for _, rs := range ranges {
		for _, rg := range rs {
			n += max(rg.End-rg.Start, 0)
		}
	}
	size := n * (out.bits / 8)
	if out.bits == 1 {
		size = bytesForBits(n)
	}
	out.data = slices.Grow(out.data, size)
}

// gatherFixedPage gathers a page's fixed-width values.
func gatherFixedPage(bits int, pieces []*leafPiece, nulls []bool) (*fixedVals, error) {
	out := &fixedVals{bits: bits}
	rs := make([][]valueRange, len(pieces))
	for i, p := range pieces {
		rs[i] = p.Ranges
	}
	reserveFixed(out, rs...)
	for _, p := range pieces {
		if err := gatherFixed(out, p.Src, p.Ranges); err != nil {
			return nil, err
		}
	}
	out.zeroNulls(nulls)
	return out, nil
}

// gatherVarPage gathers a page's variable-width values. When they are
// one run of an Arrow buffer with no nulls the values are that buffer, not
// a copy: the page's pieces hold it until the page is written.
func gatherVarPage(large bool, pieces []*leafPiece, nulls []bool) (*varVals, error) {
	if out := borrowVar(large, pieces, nulls); out != nil {
		return out, nil
	}
	values, bytes := 0, int64(0)
	for _, p := range pieces {
		offs, data := varOffsets(p.Src), varData(p.Src)
		for _, rg := range p.Ranges {
			values += rg.End - rg.Start
			if offs != nil {
				if start, end := offs(rg.Start), offs(rg.End); 0 <= start && start <= end && end <= int64(len(data)) {
					bytes += end - start
				}
			}
		}
	}
	out := &varVals{large: large, Off: make([]uint64, 1, values+1), Data: make([]byte, 0, bytes)}
	at := 0
	for _, p := range pieces {
		if err := gatherVar(out, p.Src, p.Ranges, nulls, at); err != nil {
			return nil, err
		}
		at += p.values
	}
	return out, nil
}

// borrowVar returns the values of a page of one piece whose values are
// not null and lie back to back in its Arrow buffer, with data aliasing
// that buffer; otherwise nil.
func borrowVar(large bool, pieces []*leafPiece, nulls []bool) *varVals {
	if len(pieces) != 1 || nulls != nil || len(pieces[0].Ranges) == 0 {
		return nil
	}
	p := pieces[0]
	offs, data := varOffsets(p.Src), varData(p.Src)
	if offs == nil {
		return nil
	}
	values := 0
	for i, rg := range p.Ranges {
		values += rg.End - rg.Start
		if i > 0 && offs(rg.Start) != offs(p.Ranges[i-1].End) {
			return nil
		}
	}
	start, end := offs(p.Ranges[0].Start), offs(p.Ranges[len(p.Ranges)-1].End)
	if start < 0 || end < start || end > int64(len(data)) {
		return nil // gatherVar reports it
	}
	out := &varVals{large: large, Off: make([]uint64, 1, values+1), Data: data[start:end:end]}
	for _, rg := range p.Ranges {
		prev := offs(rg.Start)
		for i := rg.Start + 1; i <= rg.End; i++ {
			o := offs(i)
			if o < prev || o > end {
				return nil
			}
			out.Off = append(out.Off, uint64(o-start))
			prev = o
		}
	}
	return out
}

// gatherFSLPage gathers a page's fixed-size lists. A list layer gets item
// validity only when some of the page's children at that layer are null.
func gatherFSLPage(dt arrow.DataType, pieces []*leafPiece) (*fslVals, error) {
	dims, item, err := fslShape(dt)
	if err != nil {
		return nil, err
	}
	out := &fslVals{dims: dims, validity: make([][]byte, len(dims)), items: fixedVals{bits: fixedBits(item)}}
	type layerSlots struct {
		arr    arrow.Array
		ranges []valueRange
	}
	layers := make([][]layerSlots, len(pieces))
	for pi, p := range pieces {
		out.n += p.values
		arr, ranges := p.Src, p.Ranges
		for k := range dims {
			l, ok := arr.(*array.FixedSizeList)
			if !ok {
				return nil, fmt.Errorf("fixed-size list layer %d is a %s array: %w", k, arr.DataType(), lancer.ErrInvalidArgument)
			}
			child := l.ListValues()
			var next []valueRange
			for _, rg := range ranges {
				if rg.End == rg.Start {
					continue
				}
				s, _ := l.ValueOffsets(rg.Start)
				_, e := l.ValueOffsets(rg.End - 1)
				if s < 0 || e > int64(child.Len()) {
					return nil, fmt.Errorf("fixed-size list children [%d, %d) outside %d: %w", s, e, child.Len(), lancer.ErrInvalidArgument)
				}
				next = append(next, valueRange{int(s), int(e)})
			}
			layers[pi] = append(layers[pi], layerSlots{child, next})
			arr, ranges = child, next
		}
	}
	for k := range dims {
		has := false
		for pi := range pieces {
			l := layers[pi][k]
			if l.arr.NullN() == 0 {
				continue
			}
			for _, rg := range l.ranges {
				for i := rg.Start; i < rg.End && !has; i++ {
					has = l.arr.IsNull(i)
				}
			}
		}
		if !has {
			continue
		}
		var bm []byte
		bits := 0
		for pi := range pieces {
			l := layers[pi][k]
			for _, rg := range l.ranges {
				bm = appendZeroBits(bm, bits, rg.End-rg.Start)
				for i := rg.Start; i < rg.End; i++ {
					if l.arr.IsValid(i) {
						bm[bits/8] |= 1 << (bits % 8)
					}
					bits++
				}
			}
		}
		out.validity[k] = bm
	}
	rs := make([][]valueRange, len(pieces))
	for pi := range pieces {
		rs[pi] = layers[pi][len(dims)-1].ranges
	}
	reserveFixed(&out.items, rs...)
	for pi := range pieces {
		last := layers[pi][len(dims)-1]
		if err := gatherFixed(&out.items, last.arr, last.ranges); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// gatherPackedPage gathers a packed struct page: each member's values.
func gatherPackedPage(st *arrow.StructType, pieces []*leafPiece, nulls []bool) (*packedVals, error) {
	out := &packedVals{}
	structs := make([]*array.Struct, len(pieces))
	for pi, p := range pieces {
		s, ok := p.Src.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("packed struct array of type %s: %w", p.Src.DataType(), lancer.ErrInvalidArgument)
		}
		structs[pi] = s
		out.n += p.values
		for m := range s.NumField() {
			if s.Field(m).NullN() == 0 {
				continue
			}
			for _, rg := range p.Ranges {
				for i := rg.Start; i < rg.End; i++ {
					if s.IsValid(i) && s.Field(m).IsNull(i) {
						return nil, fmt.Errorf("packed struct member %q is null in a valid struct; packed structs store no member validity: %w",
							st.Field(m).Name, lancer.ErrUnsupported)
					}
				}
			}
		}
	}
	for m, f := range st.Fields() {
		if bits := fixedBits(f.Type); bits > 0 {
			c := &fixedVals{bits: bits}
			for pi, p := range pieces {
				if err := gatherFixed(c, structs[pi].Field(m), p.Ranges); err != nil {
					return nil, err
				}
			}
			c.zeroNulls(nulls)
			out.children = append(out.children, c)
			continue
		}
		large, _ := arrays.BinaryType(f.Type)
		c := &varVals{large: large, Off: []uint64{0}}
		at := 0
		for pi, p := range pieces {
			if err := gatherVar(c, structs[pi].Field(m), p.Ranges, nulls, at); err != nil {
				return nil, err
			}
			at += p.values
		}
		out.children = append(out.children, c)
	}
	return out, nil
}
