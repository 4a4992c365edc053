package codec

import (
	"math"
	"slices"
	"sync"
)

// DecodeInlineBitpacked decodes n values stored as InlineBitpacking and
// appends them to dst. src is a sequence of blocks, each one T-bit width word W
// followed by 128·W bytes of FastLanes-packed data; the last block carries the
// n mod 1024 leftover values, zero-padded. src must be consumed exactly.
func DecodeInlineBitpacked[T Word](dst []T, src []byte, n int) ([]T, error) {
	t := wordBits[T]()
	wordBytes := t / 8
	if n < 0 {
		return dst, invalidf("inline bitpacking: negative value count %d", n)
	}
	blocks := n / BlockLen
	if n%BlockLen != 0 {
		blocks++
	}
	// Every block has at least its width word; checking that first bounds the
	// allocation below by the input length.
	if len(src)/wordBytes < blocks {
		return dst, corruptf("inline bitpacking: buffer of %d bytes too short for %d values (%d blocks of %d-bit words)",
			len(src), n, blocks, t)
	}
	out := slices.Grow(dst, n)
	s := getScratch[T]()
	defer putScratch(s)
	packed, partial := &s.packed, &s.partial
	pos := 0
	for block := range blocks {
		if len(src)-pos < wordBytes {
			return dst, corruptf("inline bitpacking: block %d of %d starts at byte %d past the end of a %d-byte buffer",
				block, blocks, pos, len(src))
		}
		width := uint64(loadWord[T](src[pos:]))
		pos += wordBytes
		if width > uint64(t) {
			return dst, corruptf("inline bitpacking: block %d has bit width %d, more than %d", block, width, t)
		}
		words := PackedWords[T](int(width))
		size := words * wordBytes
		if len(src)-pos < size {
			return dst, corruptf("inline bitpacking: block %d of width %d needs %d bytes, only %d left",
				block, width, size, len(src)-pos)
		}
		loadWords(packed[:words], src[pos:pos+size])
		pos += size
		count := min(BlockLen, n-block*BlockLen)
		if count == BlockLen {
			start := len(out)
			out = out[:start+BlockLen]
			if err := Unpack(int(width), packed[:words], out[start:]); err != nil {
				return dst, err
			}
			continue
		}
		if err := Unpack(int(width), packed[:words], partial[:]); err != nil {
			return dst, err
		}
		out = append(out, partial[:count]...)
	}
	if pos != len(src) {
		return dst, corruptf("inline bitpacking: %d trailing bytes after %d values", len(src)-pos, n)
	}
	return out, nil
}

// EncodeInlineBitpacked appends the InlineBitpacking form of values to dst:
// per 1024-value block (the last one zero-padded) a T-bit word holding the
// block's bit width W, then the block packed at W bits.
func EncodeInlineBitpacked[T Word](dst []byte, values []T) []byte {
	var block, packed [BlockLen]T
	for start := 0; start < len(values); start += BlockLen {
		chunk := values[start:min(start+BlockLen, len(values))]
		copy(block[:], chunk)
		clear(block[len(chunk):])
		width := BitWidth(block[:])
		words := packed[:PackedWords[T](width)]
		_ = Pack(width, block[:], words) // width comes from the data, so it fits.
		dst = appendWords(dst, []T{T(width)})
		dst = appendWords(dst, words)
	}
	return dst
}

