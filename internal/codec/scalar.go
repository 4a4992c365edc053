package codec

import (
	"encoding/binary"
	"math"
)

// DecodeScalarBuffers parses the scalar value buffer of a Lance 2.2 constant
// page: the Arrow buffers of a length-1 array without validity, stored as
//
//	u32 n | u32 len × n | buffer bytes back to back
//
// with nothing after the last buffer. The returned buffers are sub-slices of
// src. For utf8/binary there are two buffers: the offsets [0, L] (two i32 or,
// for the large types, two i64) and the value bytes.
func DecodeScalarBuffers(src []byte) ([][]byte, error) {
	if len(src) < 4 {
		return nil, corruptf("scalar buffer: %d bytes, too short for the buffer count", len(src))
	}
	count := binary.LittleEndian.Uint32(src)
	rest := src[4:]
	if uint64(count) > uint64(len(rest)/4) {
		return nil, corruptf("scalar buffer: %d buffers do not fit their lengths in %d bytes", count, len(rest))
	}
	lengths := rest[:4*count]
	body := rest[4*count:]
	buffers := make([][]byte, count)
	for i := range buffers {
		size := uint64(binary.LittleEndian.Uint32(lengths[4*i:]))
		if size > uint64(len(body)) {
			return nil, corruptf("scalar buffer: buffer %d of %d bytes overruns the %d bytes left", i, size, len(body))
		}
		buffers[i] = body[:size:size]
		body = body[size:]
	}
	if len(body) != 0 {
		return nil, corruptf("scalar buffer: %d trailing bytes after %d buffers", len(body), count)
	}
	return buffers, nil
}

// EncodeScalarBuffers appends the scalar value buffer holding buffers (see
// DecodeScalarBuffers) to dst.
func EncodeScalarBuffers(dst []byte, buffers [][]byte) ([]byte, error) {
	if uint64(len(buffers)) > math.MaxUint32 {
		return dst, invalidf("scalar buffer: %d buffers do not fit a u32 count", len(buffers))
	}
	for i, b := range buffers {
		if uint64(len(b)) > math.MaxUint32 {
			return dst, invalidf("scalar buffer: buffer %d of %d bytes does not fit a u32 length", i, len(b))
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(buffers)))
	for _, b := range buffers {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	}
	for _, b := range buffers {
		dst = append(dst, b...)
	}
	return dst, nil
}
