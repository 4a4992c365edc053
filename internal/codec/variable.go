package codec

import (
	"encoding/binary"
	"math"
)

// Offset is the integer type of variable-width offsets: uint32 for the
// 32-bit layouts (utf8, binary) and uint64 for the 64-bit ones (large_utf8,
// large_binary).
type Offset interface {
	uint32 | uint64
}

func offsetBytes[O Offset]() int { return wordBits[O]() / 8 }

func appendOffset[O Offset](dst []byte, offset O) []byte {
	if offsetBytes[O]() == 4 {
		return binary.LittleEndian.AppendUint32(dst, uint32(offset))
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(offset))
}

// binaryChunkPad is the byte Lance pads binary chunks with ('H').
const binaryChunkPad = 0x48

// DecodeBinaryChunk parses one mini-block "binary" chunk holding n values:
// n+1 offsets of the width of O, measured from the start of the chunk, then
// the value bytes, then padding. It returns the offsets rebased to start at
// 0 and the value bytes (a sub-slice of chunk, not a copy).
func DecodeBinaryChunk[O Offset](chunk []byte, n int) ([]O, []byte, error) {
	width := offsetBytes[O]()
	if n < 0 {
		return nil, nil, invalidf("binary chunk: negative value count %d", n)
	}
	if n >= len(chunk)/width { // n+1 offsets do not fit
		return nil, nil, corruptf("binary chunk: %d bytes too short for %d offsets of %d bytes", len(chunk), n+1, width)
	}
	offsets := make([]O, n+1)
	loadWords(offsets, chunk)
	headerEnd := uint64((n + 1) * width)
	first, last := uint64(offsets[0]), uint64(offsets[n])
	if first < headerEnd || last > uint64(len(chunk)) {
		return nil, nil, corruptf("binary chunk: value bytes [%d, %d) outside [%d, %d)", first, last, headerEnd, len(chunk))
	}
	if err := checkNonDecreasing("binary chunk", offsets); err != nil {
		return nil, nil, err
	}
	base := offsets[0]
	for i := range offsets {
		offsets[i] -= base
	}
	return offsets, chunk[first:last], nil
}

// EncodeBinaryChunk appends a binary chunk for the values data[offsets[i]:
// offsets[i+1]] to dst: the offsets rewritten relative to the chunk start,
// the value bytes, then 0x48 padding up to a multiple of the offset width
// (the padded size is what a chunk header records).
func EncodeBinaryChunk[O Offset](dst []byte, offsets []O, data []byte) ([]byte, error) {
	width := offsetBytes[O]()
	if err := checkOffsets("binary chunk", offsets, len(data)); err != nil {
		return dst, err
	}
	n := len(offsets) - 1
	headerEnd := uint64((n + 1) * width)
	values := data[offsets[0]:offsets[n]]
	if width == 4 && headerEnd+uint64(len(values)) > math.MaxUint32 {
		return dst, invalidf("binary chunk: %d bytes do not fit 32-bit offsets", headerEnd+uint64(len(values)))
	}
	shift := O(headerEnd) - offsets[0]
	start := len(dst)
	for _, off := range offsets {
		dst = appendOffset(dst, off+shift)
	}
	dst = append(dst, values...)
	for (len(dst)-start)%width != 0 {
		dst = append(dst, binaryChunkPad)
	}
	return dst, nil
}

// VariableBlock is a decoded variable-width block (the dictionary buffer of a
// mini-block page, or a Variable block encoding): value i is
// Data[Offsets[i]:Offsets[i+1]].
type VariableBlock struct {
	// BitsPerOffset is 32 or 64, as stored in the block.
	BitsPerOffset int
	// Offsets holds len+1 offsets, rebased so that Offsets[0] == 0.
	Offsets []uint64
	// Data is a sub-slice of the block, not a copy.
	Data []byte
}

// Len returns the number of values in the block.
func (b VariableBlock) Len() int { return len(b.Offsets) - 1 }

