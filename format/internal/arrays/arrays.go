package arrays

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// Helpers that assemble Arrow arrays from decoded buffers. Decoders produce
// plain Go byte slices (little-endian values, LSB-first bitmaps); these wrap
// them without copying. A nil validity means "no nulls".

// WrapBuffer makes an Arrow buffer over b (no copy).
func WrapBuffer(b []byte) *memory.Buffer {
	if b == nil {
		return nil
	}
	return memory.NewBufferBytes(b)
}

// ValidityNulls counts the nulls of n slots in an LSB-first validity bitmap;
// a nil bitmap has none.
func ValidityNulls(validity []byte, n int) int {
	if validity == nil {
		return 0
	}
	return n - bitutil.CountSetBits(validity, 0, n)
}

// MakeArray builds an array of type dt and length n from buffers and child
// data, computing the null count from validity (buffers[0]).
func MakeArray(dt arrow.DataType, n int, validity []byte, buffers [][]byte, children []arrow.ArrayData) arrow.Array {
	bufs := make([]*memory.Buffer, 0, 1+len(buffers))
	bufs = append(bufs, WrapBuffer(validity))
	for _, b := range buffers {
		bufs = append(bufs, WrapBuffer(b))
	}
	data := array.NewData(dt, n, bufs, children, ValidityNulls(validity, n), 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// FixedWidthArray wraps n fixed-width values (bool: a bitmap) of type dt.
func FixedWidthArray(dt arrow.DataType, n int, values, validity []byte) (arrow.Array, error) {
	var need int
	switch t := dt.(type) {
	case *arrow.BooleanType:
		need = int(bitutil.BytesForBits(int64(n)))
	case arrow.FixedWidthDataType:
		need = n * (t.BitWidth() / 8)
	default:
		return nil, fmt.Errorf("fixedWidthArray: %s is not fixed-width", dt)
	}
	if len(values) < need {
		return nil, fmt.Errorf("%d values of %s need %d bytes, have %d", n, dt, need, len(values))
	}
	if validity != nil && len(validity) < int(bitutil.BytesForBits(int64(n))) {
		return nil, fmt.Errorf("validity of %d bytes too short for %d values", len(validity), n)
	}
	return MakeArray(dt, n, validity, [][]byte{values}, nil), nil
}

// VarWidthArray wraps a utf8/binary (32-bit offsets) or large (64-bit
// offsets) array: offsets holds n+1 little-endian offsets into data.
func VarWidthArray(dt arrow.DataType, n int, offsets, data, validity []byte) (arrow.Array, error) {
	large, ok := BinaryType(dt)
	if !ok {
		return nil, fmt.Errorf("varWidthArray: %s is not a binary type", dt)
	}
	width := 4
	if large {
		width = 8
	}
	if len(offsets) < (n+1)*width {
		return nil, fmt.Errorf("%d offsets need %d bytes, have %d", n+1, (n+1)*width, len(offsets))
	}
	if data == nil {
		data = []byte{}
	}
	return MakeArray(dt, n, validity, [][]byte{offsets, data}, nil), nil
}

// StructArray assembles a struct from its member arrays, all of length n.
func StructArray(dt *arrow.StructType, n int, members []arrow.Array, validity []byte) arrow.Array {
	children := make([]arrow.ArrayData, len(members))
	for i, m := range members {
		children[i] = m.Data()
	}
	return MakeArray(dt, n, validity, nil, children)
}

// ListArray assembles a list or large list from n+1 offsets (int32 for
// list and map, int64 for large list, little-endian bytes) and the items.
func ListArray(dt arrow.DataType, n int, offsets []byte, items arrow.Array, validity []byte) arrow.Array {
	return MakeArray(dt, n, validity, [][]byte{offsets}, []arrow.ArrayData{items.Data()})
}

// FixedSizeListArray assembles a fixed-size list of n rows over items of
// length n·dim.
func FixedSizeListArray(dt *arrow.FixedSizeListType, n int, items arrow.Array, validity []byte) arrow.Array {
	return MakeArray(dt, n, validity, nil, []arrow.ArrayData{items.Data()})
}

// NullArray returns n nulls of any type (a column a file does not hold).
func NullArray(mem memory.Allocator, dt arrow.DataType, n int) arrow.Array {
	return array.MakeArrayOfNull(mem, dt, n)
}

// maxSyntheticBytes bounds how much memory values with no bytes in the file
// behind them (nulls of a column the file lacks, all-null and constant
// pages) may take in one read, unless they are the rows the caller asked
// for themselves. Counts of such values come from metadata alone (a list's
// item count, say), so nothing else bounds them; a file whose lists hold
// more such items than this per read must be read in fewer rows at a time.
const maxSyntheticBytes = 32 << 20

// AllowSynthetic reports whether n values of dt with no bytes behind them
// may be built in a read of requested rows: the rows asked for are, unless
// one value is huge (over 64 KiB); other counts are held to
// maxSyntheticBytes.
func AllowSynthetic(n int, requested uint64, dt arrow.DataType) error {
	per := max(valueBytes(dt), 1)
	if uint64(n) <= requested && per <= 64<<10 {
		return nil
	}
	if uint64(n) <= maxSyntheticBytes/per {
		return nil
	}
	return fmt.Errorf("%d values of %s with no bytes stored behind them would take more than %d MiB; read fewer rows at a time: %w",
		n, dt, maxSyntheticBytes>>20, lancer.ErrUnsupported)
}

// valueBytes estimates the memory one value of dt takes in an Arrow array,
// saturating at 1<<40.
func valueBytes(dt arrow.DataType) uint64 {
	const limit = 1 << 40
	switch t := dt.(type) {
	case *arrow.FixedSizeListType:
		hi, lo := bits.Mul64(uint64(max(t.Len(), 0)), valueBytes(t.Elem()))
		if hi != 0 {
			return limit
		}
		return min(lo, limit)
	case *arrow.StructType:
		var sum uint64 = 1
		for _, f := range t.Fields() {
			sum = min(sum+valueBytes(f.Type), limit)
		}
		return sum
	case *arrow.DictionaryType:
		return valueBytes(t.IndexType)
	case arrow.FixedWidthDataType:
		return uint64(max(t.BitWidth()/8, 1))
	}
	return 8
}

// BinaryType reports whether a binary-like type has 64-bit offsets;
// ok is false for other types.
func BinaryType(dt arrow.DataType) (large, ok bool) {
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
		return false, true
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		return true, true
	}
	return false, false
}

// OffsetWriter accumulates the offsets of a var-width array, 32- or 64-bit.
type OffsetWriter struct {
	large bool
	Buf   []byte
}

// NewOffsetWriter starts the offsets of about n values (n may come from
// metadata alone: the buffer grows with the offsets added), 64-bit if large.
func NewOffsetWriter(large bool, n int) *OffsetWriter {
	w := 4
	if large {
		w = 8
	}
	// n may come from metadata alone (a list's item count); the buffer
	// grows with the offsets actually added.
	o := &OffsetWriter{large: large, Buf: make([]byte, 0, (min(n, 1<<16)+1)*w)}
	o.Add(0)
	return o
}

// Add appends offset v.
func (o *OffsetWriter) Add(v uint64) {
	if o.large {
		o.Buf = binary.LittleEndian.AppendUint64(o.Buf, v)
	} else {
		o.Buf = binary.LittleEndian.AppendUint32(o.Buf, uint32(v))
	}
}

// NullBitmap builds the validity of n values, allocated at the first null
// and grown with the nulls set, so that its size follows the values
// decoded rather than a count from metadata.
type NullBitmap struct {
	N    int
	bits []byte
}

// SetNull marks value i null.
func (b *NullBitmap) SetNull(i int) {
	if need := i/8 + 1; need > len(b.bits) {
		b.grow(max(need, min(2*len(b.bits), int(bitutil.BytesForBits(int64(b.N))))))
	}
	bitutil.ClearBit(b.bits, i)
}

// grow extends the bitmap to size bytes of valid bits.
func (b *NullBitmap) grow(size int) {
	old := len(b.bits)
	b.bits = append(b.bits, make([]byte, size-old)...)
	for i := old; i < size; i++ {
		b.bits[i] = 0xff
	}
}

// Finish returns the bitmap of all n values, nil if none is null.
func (b *NullBitmap) Finish() []byte {
	if b.bits == nil {
		return nil
	}
	if size := int(bitutil.BytesForBits(int64(b.N))); len(b.bits) < size {
		b.grow(size)
	}
	return b.bits
}
