package format

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Helpers that assemble Arrow arrays from decoded buffers. Decoders produce
// plain Go byte slices (little-endian values, LSB-first bitmaps); these wrap
// them without copying. A nil validity means "no nulls".

// wrapBuffer makes an Arrow buffer over b (no copy).
func wrapBuffer(b []byte) *memory.Buffer {
	if b == nil {
		return nil
	}
	return memory.NewBufferBytes(b)
}

// validityNulls counts the nulls of n slots in an LSB-first validity bitmap;
// a nil bitmap has none.
func validityNulls(validity []byte, n int) int {
	if validity == nil {
		return 0
	}
	return n - bitutil.CountSetBits(validity, 0, n)
}

// makeArray builds an array of type dt and length n from buffers and child
// data, computing the null count from validity (buffers[0]).
func makeArray(dt arrow.DataType, n int, validity []byte, buffers [][]byte, children []arrow.ArrayData) arrow.Array {
	bufs := make([]*memory.Buffer, 0, 1+len(buffers))
	bufs = append(bufs, wrapBuffer(validity))
	for _, b := range buffers {
		bufs = append(bufs, wrapBuffer(b))
	}
	data := array.NewData(dt, n, bufs, children, validityNulls(validity, n), 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// fixedWidthArray wraps n fixed-width values (bool: a bitmap) of type dt.
func fixedWidthArray(dt arrow.DataType, n int, values, validity []byte) (arrow.Array, error) {
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
	return makeArray(dt, n, validity, [][]byte{values}, nil), nil
}

// varWidthArray wraps a utf8/binary (32-bit offsets) or large (64-bit
// offsets) array: offsets holds n+1 little-endian offsets into data.
func varWidthArray(dt arrow.DataType, n int, offsets, data, validity []byte) (arrow.Array, error) {
	width := 4
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY:
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		width = 8
	default:
		return nil, fmt.Errorf("varWidthArray: %s is not a binary type", dt)
	}
	if len(offsets) < (n+1)*width {
		return nil, fmt.Errorf("%d offsets need %d bytes, have %d", n+1, (n+1)*width, len(offsets))
	}
	if data == nil {
		data = []byte{}
	}
	return makeArray(dt, n, validity, [][]byte{offsets, data}, nil), nil
}

// structArray assembles a struct from its member arrays, all of length n.
func structArray(dt *arrow.StructType, n int, members []arrow.Array, validity []byte) arrow.Array {
	children := make([]arrow.ArrayData, len(members))
	for i, m := range members {
		children[i] = m.Data()
	}
	return makeArray(dt, n, validity, nil, children)
}

// listArray assembles a list or large list from n+1 offsets (int32 for
// list and map, int64 for large list, little-endian bytes) and the items.
func listArray(dt arrow.DataType, n int, offsets []byte, items arrow.Array, validity []byte) arrow.Array {
	return makeArray(dt, n, validity, [][]byte{offsets}, []arrow.ArrayData{items.Data()})
}

// fixedSizeListArray assembles a fixed-size list of n rows over items of
// length n·dim.
func fixedSizeListArray(dt *arrow.FixedSizeListType, n int, items arrow.Array, validity []byte) arrow.Array {
	return makeArray(dt, n, validity, nil, []arrow.ArrayData{items.Data()})
}

// nullArray returns n nulls of any type (a column a file does not hold).
func nullArray(mem memory.Allocator, dt arrow.DataType, n int) arrow.Array {
	return array.MakeArrayOfNull(mem, dt, n)
}
