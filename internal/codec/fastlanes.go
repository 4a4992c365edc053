package codec

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Word is an unsigned integer type that bit-packing, RLE and the other
// fixed-width codecs operate on: the "T" of the Lance encodings. Signed
// integers and floats are handled through their raw bit patterns.
type Word interface {
	uint8 | uint16 | uint32 | uint64
}

// BlockLen is the number of values in one FastLanes block. Every bit-packed
// buffer is made of whole blocks; a short final block is zero-padded.
const BlockLen = 1024

// flOrder is the row permutation of the FastLanes transposed layout: row r of
// lane l holds input value flOrder[r/8]*16 + (r%8)*128 + l. It must match the
// Rust fastlanes crate (which Lance vendors) bit for bit.
var flOrder = [8]int{0, 4, 2, 6, 1, 5, 3, 7}

// wordBits returns the width of T in bits (8, 16, 32 or 64).
func wordBits[T Word]() int {
	var zero T
	return bits.Len64(uint64(^zero))
}

// PackedWords returns how many T-bit words one 1024-value block occupies when
// packed at width bits: 1024·width/T. In bytes that is always 128·width.
func PackedWords[T Word](width int) int {
	return BlockLen / wordBits[T]() * width
}

// BitWidth returns the number of bits needed to hold every value: the bit
// length of their bitwise OR. It is the W a writer packs a block with.
func BitWidth[T Word](values []T) int {
	var acc T
	for _, v := range values {
		acc |= v
	}
	return bits.Len64(uint64(acc))
}

// Pack packs one block of 1024 values into PackedWords[T](width) words using
// the FastLanes layout. Bits of a value above width are dropped. packed must
// hold exactly PackedWords[T](width) words and values at least 1024.
func Pack[T Word](width int, values, packed []T) error {
	t := wordBits[T]()
	if width < 0 || width > t {
		return invalidf("fastlanes: cannot pack %d-bit words at width %d", t, width)
	}
	lanes := BlockLen / t
	if len(values) < BlockLen {
		return invalidf("fastlanes: pack needs %d values, got %d", BlockLen, len(values))
	}
	if want := lanes * width; len(packed) != want {
		return invalidf("fastlanes: pack at width %d needs %d words, got %d", width, want, len(packed))
	}
	clear(packed)
	if width == 0 {
		return nil
	}
	mask := ^T(0) >> uint(t-width)
	// Lane l of the output is a little bit stream of T rows, each row holding
	// one value at bit row·W. Walking row by row keeps the inner loop over
	// lanes contiguous in both the input (a run of 1024/T values) and the
	// output (one word per lane).
	for row := 0; row < t; row++ {
		bit := row * width
		word, shift := bit/t, uint(bit%t)
		first := flOrder[row/8]*16 + (row%8)*128
		src := values[first : first+lanes]
		lo := packed[lanes*word : lanes*word+lanes]
		lo = lo[:len(src)]
		if int(shift)+width <= t {
			for lane, v := range src {
				lo[lane] |= (v & mask) << shift
			}
			continue
		}
		// The value straddles two words of its lane: the low part ends the
		// current word, the high part starts the next one.
		hi := packed[lanes*(word+1) : lanes*(word+1)+lanes]
		hi = hi[:len(src)]
		back := uint(t) - shift
		for lane, v := range src {
			v &= mask
			lo[lane] |= v << shift
			hi[lane] |= v >> back
		}
	}
	return nil
}

// Unpack reverses Pack: it expands PackedWords[T](width) words into the 1024
// values of one block, written to out[:1024].
func Unpack[T Word](width int, packed, out []T) error {
	t := wordBits[T]()
	if width < 0 || width > t {
		return corruptf("fastlanes: bit width %d out of range for %d-bit values", width, t)
	}
	if want := BlockLen / t * width; len(packed) != want {
		return corruptf("fastlanes: %d words do not hold 1024 values of width %d (want %d %d-bit words)",
			len(packed), width, want, t)
	}
	if len(out) < BlockLen {
		return invalidf("fastlanes: unpack needs room for %d values, got %d", BlockLen, len(out))
	}
	if width == 0 {
		clear(out[:BlockLen])
		return nil
	}
	// 32- and 64-bit values are what integer scans unpack; their kernels
	// are written out with constant lane counts, which lets the compiler
	// drop bounds and shift-range checks (about 1.6x faster than generic).
	switch p := any(packed).(type) {
	case []uint32:
		unpack32(width, p, any(out).([]uint32))
	case []uint64:
		unpack64(width, p, any(out).([]uint64))
	default:
		unpackGeneric(width, packed, out)
	}
	return nil
}

// unpackGeneric is Unpack's kernel for any word size. Like Pack it walks
// row by row so the inner loop runs over contiguous lanes.
func unpackGeneric[T Word](width int, packed, out []T) {
	t := wordBits[T]()
	lanes := BlockLen / t
	mask := ^T(0) >> uint(t-width)
	for row := 0; row < t; row++ {
		bit := row * width
		word, shift := bit/t, uint(bit%t)
		first := flOrder[row/8]*16 + (row%8)*128
		dst := out[first : first+lanes]
		lo := packed[lanes*word : lanes*word+lanes]
		dst = dst[:len(lo)]
		if int(shift)+width <= t {
			for lane, v := range lo {
				dst[lane] = (v >> shift) & mask
			}
			continue
		}
		hi := packed[lanes*(word+1) : lanes*(word+1)+lanes]
		hi = hi[:len(lo)]
		back := uint(t) - shift
		for lane, v := range lo {
			dst[lane] = (v>>shift | hi[lane]<<back) & mask
		}
	}
}

