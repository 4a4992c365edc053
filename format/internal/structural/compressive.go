package structural

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Decoded values between the 2.1+ compressive encodings (docs/spec/lance-format.md §9) and Arrow.
//
// Every compressive encoding turns buffers into one of four shapes:
// fixed-width values (an LSB-first bitmap for bools), variable-width values,
// fixed-size lists of fixed-width items (with optional item validity), and
// structs stored row-major. Page decoders accumulate a page's values chunk by
// chunk in a valueBlock of that shape; toArrow then wraps the block as the
// leaf's scan type, without copying where the shapes agree.

// valueBlock is a run of decoded values of one shape.
type valueBlock interface {
	length() int
}

// fixedBlock holds n fixed-width values back to back.
type fixedBlock struct {
	// bits per value: 1 (an LSB-first bitmap; bits past n are zero) or a
	// positive multiple of 8.
	bits int
	n    int
	data []byte
}

func (b *fixedBlock) length() int { return b.n }

// newFixedBlock returns an empty block with room for capValues values, but
// for no more than a few times capBytes, the size of their encoded form:
// value counts come from metadata, and a bogus one must not allocate much.
// (Legitimately tighter encodings, like bit-packing at width 0, just grow
// the block as they decode.)
func newFixedBlock(bits, capValues, capBytes int) fixedBlock {
	return fixedBlock{bits: bits, data: make([]byte, 0, min(bytesForBits(capValues*bits), 8*capBytes))}
}

// appendWordsInPlace appends n T-bit values that decode writes, decoding
// straight into the block's buffer when it can. decode gets an empty slice
// and returns it with the n values appended; the caller has checked that
// the input can hold n values, so growing the buffer first is safe.
func appendWordsInPlace[T codec.Word](b *fixedBlock, scratch *[]T, n int, decode func(dst []T) ([]T, error)) error {
	size := int(unsafe.Sizeof(T(0)))
	start := len(b.data)
	b.data = slices.Grow(b.data, n*size)
	tail := b.data[start : start+n*size]
	var dst []T
	if n > 0 && uintptr(unsafe.Pointer(&tail[0]))%uintptr(size) == 0 {
		dst = unsafe.Slice((*T)(unsafe.Pointer(&tail[0])), n)[:0]
	} else {
		dst = (*scratch)[:0] // an unaligned buffer: decode aside and copy
	}
	out, err := decode(dst)
	if err != nil {
		return err
	}
	if len(out) != n {
		return pageCorruptf("decoded %d values, want %d", len(out), n)
	}
	if n > 0 && unsafe.Pointer(&out[0]) != unsafe.Pointer(&tail[0]) {
		copy(tail, wordsAsBytes(out))
		*scratch = out
	}
	b.data = b.data[:start+n*size]
	b.n += n
	return nil
}

// appendValues appends the first n values of src, which must hold them.
func (b *fixedBlock) appendValues(src []byte, n int) {
	if b.bits == 1 {
		b.data = appendBitmap(b.data, b.n, src, n)
	} else {
		b.data = append(b.data, src[:n*(b.bits/8)]...)
	}
	b.n += n
}

// appendZeros appends n zero values (the slots of null items).
func (b *fixedBlock) appendZeros(n int) {
	if b.bits == 1 {
		b.data = append(b.data, make([]byte, bytesForBits(b.n+n)-len(b.data))...)
	} else {
		b.data = append(b.data, make([]byte, n*(b.bits/8))...)
	}
	b.n += n
}

func bytesForBits(n int) int { return (n + 7) / 8 }

// appendBitmap appends bits [0, n) of src to dst, a bitmap of dstBits bits
// whose bits past dstBits are zero, and keeps that invariant.
func appendBitmap(dst []byte, dstBits int, src []byte, n int) []byte {
	if n == 0 {
		return dst
	}
	srcBytes := bytesForBits(n)
	shift := uint(dstBits % 8)
	if shift == 0 {
		dst = append(dst, src[:srcBytes]...)
	} else {
		first := dstBits / 8
		dst = append(dst, make([]byte, bytesForBits(dstBits+n)-len(dst))...)
		for i, v := range src[:srcBytes] {
			dst[first+i] |= v << shift
			if first+i+1 < len(dst) {
				dst[first+i+1] |= v >> (8 - shift)
			}
		}
	}
	if r := (dstBits + n) % 8; r != 0 {
		dst[len(dst)-1] &= byte(1)<<r - 1
	}
	return dst
}

