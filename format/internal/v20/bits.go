package v20

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/internal/codec"
)

// Value-level helpers of the 2.0 page decoder: type widths, the two legacy
// bit-packings, little-endian words, and builders of offsets and validity.

// BitWidth returns the width in bits of one fixed-width value of dt (1
// for booleans), if dt is fixed-width.
func BitWidth(dt arrow.DataType) (int, bool) {
	if dt.ID() == arrow.BOOL {
		return 1, true
	}
	if dt.ID() == arrow.DICTIONARY || dt.ID() == arrow.NULL {
		return 0, false
	}
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 || fw.BitWidth() == 0 {
		return 0, false
	}
	return fw.BitWidth(), true
}

// v20Unbitpack expands n values packed LSB-first at width bits each into
// little-endian words of bits bits, sign-extending if signed (the legacy
// Bitpacked encoding).
func v20Unbitpack(buf []byte, n, bits, width int, signed bool) ([]byte, error) {
	if width < 1 || width > bits {
		return nil, v20Corruptf("bit-packing width %d for %d-bit values", width, bits)
	}
	if need := (n*width + 7) / 8; len(buf) < need {
		return nil, v20Corruptf("%d values packed at %d bits need %d bytes, the buffer has %d", n, width, need, len(buf))
	}
	size := bits / 8
	out := make([]byte, n*size)
	var word [8]byte
	for i := range n {
		pos := i * width
		// The value's bits start at bit pos%8 of byte pos/8 and span at
		// most 9 bytes; gather them into a 128-bit window.
		start := pos / 8
		var lo, hi uint64
		for k := 0; k < 9 && start+k < len(buf); k++ {
			if k < 8 {
				lo |= uint64(buf[start+k]) << (8 * k)
			} else {
				hi = uint64(buf[start+k])
			}
		}
		shift := uint(pos % 8)
		v := lo >> shift
		if shift > 0 {
			v |= hi << (64 - shift)
		}
		if width < 64 {
			v &= 1<<width - 1
			if signed && v>>(width-1)&1 == 1 {
				v |= ^uint64(0) << width
			}
		}
		binary.LittleEndian.PutUint64(word[:], v)
		copy(out[i*size:], word[:size])
	}
	return out, nil
}

// v20UnpackFastLanes expands n values of T bit-packed at width bits in
// FastLanes blocks of 1024 (BitpackedForNonNeg) into little-endian bytes.
func v20UnpackFastLanes[T codec.Word](buf []byte, n, width int) ([]byte, error) {
	var zero T
	size := binary.Size(zero)
	// Lance packs at one bit at least; a width of 0 would let a page
	// claim any number of values without bytes behind them.
	if width < 1 || width > 8*size {
		return nil, v20Corruptf("bit-packing width %d for %d-bit values", width, 8*size)
	}
	blockBytes := codec.BlockLen * width / 8
	blocks := (n + codec.BlockLen - 1) / codec.BlockLen
	if len(buf)/blockBytes < blocks {
		return nil, v20Corruptf("%d values packed at %d bits need %d blocks of %d bytes, the buffer has %d bytes",
			n, width, blocks, blockBytes, len(buf))
	}
	packed := make([]T, codec.PackedWords[T](width))
	values := make([]T, codec.BlockLen)
	out := make([]byte, 0, n*size)
	for b := range blocks {
		src := buf[b*blockBytes : (b+1)*blockBytes]
		for i := range packed {
			packed[i] = T(v20LoadWord(src[i*size:], size))
		}
		if err := codec.Unpack(width, packed, values); err != nil {
			return nil, err
		}
		take := min(codec.BlockLen, n-b*codec.BlockLen)
		for _, v := range values[:take] {
			out = v20AppendWord(out, uint64(v), size)
		}
	}
	return out, nil
}

func v20LoadWord(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func v20AppendWord(dst []byte, v uint64, size int) []byte {
	switch size {
	case 1:
		return append(dst, byte(v))
	case 2:
		return binary.LittleEndian.AppendUint16(dst, uint16(v))
	case 4:
		return binary.LittleEndian.AppendUint32(dst, uint32(v))
	}
	return binary.LittleEndian.AppendUint64(dst, v)
}

// BinaryValue returns value i of a utf8/binary array of either offset
// width.
func BinaryValue(a array.BinaryLike, i int) []byte {
	switch a := a.(type) {
	case *array.String:
		return []byte(a.Value(i))
	case *array.LargeString:
		return []byte(a.Value(i))
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	}
	return nil
}

// v20BinaryParts returns the n+1 offsets and the value bytes of a
// utf8/binary array of either offset width (an all-null array built by
// Arrow may lack them: zero offsets then).
func v20BinaryParts(arr arrow.Array, large bool) ([]uint64, []byte) {
	d := arr.Data()
	n, off := d.Len(), d.Offset()
	w := 4
	if large {
		w = 8
	}
	offsets := make([]uint64, n+1)
	var raw, values []byte
	if b := d.Buffers()[1]; b != nil {
		raw = b.Bytes()
	}
	if b := d.Buffers()[2]; b != nil {
		values = b.Bytes()
	}
	if len(raw) < (off+n+1)*w {
		return offsets, nil
	}
	for i := range offsets {
		offsets[i] = v20LoadWord(raw[(off+i)*w:], w)
	}
	return offsets, values
}