// unpack32 is unpackGeneric for T = 32 (32 lanes), unrolled by four.
func unpack32(width int, packed, out []uint32) {
	const t, lanes = 32, 32
	mask := ^uint32(0) >> uint(t-width)
	for row := 0; row < t; row++ {
		bit := row * width
		word, shift := bit/t, uint(bit%t)&(t-1)
		first := flOrder[row/8]*16 + (row%8)*128
		dst := (*[lanes]uint32)(out[first : first+lanes])
		lo := (*[lanes]uint32)(packed[lanes*word : lanes*word+lanes])
		if int(shift)+width <= t {
			for l := 0; l < lanes; l += 4 {
				dst[l] = lo[l] >> shift & mask
				dst[l+1] = lo[l+1] >> shift & mask
				dst[l+2] = lo[l+2] >> shift & mask
				dst[l+3] = lo[l+3] >> shift & mask
			}
			continue
		}
		hi := (*[lanes]uint32)(packed[lanes*(word+1) : lanes*(word+1)+lanes])
		back := (t - shift) & (t - 1)
		for l := 0; l < lanes; l += 4 {
			dst[l] = (lo[l]>>shift | hi[l]<<back) & mask
			dst[l+1] = (lo[l+1]>>shift | hi[l+1]<<back) & mask
			dst[l+2] = (lo[l+2]>>shift | hi[l+2]<<back) & mask
			dst[l+3] = (lo[l+3]>>shift | hi[l+3]<<back) & mask
		}
	}
}

// unpack64 is unpackGeneric for T = 64 (16 lanes), unrolled by four.
func unpack64(width int, packed, out []uint64) {
	const t, lanes = 64, 16
	mask := ^uint64(0) >> uint(t-width)
	for row := 0; row < t; row++ {
		bit := row * width
		word, shift := bit/t, uint(bit%t)&(t-1)
		first := flOrder[row/8]*16 + (row%8)*128
		dst := (*[lanes]uint64)(out[first : first+lanes])
		lo := (*[lanes]uint64)(packed[lanes*word : lanes*word+lanes])
		if int(shift)+width <= t {
			for l := 0; l < lanes; l += 4 {
				dst[l] = lo[l] >> shift & mask
				dst[l+1] = lo[l+1] >> shift & mask
				dst[l+2] = lo[l+2] >> shift & mask
				dst[l+3] = lo[l+3] >> shift & mask
			}
			continue
		}
		hi := (*[lanes]uint64)(packed[lanes*(word+1) : lanes*(word+1)+lanes])
		back := (t - shift) & (t - 1)
		for l := 0; l < lanes; l += 4 {
			dst[l] = (lo[l]>>shift | hi[l]<<back) & mask
			dst[l+1] = (lo[l+1]>>shift | hi[l+1]<<back) & mask
			dst[l+2] = (lo[l+2]>>shift | hi[l+2]<<back) & mask
			dst[l+3] = (lo[l+3]>>shift | hi[l+3]<<back) & mask
		}
	}
}

// littleEndianHost reports whether in-memory words have the file's byte
// order, so words and bytes can be converted with a plain copy.
var littleEndianHost = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordBytes views words as their in-memory bytes.
func wordBytes[T Word](words []T) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*int(unsafe.Sizeof(words[0])))
}

// loadWords decodes len(dst) little-endian T-bit words from src, which must
// hold at least that many.
func loadWords[T Word](dst []T, src []byte) {
	if littleEndianHost {
		raw := wordBytes(dst)
		copy(raw, src[:len(raw)])
		return
	}
	switch d := any(dst).(type) {
	case []uint8:
		copy(d, src)
	case []uint16:
		for i := range d {
			d[i] = binary.LittleEndian.Uint16(src[2*i:])
		}
	case []uint32:
		for i := range d {
			d[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
	case []uint64:
		for i := range d {
			d[i] = binary.LittleEndian.Uint64(src[8*i:])
		}
	}
}

// appendWords appends the little-endian bytes of words to dst.
func appendWords[T Word](dst []byte, words []T) []byte {
	if littleEndianHost {
		return append(dst, wordBytes(words)...)
	}
	switch w := any(words).(type) {
	case []uint8:
		dst = append(dst, w...)
	case []uint16:
		for _, v := range w {
			dst = binary.LittleEndian.AppendUint16(dst, v)
		}
	case []uint32:
		for _, v := range w {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	case []uint64:
		for _, v := range w {
			dst = binary.LittleEndian.AppendUint64(dst, v)
		}
	}
	return dst
}

// loadWord decodes one little-endian T-bit word from the start of src.
func loadWord[T Word](src []byte) T {
	var w [1]T
	loadWords(w[:], src)
	return w[0]
}