// DecodeVariableBlock parses the block form of Variable:
//
//	[u32 32][u32 S][u32 offset × (n+1)][bytes]   S = 8 + 4·(n+1)
//	[u64 64][u64 S][u64 offset × (n+1)][bytes]   S = 16 + 8·(n+1)
//
// with offsets relative to the bytes section, and also the older form
// [u8 bits][count][S][offsets][bytes] (count and S u32 for 32-bit offsets,
// u64 for 64-bit), recognised as Lance does by a non-zero byte among bytes 1
// to 3. The value count comes from S.
func DecodeVariableBlock(src []byte) (VariableBlock, error) {
	if len(src) < 8 {
		return VariableBlock{}, corruptf("variable block: %d bytes, too short for a header", len(src))
	}
	var bits int
	var start, offsetsAt uint64 // start of the bytes section, start of the offsets
	var count uint64            // value count stored by the older form
	old := src[1] != 0 || src[2] != 0 || src[3] != 0
	switch {
	case old && src[0] == 32 && len(src) >= 9:
		bits, count, start, offsetsAt = 32, uint64(binary.LittleEndian.Uint32(src[1:])), uint64(binary.LittleEndian.Uint32(src[5:])), 9
	case old && src[0] == 64 && len(src) >= 17:
		bits, count, start, offsetsAt = 64, binary.LittleEndian.Uint64(src[1:]), binary.LittleEndian.Uint64(src[9:]), 17
	case old:
		return VariableBlock{}, corruptf("variable block: old-style header with %d bits per offset in %d bytes", src[0], len(src))
	case binary.LittleEndian.Uint32(src) == 32:
		bits, start, offsetsAt = 32, uint64(binary.LittleEndian.Uint32(src[4:])), 8
	case binary.LittleEndian.Uint32(src) == 64:
		if len(src) < 16 {
			return VariableBlock{}, corruptf("variable block: %d bytes, too short for a 64-bit header", len(src))
		}
		bits, start, offsetsAt = 64, binary.LittleEndian.Uint64(src[8:]), 16
	default:
		return VariableBlock{}, corruptf("variable block: header %x does not name 32- or 64-bit offsets", src[:8])
	}
	width := uint64(bits / 8)
	if start < offsetsAt || start > uint64(len(src)) || (start-offsetsAt)%width != 0 || start-offsetsAt < width {
		return VariableBlock{}, corruptf("variable block: bytes section starts at %d, not after whole %d-bit offsets in a %d-byte block",
			start, bits, len(src))
	}
	n := (start - offsetsAt) / width
	if old && count+1 != n {
		return VariableBlock{}, corruptf("variable block: header counts %d values but holds %d offsets", count, n)
	}
	offsets := make([]uint64, n)
	if bits == 32 {
		for i := range offsets {
			offsets[i] = uint64(binary.LittleEndian.Uint32(src[offsetsAt+4*uint64(i):]))
		}
	} else {
		loadWords(offsets, src[offsetsAt:])
	}
	data := src[start:]
	first, last := offsets[0], offsets[n-1]
	if first > last || last > uint64(len(data)) {
		return VariableBlock{}, corruptf("variable block: value bytes [%d, %d) outside the %d-byte bytes section", first, last, len(data))
	}
	if err := checkNonDecreasing("variable block", offsets); err != nil {
		return VariableBlock{}, err
	}
	for i := range offsets {
		offsets[i] -= first
	}
	return VariableBlock{BitsPerOffset: bits, Offsets: offsets, Data: data[first:last]}, nil
}

// EncodeVariableBlock appends the (current) block form of Variable for the
// values data[offsets[i]:offsets[i+1]] to dst, with offsets of O's width
// rebased to start at 0.
func EncodeVariableBlock[O Offset](dst []byte, offsets []O, data []byte) ([]byte, error) {
	width := offsetBytes[O]()
	if err := checkOffsets("variable block", offsets, len(data)); err != nil {
		return dst, err
	}
	n := len(offsets) - 1
	values := data[offsets[0]:offsets[n]]
	headerLen := 2 * width
	start := uint64(headerLen + (n+1)*width)
	if width == 4 {
		if start+uint64(len(values)) > math.MaxUint32 {
			return dst, invalidf("variable block: %d bytes do not fit 32-bit offsets", start+uint64(len(values)))
		}
		dst = binary.LittleEndian.AppendUint32(dst, 32)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(start))
	} else {
		dst = binary.LittleEndian.AppendUint64(dst, 64)
		dst = binary.LittleEndian.AppendUint64(dst, start)
	}
	base := offsets[0]
	for _, off := range offsets {
		dst = appendOffset(dst, off-base)
	}
	return append(dst, values...), nil
}

// checkOffsets validates caller-supplied offsets for an encoder: at least
// one, non-decreasing, within data.
func checkOffsets[O Offset](what string, offsets []O, dataLen int) error {
	if len(offsets) == 0 {
		return invalidf("%s: no offsets (want value count + 1)", what)
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			return invalidf("%s: offset %d (%d) is less than offset %d (%d)", what, i, offsets[i], i-1, offsets[i-1])
		}
	}
	if uint64(offsets[len(offsets)-1]) > uint64(dataLen) {
		return invalidf("%s: last offset %d beyond %d bytes of data", what, offsets[len(offsets)-1], dataLen)
	}
	return nil
}

// checkNonDecreasing rejects stored offsets that go backwards.
func checkNonDecreasing[O Offset](what string, offsets []O) error {
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			return corruptf("%s: offset %d (%d) is less than offset %d (%d)", what, i, offsets[i], i-1, offsets[i-1])
		}
	}
	return nil
}