// bitSet reports bit i of an LSB-first bitmap.
func bitSet(bitmap []byte, i int) bool { return bitmap[i/8]>>(i%8)&1 != 0 }

// varBlock holds variable-width values as Arrow lays them out: offsets
// (32-bit, or 64-bit when large) starting at 0, and the value bytes.
type varBlock struct {
	large bool
	off32 []int32
	off64 []int64
	data  []byte
}

// newVarBlock returns an empty block; capHint (bounded by the caller) sizes
// the offsets.
func newVarBlock(large bool, capHint int) *varBlock {
	b := &varBlock{large: large}
	if large {
		b.off64 = make([]int64, 1, capHint+1)
	} else {
		b.off32 = make([]int32, 1, capHint+1)
	}
	return b
}

func (b *varBlock) length() int {
	if b.large {
		return len(b.off64) - 1
	}
	return len(b.off32) - 1
}

// add appends one value.
func (b *varBlock) add(v []byte) error {
	b.data = append(b.data, v...)
	return b.endValue()
}

// endValue ends the value whose bytes were appended to data since the last
// offset.
func (b *varBlock) endValue() error {
	end := len(b.data)
	if b.large {
		b.off64 = append(b.off64, int64(end))
		return nil
	}
	if end > math.MaxInt32 {
		return pageUnsupportedf("%d bytes of values overflow 32-bit offsets", end)
	}
	b.off32 = append(b.off32, int32(end))
	return nil
}

// newVarBlockSized returns an empty block with room for capValues values of
// capBytes bytes in all. Each stored value takes at least a 4-byte offset,
// which bounds the offsets by capBytes.
func newVarBlockSized(large bool, capValues, capBytes int) *varBlock {
	b := newVarBlock(large, min(capValues, capBytes/4+1))
	b.data = make([]byte, 0, capBytes)
	return b
}

// value returns value i.
func (b *varBlock) value(i int) []byte {
	if b.large {
		return b.data[b.off64[i]:b.off64[i+1]]
	}
	return b.data[b.off32[i]:b.off32[i+1]]
}

// appendVarValues appends values data[offsets[i]:offsets[i+1]], where
// offsets (rebased to start at 0, non-decreasing, within data) come from a
// codec that checked them.
func appendVarValues[O codec.Offset](b *varBlock, offsets []O, data []byte) error {
	base := len(b.data)
	if !b.large && base+len(data) > math.MaxInt32 {
		return pageUnsupportedf("%d bytes of values overflow 32-bit offsets", base+len(data))
	}
	b.data = append(b.data, data...)
	for _, o := range offsets[1:] {
		if b.large {
			b.off64 = append(b.off64, int64(base)+int64(o))
		} else {
			b.off32 = append(b.off32, int32(base+int(o)))
		}
	}
	return nil
}

// fslBlock holds n fixed-size lists (possibly nested) of fixed-width items.
type fslBlock struct {
	n int
	// dims are the list sizes, outermost first.
	dims []int
	// validity[k], when not nil, is the bitmap of the n·dims[0]·…·dims[k]
	// children of list layer k (items for the innermost layer).
	validity [][]byte
	items    fixedBlock
}

func (b *fslBlock) length() int { return b.n }

// children returns the number of children of layer k.
func (b *fslBlock) children(k int) int {
	c := b.n
	for _, d := range b.dims[:k+1] {
		c *= d
	}
	return c
}

// structBlock holds n structs, one block per child.
type structBlock struct {
	n        int
	children []valueBlock
}

func (b *structBlock) length() int { return b.n }

// nullBlock is n values that are all null.
type nullBlock struct{ n int }

func (b *nullBlock) length() int { return b.n }

