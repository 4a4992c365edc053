package structural

import (
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Repetition and definition level blocks (docs/spec/lance-format.md §8.4, §9.11, §10): one
// encoding per page, chosen from the statistics of all the page's levels,
// applied to each chunk's levels on its own.

// levelKind is how level blocks are compressed.
type levelKind uint8

const (
	levelFlat      levelKind = iota // Flat{16}: raw u16
	levelInline                     // InlineBitpacking{16} (≤ 1024 levels per block)
	levelOutOfLine                  // OutOfLineBitpacking{16, Flat{width}}
	levelRLE                        // Rle{Flat{16}, Flat{8}} block form (2.2)
	levelZstd                       // General{zstd, Flat{16}} (2.2, large blocks)
)

type levelEncoding struct {
	kind  levelKind
	width int // levelOutOfLine
}

// generalBlockMin is the block size from which 2.2 compresses blocks with
// zstd (Lance's MIN_BLOCK_SIZE_FOR_GENERAL_COMPRESSION).
const generalBlockMin = 32 << 10

// chooseLevelEncoding picks the block encoding of a page's levels from
// the statistics of all of them. Lance's strategy tries, in order, (2.2)
// RLE when the runs are fewer than half the levels, then bit-packing
// (inline for at most 1024 levels, else out-of-line at the page's widest
// width), then (2.2) zstd for large blocks, then raw u16. This writer takes
// the same candidates but picks the smallest by estimate, so that a page
// whose runs are many but narrow is bit-packed rather than run-length
// encoded.
func chooseLevelEncoding(levels []uint16, v22 bool) *levelEncoding {
	return chooseLevelEncodingRLE(levels, v22, v22)
}

// chooseLevelEncodingRLE is chooseLevelEncoding with allowRLE false where a
// reader may not take RLE blocks.
func chooseLevelEncodingRLE(levels []uint16, v22, allowRLE bool) *levelEncoding {
	n := len(levels)
	if n == 0 {
		return &levelEncoding{kind: levelFlat}
	}
	best, bestSize := &levelEncoding{kind: levelFlat}, 2*n
	maxWidth, blocks := 0, 0
	for start := 0; start < n; start += codec.BlockLen {
		maxWidth = max(maxWidth, codec.BitWidth(levels[start:min(start+codec.BlockLen, n)]))
		blocks++
	}
	if n <= codec.BlockLen {
		// One inline block: a width word and 128·W bytes.
		if size := 2 + 128*maxWidth; size < bestSize {
			best, bestSize = &levelEncoding{kind: levelInline}, size
		}
	} else if size := (n*maxWidth + 7) / 8; maxWidth > 0 && size < bestSize {
		// (Width 0 would store nothing at all; neither Lance nor lancer
		// reads that back for more than one block.)
		best, bestSize = &levelEncoding{kind: levelOutOfLine, width: maxWidth}, size
	}
	if allowRLE {
		if size := 8 + 3*splitRuns(levels); size < bestSize {
			best, bestSize = &levelEncoding{kind: levelRLE}, size
		}
	}
	if best.kind == levelFlat && v22 && 2*n > generalBlockMin {
		best = &levelEncoding{kind: levelZstd}
	}
	return best
}

func (e *levelEncoding) flat() bool { return e.kind == levelFlat }

func flat16() *enc21pb.CompressiveEncoding {
	return flatEncoding(16)
}

func flatEncoding(bits int) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Flat{Flat: &enc21pb.Flat{BitsPerValue: uint64(bits)}}}
}

// proto returns the encoding as the page layout records it.
func (e *levelEncoding) proto() *enc21pb.CompressiveEncoding {
	switch e.kind {
	case levelInline:
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{
			InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: 16}}}
	case levelOutOfLine:
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{
			OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 16, Values: flatEncoding(e.width)}}}
	case levelRLE:
		return rleEncoding(16)
	case levelZstd:
		return generalEncoding(codec.CompressionZstd, nil, flat16())
	}
	return flat16()
}

// encode compresses one block of levels.
func (e *levelEncoding) encode(levels []uint16) ([]byte, error) {
	switch e.kind {
	case levelInline:
		return codec.EncodeInlineBitpacked(nil, levels), nil
	case levelOutOfLine:
		return codec.EncodeOutOfLineBitpacked(nil, levels, e.width)
	case levelRLE:
		return codec.EncodeRLEBlock(nil, levels), nil
	case levelZstd:
		return codec.Compress(codec.CompressionZstd, 0, codec.EncodeFlat(nil, levels))
	}
	return codec.EncodeFlat(nil, levels), nil
}

func rleEncoding(bits int) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Rle{Rle: &enc21pb.Rle{
		Values: flatEncoding(bits), RunLengths: flatEncoding(8)}}}
}

// generalEncoding wraps inner in General{scheme, level}.
func generalEncoding(scheme codec.CompressionScheme, level *int32, inner *enc21pb.CompressiveEncoding) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
		Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme(scheme), Level: level},
		Values:      inner,
	}}}
}
