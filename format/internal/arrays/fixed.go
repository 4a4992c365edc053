package arrays

import "github.com/apache/arrow-go/v18/arrow"

// FixedBuffer returns the value bytes of a fixed-width array and its slot
// offset.
func FixedBuffer(arr arrow.Array) ([]byte, int) {
	data := arr.Data()
	bufs := data.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return nil, data.Offset()
	}
	return bufs[1].Bytes(), data.Offset()
}