// toArrow wraps a block as an Arrow array of type dt. The block's buffers
// become the array's (no copy) where the layouts agree.
func toArrow(mem memory.Allocator, b valueBlock, dt arrow.DataType) (arrow.Array, error) {
	if dict, ok := dt.(*arrow.DictionaryType); ok {
		if _, isNull := b.(*nullBlock); !isNull {
			// A plain or constant page of a dictionary field.
			entries, keys, err := plainDictionary(dict, b)
			if err != nil {
				return nil, err
			}
			return dictionaryArray(mem, dict, entries, keys, nil, false)
		}
	}
	if dt.ID() == arrow.NULL {
		return array.NewNull(b.length()), nil
	}
	switch b := b.(type) {
	case *nullBlock:
		return arrays.NullArray(mem, dt, b.n), nil
	case *fixedBlock:
		return fixedToArrow(b, dt)
	case *varBlock:
		return varToArrow(b, dt)
	case *fslBlock:
		return fslToArrow(b, dt)
	case *structBlock:
		st, ok := dt.(*arrow.StructType)
		if !ok || st.NumFields() != len(b.children) {
			return nil, pageCorruptf("page holds structs of %d fields, the field is %s", len(b.children), dt)
		}
		members := make([]arrow.Array, len(b.children))
		defer fileio.ReleaseAll(members)
		for i, c := range b.children {
			m, err := toArrow(mem, c, st.Field(i).Type)
			if err != nil {
				return nil, pageWrapf(err, "struct field %q", st.Field(i).Name)
			}
			members[i] = m
		}
		return arrays.StructArray(st, b.n, members, nil), nil
	}
	return nil, pageUnsupportedf("values of shape %T", b)
}

// categorized gives the plain errors of the build.go helpers (buffers too
// short for the length) the corruption category: the lengths came from the
// page.
func categorized(a arrow.Array, err error) (arrow.Array, error) {
	if err != nil {
		return nil, pageCorruptf("%v", err)
	}
	return a, nil
}

func fixedToArrow(b *fixedBlock, dt arrow.DataType) (arrow.Array, error) {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		switch b.bits {
		case 1:
			return categorized(arrays.FixedWidthArray(dt, b.n, b.data, nil))
		case 8: // a constant page's inline bool is one byte
			bits := make([]byte, bytesForBits(b.n))
			for i, v := range b.data[:b.n] {
				if v&1 != 0 {
					bits[i/8] |= 1 << (i % 8)
				}
			}
			return categorized(arrays.FixedWidthArray(dt, b.n, bits, nil))
		}
	case *arrow.FixedSizeListType:
		// Whole lists stored as one fixed-width value.
		child, ok := t.Elem().(arrow.FixedWidthDataType)
		if ok && t.Len() > 0 && child.BitWidth()%8 == 0 && int(t.Len())*child.BitWidth() == b.bits {
			return fslToArrow(&fslBlock{n: b.n, dims: []int{int(t.Len())}, validity: [][]byte{nil},
				items: fixedBlock{bits: child.BitWidth(), n: b.n * int(t.Len()), data: b.data}}, dt)
		}
	case arrow.FixedWidthDataType:
		if t.BitWidth() == b.bits {
			return categorized(arrays.FixedWidthArray(dt, b.n, b.data, nil))
		}
	}
	return nil, pageCorruptf("page holds %d-bit values, the field is %s", b.bits, dt)
}

func varToArrow(b *varBlock, dt arrow.DataType) (arrow.Array, error) {
	var large bool
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		large = true
	default:
		return nil, pageCorruptf("page holds variable-width values, the field is %s", dt)
	}
	n := b.length()
	var offsets []byte
	switch {
	case large && b.large:
		offsets = arrow.Int64Traits.CastToBytes(b.off64)
	case !large && !b.large:
		offsets = arrow.Int32Traits.CastToBytes(b.off32)
	case large:
		wide := make([]int64, len(b.off32))
		for i, o := range b.off32 {
			wide[i] = int64(o)
		}
		offsets = arrow.Int64Traits.CastToBytes(wide)
	default:
		if len(b.data) > math.MaxInt32 {
			return nil, pageUnsupportedf("%d bytes of values overflow the 32-bit offsets of %s", len(b.data), dt)
		}
		narrow := make([]int32, len(b.off64))
		for i, o := range b.off64 {
			narrow[i] = int32(o)
		}
		offsets = arrow.Int32Traits.CastToBytes(narrow)
	}
	return categorized(arrays.VarWidthArray(dt, n, offsets, b.data, nil))
}