// DecodeOutOfLineBitpacked decodes n values stored as OutOfLineBitpacking
// with one bit width for the whole buffer and appends them to dst. The buffer
// holds ⌊n/1024⌋ packed blocks of 128·width bytes, then the n mod 1024
// leftover values either packed as one more zero-padded block or raw (T bits
// each). The buffer length tells the two apart; when both forms have the same
// length the tail is raw, as in Lance.
func DecodeOutOfLineBitpacked[T Word](dst []T, src []byte, width, n int) ([]T, error) {
	t := wordBits[T]()
	wordBytes := t / 8
	if n < 0 {
		return dst, invalidf("out-of-line bitpacking: negative value count %d", n)
	}
	if n > math.MaxInt/8 {
		// The sizes below would overflow; no buffer can be that large.
		return dst, invalidf("out-of-line bitpacking: value count %d too large", n)
	}
	if width < 0 || width > t {
		return dst, corruptf("out-of-line bitpacking: bit width %d out of range for %d-bit values", width, t)
	}
	whole, tail := n/BlockLen, n%BlockLen
	blockBytes := BlockLen / 8 * width
	rawSize := whole*blockBytes + tail*wordBytes
	packedSize := whole * blockBytes
	if tail > 0 {
		packedSize += blockBytes
	}
	rawTail := tail > 0 && len(src) == rawSize
	if !rawTail && len(src) != packedSize {
		if tail == 0 {
			return dst, corruptf("out-of-line bitpacking: buffer of %d bytes for %d values of width %d, want %d",
				len(src), n, width, packedSize)
		}
		return dst, corruptf("out-of-line bitpacking: buffer of %d bytes for %d values of width %d, want %d (packed tail) or %d (raw tail)",
			len(src), n, width, packedSize, rawSize)
	}
	out := slices.Grow(dst, n)
	s := getScratch[T]()
	defer putScratch(s)
	packed, partial := &s.packed, &s.partial
	words := PackedWords[T](width)
	for block := range whole {
		loadWords(packed[:words], src[block*blockBytes:])
		start := len(out)
		out = out[:start+BlockLen]
		if err := Unpack(width, packed[:words], out[start:]); err != nil {
			return dst, err
		}
	}
	if tail == 0 {
		return out, nil
	}
	rest := src[whole*blockBytes:]
	if rawTail {
		start := len(out)
		out = out[:start+tail]
		loadWords(out[start:], rest)
		// A writer picks the width from all values, raw tail included, so
		// a wider tail value means the width or the data is damaged.
		if need := BitWidth(out[start:]); need > width {
			return dst, corruptf("out-of-line bitpacking: raw tail value needs %d bits, more than the width %d",
				need, width)
		}
		return out, nil
	}
	loadWords(packed[:words], rest)
	if err := Unpack(width, packed[:words], partial[:]); err != nil {
		return dst, err
	}
	return append(out, partial[:tail]...), nil
}

// EncodeOutOfLineBitpacked appends values packed at one bit width to dst in
// the OutOfLineBitpacking layout. The leftover values after the last whole
// block are packed as a zero-padded block only when that is strictly smaller
// than storing them raw (width·(1024−r) < (T−width)·r), matching Lance's
// writer. Every value must fit in width bits.
func EncodeOutOfLineBitpacked[T Word](dst []byte, values []T, width int) ([]byte, error) {
	t := wordBits[T]()
	if width < 0 || width > t {
		return dst, invalidf("out-of-line bitpacking: bit width %d out of range for %d-bit values", width, t)
	}
	if need := BitWidth(values); need > width {
		return dst, invalidf("out-of-line bitpacking: values need %d bits, more than width %d", need, width)
	}
	var block, packed [BlockLen]T
	words := packed[:PackedWords[T](width)]
	whole := len(values) / BlockLen
	for i := range whole {
		_ = Pack(width, values[i*BlockLen:(i+1)*BlockLen], words)
		dst = appendWords(dst, words)
	}
	tail := values[whole*BlockLen:]
	if len(tail) == 0 {
		return dst, nil
	}
	if r := len(tail); width*(BlockLen-r) < (t-width)*r {
		copy(block[:], tail)
		clear(block[r:])
		_ = Pack(width, block[:], words)
		return appendWords(dst, words), nil
	}
	return appendWords(dst, tail), nil
}

// unpackScratch is where the decoders stage a block's packed words and a
// partial last block. It used to be two [BlockLen]T arrays on the stack:
// 16 KiB of frame for 64-bit words, which made every goroutine that
// decoded a page (a take's per-fragment readers among them) grow and copy
// its stack, about 10% of an indexed search's CPU.
type unpackScratch[T Word] struct {
	packed, partial [BlockLen]T
}

var (
	scratch8  = sync.Pool{New: func() any { return new(unpackScratch[uint8]) }}
	scratch16 = sync.Pool{New: func() any { return new(unpackScratch[uint16]) }}
	scratch32 = sync.Pool{New: func() any { return new(unpackScratch[uint32]) }}
	scratch64 = sync.Pool{New: func() any { return new(unpackScratch[uint64]) }}
)

func scratchPool[T Word]() *sync.Pool {
	switch any(T(0)).(type) {
	case uint8:
		return &scratch8
	case uint16:
		return &scratch16
	case uint32:
		return &scratch32
	default:
		return &scratch64
	}
}

func getScratch[T Word]() *unpackScratch[T] {
	return scratchPool[T]().Get().(*unpackScratch[T])
}

func putScratch[T Word](s *unpackScratch[T]) { scratchPool[T]().Put(s) }