func fslToArrow(b *fslBlock, dt arrow.DataType) (arrow.Array, error) {
	// Walk the nested list types down to the item type, checking dims.
	types := make([]*arrow.FixedSizeListType, len(b.dims))
	t := dt
	for k, d := range b.dims {
		lt, ok := t.(*arrow.FixedSizeListType)
		if !ok || int(lt.Len()) != d {
			return nil, pageCorruptf("page holds fixed-size lists of %v, the field is %s", b.dims, dt)
		}
		types[k] = lt
		t = lt.Elem()
	}
	items, err := fixedToArrow(&b.items, t)
	if err != nil {
		return nil, err
	}
	var validity []byte
	if v := b.validity[len(b.dims)-1]; v != nil {
		validity = v
	}
	// Rewrap the items with their validity (fixedToArrow made them without).
	if validity != nil {
		data := items.Data()
		withValidity := arrays.MakeArray(t, b.items.n, validity, bufferBytes(data.Buffers()[1:]), nil)
		items.Release()
		items = withValidity
	}
	for k := len(b.dims) - 1; k >= 0; k-- {
		var v []byte
		if k > 0 {
			v = b.validity[k-1]
		}
		n := b.n
		if k > 0 {
			n = b.children(k - 1)
		}
		list := arrays.FixedSizeListArray(types[k], n, items, v)
		items.Release()
		items = list
	}
	return items, nil
}

// bufferBytes returns the bytes of Arrow buffers (nil for nil buffers).
func bufferBytes(bufs []*memory.Buffer) [][]byte {
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		if b != nil {
			out[i] = b.Bytes()
		}
	}
	return out
}

// putLE writes the low width bytes of v little-endian.
func putLE(dst []byte, width int, v uint64) {
	for i := range width {
		dst[i] = byte(v >> (8 * i))
	}
}

// getLE reads a little-endian unsigned integer of width bytes.
func getLE(src []byte, width int) uint64 {
	var v uint64
	for i := range width {
		v |= uint64(src[i]) << (8 * i)
	}
	return v
}

// wordsAsBytes views decoded words as their little-endian bytes. Lance data
// is little-endian and so are the hosts Go and Arrow run on here (arrow-go
// makes the same assumption in its type traits).
func wordsAsBytes[T codec.Word](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// decompress undoes a General encoding's framing, bounded by limit bytes.
func decompress(c *enc21pb.BufferCompression, src []byte, limit int) ([]byte, error) {
	scheme := codec.CompressionScheme(c.GetScheme())
	out, err := codec.Decompress(scheme, src, limit)
	if err != nil {
		return nil, pageWrapf(err, "%v buffer of %d bytes", scheme, len(src))
	}
	return out, nil
}

// flatBits returns the bits per value of a Flat encoding, which must be 1 or
// a positive multiple of 8 (the widths Lance writes).
func flatBits(f *enc21pb.Flat) (int, error) {
	if f == nil {
		return 0, pageCorruptf("missing flat encoding")
	}
	if f.GetData() != nil {
		return 0, pageUnsupportedf("flat encoding with buffer compression %v", f.GetData().GetScheme())
	}
	bits := f.GetBitsPerValue()
	if bits != 1 && (bits == 0 || bits%8 != 0 || bits > 1<<20) {
		return 0, pageUnsupportedf("flat encoding of %d bits per value", bits)
	}
	return int(bits), nil
}

// wordBits checks an uncompressed bit width of a bit-packing or RLE
// encoding: 8, 16, 32 or 64.
func wordBits(bits uint64, what string) (int, error) {
	switch bits {
	case 8, 16, 32, 64:
		return int(bits), nil
	}
	return 0, pageUnsupportedf("%s of %d-bit values", what, bits)
}

// flatChild returns the Flat inside a child encoding, the only child Lance
// writes for RLE, byte-stream split, out-of-line bit-packing and the values
// of fixed-size lists and packed structs.
func flatChild(e *enc21pb.CompressiveEncoding, what string) (*enc21pb.Flat, error) {
	if e == nil {
		return nil, pageCorruptf("%s has no child encoding", what)
	}
	f := e.GetFlat()
	if f == nil {
		return nil, pageUnsupportedf("%s over %T", what, e.GetCompression())
	}
	return f, nil
}

// fslLayers flattens nested FixedSizeList encodings down to their Flat
// items: the dims (outermost first), which layers carry item validity, and
// the items' bits.
func fslLayers(f *enc21pb.FixedSizeList) (dims []int, hasValidity []bool, bits int, err error) {
	for depth := 0; ; depth++ {
		if depth > 64 {
			return nil, nil, 0, pageCorruptf("fixed-size list nested more than 64 deep")
		}
		d := f.GetItemsPerValue()
		if d == 0 || d > 1<<24 {
			return nil, nil, 0, pageCorruptf("fixed-size list of %d items per value", d)
		}
		dims = append(dims, int(d))
		hasValidity = append(hasValidity, f.GetHasValidity())
		switch v := f.GetValues().GetCompression().(type) {
		case *enc21pb.CompressiveEncoding_FixedSizeList:
			f = v.FixedSizeList
		case *enc21pb.CompressiveEncoding_Flat:
			bits, err = flatBits(v.Flat)
			if err != nil {
				return nil, nil, 0, err
			}
			total := bits
			for _, d := range dims {
				total *= d
				if total > 1<<30 {
					return nil, nil, 0, pageUnsupportedf("fixed-size lists of %v %d-bit items are too wide", dims, bits)
				}
			}
			return dims, hasValidity, bits, nil
		case nil:
			return nil, nil, 0, pageCorruptf("fixed-size list has no item encoding")
		default:
			return nil, nil, 0, pageUnsupportedf("fixed-size list over %T", v)
		}
	}
}

// decodeBlock decodes a buffer holding n values compressed as one block (the
// dictionary of a mini-block page; docs/spec/lance-format.md §9.1 "blocks"). n < 0 means the
// count is unknown and must come from the block itself (Variable only).
func decodeBlock(enc *enc21pb.CompressiveEncoding, buf []byte, n int) (valueBlock, error) {
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Flat:
		bits, err := flatBits(e.Flat)
		if err != nil {
			return nil, err
		}
		if n < 0 || uint64(n)*uint64(bits) > 8*uint64(len(buf)) {
			return nil, pageCorruptf("flat block of %d bytes cannot hold %d values of %d bits", len(buf), n, bits)
		}
		b := &fixedBlock{bits: bits}
		b.appendValues(buf, n)
		return b, nil
	case *enc21pb.CompressiveEncoding_Variable:
		if err := checkVariable(e.Variable); err != nil {
			return nil, err
		}
		vb, err := codec.DecodeVariableBlock(buf)
		if err != nil {
			return nil, pageWrapf(err, "variable block")
		}
		if n >= 0 && vb.Len() != n {
			return nil, pageCorruptf("variable block holds %d values, want %d", vb.Len(), n)
		}
		b := newVarBlock(vb.BitsPerOffset == 64, vb.Len())
		if err := appendVarValues(b, vb.Offsets, vb.Data); err != nil {
			return nil, err
		}
		return b, nil
	case *enc21pb.CompressiveEncoding_General:
		inner, err := decompress(e.General.GetCompression(), buf, fileio.DecompressLimit(len(buf)))
		if err != nil {
			return nil, err
		}
		return decodeBlock(e.General.GetValues(), inner, n)
	case *enc21pb.CompressiveEncoding_InlineBitpacking, *enc21pb.CompressiveEncoding_OutOfLineBitpacking,
		*enc21pb.CompressiveEncoding_Rle:
		if n < 0 {
			return nil, pageCorruptf("block of unknown length")
		}
		return decodeWordBlock(enc, buf, n)
	case nil:
		return nil, pageCorruptf("missing block encoding")
	default:
		return nil, pageUnsupportedf("block encoding %T", e)
	}
}

// checkVariable checks that a Variable encoding has flat 32- or 64-bit
// offsets, the only kind Lance writes.
func checkVariable(v *enc21pb.Variable) error {
	f, err := flatChild(v.GetOffsets(), "variable encoding")
	if err != nil {
		return err
	}
	if b := f.GetBitsPerValue(); b != 32 && b != 64 {
		return pageUnsupportedf("variable encoding with %d-bit offsets", b)
	}
	if v.GetValues() != nil {
		return pageUnsupportedf("variable encoding with buffer compression %v", v.GetValues().GetScheme())
	}
	return nil
}

// decodeWordBlock decodes a block of n integers (levels, dictionary values)
// stored with InlineBitpacking, OutOfLineBitpacking or RLE.
func decodeWordBlock(enc *enc21pb.CompressiveEncoding, buf []byte, n int) (*fixedBlock, error) {
	bits, err := wordBlockBits(enc)
	if err != nil {
		return nil, err
	}
	switch bits {
	case 8:
		return wordsToBlock(decodeWordsAs[uint8](enc, buf, n))
	case 16:
		return wordsToBlock(decodeWordsAs[uint16](enc, buf, n))
	case 32:
		return wordsToBlock(decodeWordsAs[uint32](enc, buf, n))
	default:
		return wordsToBlock(decodeWordsAs[uint64](enc, buf, n))
	}
}

// wordBlockBits checks a bit-packing or RLE block encoding and returns the
// width of its decoded values.
func wordBlockBits(enc *enc21pb.CompressiveEncoding) (int, error) {
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		if e.InlineBitpacking.GetValues() != nil {
			return 0, pageUnsupportedf("inline bit-packing with buffer compression")
		}
		return wordBits(e.InlineBitpacking.GetUncompressedBitsPerValue(), "inline bit-packing")
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		bits, err := wordBits(e.OutOfLineBitpacking.GetUncompressedBitsPerValue(), "out-of-line bit-packing")
		if err != nil {
			return 0, err
		}
		f, err := flatChild(e.OutOfLineBitpacking.GetValues(), "out-of-line bit-packing")
		if err != nil {
			return 0, err
		}
		if w := f.GetBitsPerValue(); w > uint64(bits) {
			return 0, pageCorruptf("out-of-line bit-packing of %d-bit values at width %d", bits, w)
		}
		return bits, nil
	case *enc21pb.CompressiveEncoding_Rle:
		return rleBits(e.Rle)
	}
	return 0, pageUnsupportedf("word block encoding %T", enc.GetCompression())
}

// decodeWordsAs decodes n T-bit integers of a block that wordBlockBits
// accepted for T. n comes from metadata (a level count, a dictionary size),
// so it is checked against the buffer before anything is allocated: these
// encodings take at least one byte per BlockLen values, except out-of-line
// bit-packing at width 0, which Lance does not write for more than one
// value (all-zero levels are stored Flat, and a dictionary whose items all
// fit in 0 bits has one item).
func decodeWordsAs[T codec.Word](enc *enc21pb.CompressiveEncoding, buf []byte, n int) ([]T, error) {
	if n < 0 || n > codec.BlockLen*max(len(buf), 1) {
		return nil, pageCorruptf("block of %d bytes cannot hold %d values", len(buf), n)
	}
	var (
		out []T
		err error
	)
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		out, err = codec.DecodeInlineBitpacked[T](nil, buf, n)
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		width := int(e.OutOfLineBitpacking.GetValues().GetFlat().GetBitsPerValue())
		out, err = codec.DecodeOutOfLineBitpacked[T](nil, buf, width, n)
	case *enc21pb.CompressiveEncoding_Rle:
		out, err = codec.DecodeRLEBlock[T](nil, buf, n)
	default:
		return nil, pageUnsupportedf("word block encoding %T", e)
	}
	if err != nil {
		return nil, pageWrapf(err, "block of %d values", n)
	}
	return out, nil
}

func wordsToBlock[T codec.Word](words []T, err error) (*fixedBlock, error) {
	if err != nil {
		return nil, err
	}
	return &fixedBlock{bits: 8 * int(unsafe.Sizeof(T(0))), n: len(words), data: wordsAsBytes(words)}, nil
}

// rleBits checks an RLE encoding (Flat{8|16|32|64} run values, Flat{8} run
// lengths) and returns the bits of its values.
func rleBits(r *enc21pb.Rle) (int, error) {
	vf, err := flatChild(r.GetValues(), "rle values")
	if err != nil {
		return 0, err
	}
	lf, err := flatChild(r.GetRunLengths(), "rle run lengths")
	if err != nil {
		return 0, err
	}
	if lf.GetBitsPerValue() != 8 {
		return 0, pageUnsupportedf("rle with %d-bit run lengths", lf.GetBitsPerValue())
	}
	return wordBits(vf.GetBitsPerValue(), "rle")
}

// decodeLevels decodes one block of rep or def levels holding count u16
// levels. With wrapped (2.2 large chunks), count is only known modulo 2^16
// (the chunk header keeps a u16), so the real count is the one the block
// itself implies that is congruent to it (docs/spec/lance-format.md §8.4).
func decodeLevels(enc *enc21pb.CompressiveEncoding, buf []byte, count int, wrapped bool) ([]uint16, error) {
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_General:
		inner, err := decompress(e.General.GetCompression(), buf, fileio.DecompressLimit(len(buf)))
		if err != nil {
			return nil, err
		}
		return decodeLevels(e.General.GetValues(), inner, count, wrapped)
	case *enc21pb.CompressiveEncoding_Flat:
		if e.Flat.GetBitsPerValue() != 16 || e.Flat.GetData() != nil {
			return nil, pageUnsupportedf("levels stored flat at %d bits", e.Flat.GetBitsPerValue())
		}
		if n := len(buf) / 2; n != count && !(wrapped && n%(1<<16) == count) {
			return nil, pageCorruptf("%d bytes of flat levels for %d levels", len(buf), count)
		}
		return rawLevels16(buf)
	case *enc21pb.CompressiveEncoding_InlineBitpacking, *enc21pb.CompressiveEncoding_OutOfLineBitpacking,
		*enc21pb.CompressiveEncoding_Rle:
		bits, err := wordBlockBits(enc)
		if err != nil {
			return nil, err
		}
		if bits != 16 {
			return nil, pageUnsupportedf("levels stored as %d-bit values", bits)
		}
		if wrapped {
			count = impliedLevelCount(enc, buf, count)
		}
		return decodeWordsAs[uint16](enc, buf, count)
	case nil:
		return nil, pageCorruptf("missing level encoding")
	default:
		return nil, pageUnsupportedf("level encoding %T", e)
	}
}

// rawLevels16 reads levels stored as raw little-endian u16 values.
func rawLevels16(buf []byte) ([]uint16, error) {
	if len(buf)%2 != 0 {
		return nil, pageCorruptf("raw levels of %d bytes (odd)", len(buf))
	}
	out := make([]uint16, len(buf)/2)
	copy(wordsAsBytes(out), buf)
	return out, nil
}

// impliedLevelCount returns the level count a bit-packed or RLE block of
// u16 levels implies that is congruent to count modulo 2^16, or count when
// the block does not tell (the decoder then checks count itself).
func impliedLevelCount(enc *enc21pb.CompressiveEncoding, buf []byte, count int) int {
	const wrap = 1 << 16
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Rle:
		// The run lengths add up to the count.
		if len(buf) < 8 {
			return count
		}
		valuesSize := binary.LittleEndian.Uint64(buf)
		if valuesSize > uint64(len(buf)-8) {
			return count
		}
		total := 0
		for _, l := range buf[8+valuesSize:] {
			total += int(l)
		}
		if total%wrap == count {
			return total
		}
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		// Each 1024-level block is a u16 width W and 128·W bytes.
		blocks := 0
		for pos := 0; pos+2 <= len(buf); blocks++ {
			w := int(buf[pos]) | int(buf[pos+1])<<8
			pos += 2 + 128*w
		}
		for c := count; c <= blocks*codec.BlockLen; c += wrap {
			if (c+codec.BlockLen-1)/codec.BlockLen == blocks {
				return c
			}
		}
	case *enc21pb.CompressiveEncoding_OutOfLineBitpacking:
		// Whole blocks take 128·W bytes; the tail of r levels is packed
		// (128·W bytes) or raw (2·r bytes).
		w := int(e.OutOfLineBitpacking.GetValues().GetFlat().GetBitsPerValue())
		if w == 0 {
			return count
		}
		for c := count; (c/codec.BlockLen)*128*w <= len(buf); c += wrap {
			whole, tail := c/codec.BlockLen, c%codec.BlockLen
			size := whole * 128 * w
			if tail == 0 && size == len(buf) || tail > 0 && (size+128*w == len(buf) || size+2*tail == len(buf)) {
				return c
			}
		}
	}
	return count
}
