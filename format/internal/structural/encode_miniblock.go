package structural

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Mini-block pages (docs/spec/lance-format.md §8.4): values compressed in small chunks, each
// chunk carrying the levels of its items.

// miniEncoder compresses a page's values chunk by chunk.
type miniEncoder interface {
	proto() *enc21pb.CompressiveEncoding
	// buffers is the number of value buffers in each chunk.
	buffers() int
	count() int
	// chunkCap is the number of values (a power of two) a chunk starting
	// at value start should hold.
	chunkCap(start int) int
	encodeChunk(start, n int) ([][]byte, error)
}

// Chunk sizing, as Lance's value encoder does it: double a power-of-two
// count while the chunk's values stay under flatChunkBytes and the count
// under maxChunkValues.
const (
	maxChunkValues = 4096
	flatChunkBytes = 8186
	// binaryChunkBytes is the size variable-width chunks grow past.
	binaryChunkBytes = 4096
	// maxChunk21 bounds a 2.1 chunk (u16 metadata words: 4096 × 8 bytes).
	maxChunk21 = 32 << 10
	// maxChunk22 bounds a 2.2 chunk, well inside the u32 metadata word.
	maxChunk22 = 1 << 30
)

var errChunkTooLarge = errors.New("mini-block chunk too large")

// flatChunkCap returns the values per chunk for values of bits bits.
func flatChunkCap(bits int) int {
	n := 2
	if bits < 8 {
		n = 8
	}
	for n*2 <= maxChunkValues && bytesForBits(2*n*bits) < flatChunkBytes {
		n *= 2
	}
	return n
}

// flatMini: Flat{bits}, one buffer of packed values (bools LSB-first).
type flatMini struct {
	vals *fixedVals
	cap  int
}

func newFlatMini(vals *fixedVals) *flatMini {
	return &flatMini{vals: vals, cap: flatChunkCap(vals.bits)}
}

func (m *flatMini) proto() *enc21pb.CompressiveEncoding { return flatEncoding(m.vals.bits) }
func (m *flatMini) buffers() int                        { return 1 }
func (m *flatMini) count() int                          { return m.vals.n }
func (m *flatMini) chunkCap(int) int                    { return m.cap }
func (m *flatMini) encodeChunk(start, n int) ([][]byte, error) {
	return [][]byte{m.vals.slice(start, n)}, nil
}

// slice returns values [start, start+n) as their own buffer.
func (f *fixedVals) slice(start, n int) []byte {
	if f.bits == 1 {
		return appendBits(nil, 0, f.data, start, n)
	}
	w := f.bits / 8
	return f.data[start*w : (start+n)*w]
}

// bssMini: ByteStreamSplit{Flat{bits}}, byte j of value i at j·n + i.
type bssMini struct{ flatMini }

func (m *bssMini) proto() *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_ByteStreamSplit{
		ByteStreamSplit: &enc21pb.ByteStreamSplit{Values: flatEncoding(m.vals.bits)}}}
}

func (m *bssMini) encodeChunk(start, n int) ([][]byte, error) {
	b, err := codec.EncodeByteStreamSplit(nil, m.vals.slice(start, n), m.vals.bits/8)
	if err != nil {
		return nil, err
	}
	return [][]byte{b}, nil
}

// inlineMini: InlineBitpacking{T}, one 1024-value block per chunk.
type inlineMini[T codec.Word] struct{ vals []T }

func (m *inlineMini[T]) proto() *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{
		InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: uint64(wordSize[T]())}}}
}
func (m *inlineMini[T]) buffers() int     { return 1 }
func (m *inlineMini[T]) count() int       { return len(m.vals) }
func (m *inlineMini[T]) chunkCap(int) int { return codec.BlockLen }
func (m *inlineMini[T]) encodeChunk(start, n int) ([][]byte, error) {
	return [][]byte{codec.EncodeInlineBitpacked(nil, m.vals[start:start+n])}, nil
}

// rleMini: Rle{Flat{T}, Flat{8}}, two buffers per chunk: run values and
// run lengths. Chunks hold at most 2048 values and about 8 KiB of runs.
type rleMini[T codec.Word] struct{ vals []T }

func (m *rleMini[T]) proto() *enc21pb.CompressiveEncoding { return rleEncoding(wordSize[T]()) }
func (m *rleMini[T]) buffers() int                        { return 2 }
func (m *rleMini[T]) count() int                          { return len(m.vals) }
func (m *rleMini[T]) chunkCap(start int) int {
	n := 2048
	for n > 1 {
		runs := splitRuns(m.vals[start:min(start+n, len(m.vals))])
		if runs*(wordSize[T]()/8+1) <= flatChunkBytes {
			break
		}
		n /= 2
	}
	return n
}

func (m *rleMini[T]) encodeChunk(start, n int) ([][]byte, error) {
	values, lengths := codec.EncodeRLE(nil, nil, m.vals[start:start+n])
	return [][]byte{values, lengths}, nil
}

// splitRuns counts runs with runs longer than 255 split, as RLE stores them.
func splitRuns[T codec.Word](v []T) int {
	runs := 0
	for i := 0; i < len(v); {
		j := i + 1
		for j < len(v) && j-i < 255 && v[j] == v[i] {
			j++
		}
		runs++
		i = j
	}
	return runs
}

func wordSize[T codec.Word]() int {
	var zero T
	return bits.Len64(uint64(^zero))
}

// generalMini: General{zstd|lz4, inner}: the first buffer of every chunk
// compressed.
type generalMini struct {
	inner  miniEncoder
	scheme codec.CompressionScheme
	level  *int32
}

func (m *generalMini) proto() *enc21pb.CompressiveEncoding {
	return generalEncoding(m.scheme, m.level, m.inner.proto())
}
func (m *generalMini) buffers() int           { return m.inner.buffers() }
func (m *generalMini) count() int             { return m.inner.count() }
func (m *generalMini) chunkCap(start int) int { return m.inner.chunkCap(start) }
func (m *generalMini) encodeChunk(start, n int) ([][]byte, error) {
	bufs, err := m.inner.encodeChunk(start, n)
	if err != nil {
		return nil, err
	}
	level := 0
	if m.level != nil {
		level = int(*m.level)
	}
	c, err := codec.Compress(m.scheme, level, bufs[0])
	if err != nil {
		return nil, err
	}
	out := append([][]byte{c}, bufs[1:]...)
	return out, nil
}

// varMini: Variable{Flat{32|64}} binary chunks, optionally of FSST
// compressed values (Fsst{table, Variable}).
type varMini struct {
	vals  *varVals
	large bool
	fsst  []byte // the symbol table, when the values are FSST-compressed
}

func (m *varMini) proto() *enc21pb.CompressiveEncoding {
	w := 32
	if m.large {
		w = 64
	}
	v := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEncoding(w)}}}
	if m.fsst == nil {
		return v
	}
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Fsst{Fsst: &enc21pb.Fsst{SymbolTable: m.fsst, Values: v}}}
}
func (m *varMini) buffers() int { return 1 }
func (m *varMini) count() int   { return m.vals.Len() }

func (m *varMini) chunkBytes(start, n int) int {
	w := 4
	if m.large {
		w = 8
	}
	end := min(start+n, m.vals.Len())
	return (end-start+1)*w + int(m.vals.Off[end]-m.vals.Off[start])
}

func (m *varMini) chunkCap(start int) int {
	n := 1
	for n*2 <= maxChunkValues && start+n < m.vals.Len() && m.chunkBytes(start, n) < binaryChunkBytes {
		n *= 2
	}
	return n
}

func (m *varMini) encodeChunk(start, n int) ([][]byte, error) {
	off := m.vals.Off[start : start+n+1]
	if m.large {
		b, err := codec.EncodeBinaryChunk(nil, off, m.vals.Data)
		return [][]byte{b}, err
	}
	narrow := make([]uint32, len(off))
	for i, o := range off {
		narrow[i] = uint32(o)
	}
	if off[len(off)-1] > 1<<32-1 {
		return nil, fmt.Errorf("%d value bytes overflow 32-bit offsets: %w", off[len(off)-1], lancer.ErrUnsupported)
	}
	b, err := codec.EncodeBinaryChunk(nil, narrow, m.vals.Data)
	return [][]byte{b}, err
}

// fslMini: FixedSizeList{d, has_validity, …Flat}: per chunk one validity
// bitmap per list layer with item validity (outermost first), then the
// items.
type fslMini struct{ vals *fslVals }

func (m *fslMini) proto() *enc21pb.CompressiveEncoding { return fslEncoding(m.vals) }
func (m *fslMini) buffers() int {
	n := 1
	for _, v := range m.vals.validity {
		if v != nil {
			n++
		}
	}
	return n
}
func (m *fslMini) count() int       { return m.vals.n }
func (m *fslMini) chunkCap(int) int { return flatChunkCap(m.vals.rowBits()) }
func (m *fslMini) encodeChunk(start, n int) ([][]byte, error) {
	var out [][]byte
	children := 1
	for k, d := range m.vals.dims {
		children *= d
		if v := m.vals.validity[k]; v != nil {
			out = append(out, appendBits(nil, 0, v, start*children, n*children))
		}
	}
	out = append(out, m.vals.items.slice(start*children, n*children))
	return out, nil
}

// fslEncoding is the (nested) FixedSizeList encoding of vals.
func fslEncoding(vals *fslVals) *enc21pb.CompressiveEncoding {
	enc := flatEncoding(vals.items.bits)
	for k := len(vals.dims) - 1; k >= 0; k-- {
		enc = &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_FixedSizeList{FixedSizeList: &enc21pb.FixedSizeList{
			ItemsPerValue: uint64(vals.dims[k]),
			HasValidity:   vals.validity[k] != nil,
			Values:        enc,
		}}}
	}
	return enc
}

// packedMini: PackedStruct{[b1…bk], Flat{Σb}}: rows of the members' bytes.
type packedMini struct {
	vals     *packedVals
	widths   []int // bytes per member
	rowBytes int
}

func newPackedMini(vals *packedVals) (*packedMini, error) {
	m := &packedMini{vals: vals}
	for _, c := range vals.children {
		f, ok := c.(*fixedVals)
		if !ok || f.bits%8 != 0 {
			return nil, fmt.Errorf("packed struct member of variable width in a mini-block page: %w", lancer.ErrUnsupported)
		}
		m.widths = append(m.widths, f.bits/8)
		m.rowBytes += f.bits / 8
	}
	return m, nil
}

func (m *packedMini) proto() *enc21pb.CompressiveEncoding {
	p := &enc21pb.PackedStruct{Values: flatEncoding(8 * m.rowBytes)}
	for _, w := range m.widths {
		p.BitsPerValue = append(p.BitsPerValue, uint64(8*w))
	}
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_PackedStruct{PackedStruct: p}}
}
func (m *packedMini) buffers() int     { return 1 }
func (m *packedMini) count() int       { return m.vals.n }
func (m *packedMini) chunkCap(int) int { return flatChunkCap(8 * m.rowBytes) }
func (m *packedMini) encodeChunk(start, n int) ([][]byte, error) {
	out := make([]byte, 0, n*m.rowBytes)
	for i := start; i < start+n; i++ {
		for c, w := range m.widths {
			out = append(out, m.vals.children[c].(*fixedVals).data[i*w:(i+1)*w]...)
		}
	}
	return [][]byte{out}, nil
}

func packedHasVariable(v *packedVals) bool {
	for _, c := range v.children {
		if _, ok := c.(*varVals); ok {
			return true
		}
	}
	return false
}

// userCompression parses the general compression the field metadata asks
// for: ok is false for none, fsst or nothing.
func userCompression(pg *writePage) (scheme codec.CompressionScheme, level *int32, ok bool, err error) {
	switch c := pg.compression(); c {
	case "", "none", "fsst":
		return 0, nil, false, nil
	case "zstd":
		scheme = codec.CompressionZstd
	case "lz4":
		scheme = codec.CompressionLZ4
	default:
		return 0, nil, false, fmt.Errorf("unknown %s %q: %w", fileio.MetaCompression, c, lancer.ErrInvalidArgument)
	}
	if s, found := pg.meta[fileio.MetaCompressionLevel]; found {
		l, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return 0, nil, false, fmt.Errorf("%s %q: %w", fileio.MetaCompressionLevel, s, lancer.ErrInvalidArgument)
		}
		l32 := int32(l)
		level = &l32
	}
	return scheme, level, true, nil
}

// newFixedMini chooses the mini-block encoding of fixed-width values
// (docs/spec/lance-format.md §9.11): byte stream split under requested general compression,
// else RLE when runs are few, else bit-packing when it shrinks, else flat;
// general compression around it when asked for.
func newFixedMini(pg *writePage, vals *fixedVals) (miniEncoder, error) {
	scheme, level, general, err := userCompression(pg)
	if err != nil {
		return nil, err
	}
	var base miniEncoder
	switch {
	case pg.compression() == "none" || (vals.bits != 8 && vals.bits != 16 && vals.bits != 32 && vals.bits != 64):
		base = newFlatMini(vals)
	case general && (vals.bits == 32 || vals.bits == 64):
		base = &bssMini{*newFlatMini(vals)}
	default:
		base, err = chooseWordEncoding(vals)
		if err != nil {
			return nil, err
		}
	}
	if general {
		return &generalMini{inner: base, scheme: scheme, level: level}, nil
	}
	return base, nil
}

// chooseWordEncoding picks RLE, inline bit-packing or flat for 8- to
// 64-bit values by their estimated sizes, as Lance's strategy does.
func chooseWordEncoding(vals *fixedVals) (miniEncoder, error) {
	switch vals.bits {
	case 8:
		return chooseWords[uint8](vals)
	case 16:
		return chooseWords[uint16](vals)
	case 32:
		return chooseWords[uint32](vals)
	}
	return chooseWords[uint64](vals)
}

func chooseWords[T codec.Word](vals *fixedVals) (miniEncoder, error) {
	words, err := pageWords[T](vals)
	if err != nil {
		return nil, err
	}
	n := len(words)
	w := wordSize[T]() / 8
	raw := n * w
	bitpack := bitpackEstimate(words)
	runs := codec.CountRuns(words)
	pairs := min(runs+n/255, n)
	rle := pairs * (w + 1)
	if rle < raw && !(bitpack < rle) {
		return &rleMini[T]{vals: words}, nil
	}
	if bitpack < raw {
		return &inlineMini[T]{vals: words}, nil
	}
	return newFlatMini(vals), nil
}

// pageWords returns the page's values as words: a view of vals.data when
// it is aligned for T (the page's own gathered buffer, which nothing
// writes once the encoder is chosen), else a copy. The copy was a second
// page-sized buffer for every fixed-width page written (issue #17). Like
// wordsAsBytes it assumes a little-endian host.
func pageWords[T codec.Word](vals *fixedVals) ([]T, error) {
	size := int(unsafe.Sizeof(T(0)))
	src := vals.data[:vals.n*size]
	if vals.n > 0 && uintptr(unsafe.Pointer(&src[0]))%uintptr(size) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(&src[0])), vals.n), nil
	}
	return codec.DecodeFlat[T](nil, src, vals.n)
}

// bitpackEstimate is the size of words inline bit-packed (whole blocks).
func bitpackEstimate[T codec.Word](words []T) int {
	w := wordSize[T]()
	total := 0
	for start := 0; start < len(words); start += codec.BlockLen {
		width := codec.BitWidth(words[start:min(start+codec.BlockLen, len(words))])
		total += (1 + codec.BlockLen*width/w) * w / 8
	}
	return total
}

// newVarMini chooses the mini-block encoding of variable-width values:
// FSST for strings when it pays (or is asked for), general compression
// around it when asked for.
func newVarMini(pg *writePage, vals *varVals, maxLen int) (miniEncoder, error) {
	scheme, level, general, err := userCompression(pg)
	if err != nil {
		return nil, err
	}
	var base miniEncoder = &varMini{vals: vals, large: vals.large}
	comp := pg.compression()
	useFSST := comp == "fsst" || (comp == "" && isString(pg.spec) && maxLen >= fsstMinMaxLen && len(vals.Data) >= codec.FSSTMinInputSize)
	if useFSST {
		if f := fsstCompress(vals); f != nil {
			base = f
		}
	}
	if general {
		return &generalMini{inner: base, scheme: scheme, level: level}, nil
	}
	return base, nil
}

// fsstMinMaxLen: FSST only pays when some value is at least this long
// (Lance's FSST_LEAST_INPUT_MAX_LENGTH).
const fsstMinMaxLen = 5

// isString reports whether the leaf holds strings (Lance leaves binary
// values out of automatic FSST).
func isString(spec *leafSpec) bool {
	id := spec.dt.ID()
	return id == arrow.STRING || id == arrow.LARGE_STRING
}

// fsstCompress compresses every value with one symbol table, or returns
// nil when that does not shrink the page.
func fsstCompress(vals *varVals) *varMini {
	table, off, data, err := codec.FSSTEncodeAll(vals.Off, vals.Data)
	if err != nil {
		return nil
	}
	if len(data)+codec.FSSTTableSize >= len(vals.Data) {
		return nil
	}
	return &varMini{vals: &varVals{large: vals.large, Off: off, Data: data}, large: vals.large, fsst: table.Bytes()}
}

// encodeMiniBlock encodes a mini-block page: enc's chunks with the levels of
// their items, the chunk metadata, the dictionary (if any) and the
// repetition index.
func encodeMiniBlock(pg *writePage, enc miniEncoder, dict *encodedDict) ([][]byte, *enc21pb.PageLayout, error) {
	total := enc.count()
	if total != pg.values {
		return nil, nil, fmt.Errorf("mini-block encoder holds %d values, the page %d: %w", total, pg.values, lancer.ErrInvalidArgument)
	}
	var repEnc, defEnc *levelEncoding
	if pg.rep != nil {
		repEnc = chooseLevelEncoding(pg.rep, pg.v22)
	}
	if pg.def != nil {
		defEnc = chooseLevelEncoding(pg.def, pg.v22)
	}
	// itemEnd is the item after the one of visible value valueEnd-1 (when
	// items and values differ), found by walking the definition levels
	// from the chunk's first item: a table of every value's item cost 8
	// bytes a value, twice the values of a page of 32-bit ones (issue #17).
	// pos and item (below) are the chunk's first value and item.
	var pos, item int
	sparse := pg.def != nil && pg.items != pg.values
	itemEnd := func(valueEnd int, last bool) int {
		switch {
		case last:
			return pg.items
		case sparse:
			v := pos
			for i := item; i < pg.items; i++ {
				if pg.def[i] <= pg.maxVisible {
					if v++; v == valueEnd {
						return i + 1
					}
				}
			}
			return pg.items
		}
		return valueEnd
	}
	limit := maxChunk21
	if pg.v22 {
		limit = maxChunk22
	}
	var meta, data []byte
	var repIndex []uint64
	for pos < total {
		n := min(enc.chunkCap(pos), total-pos)
		for {
			last := pos+n == total
			end := itemEnd(pos+n, last)
			grown, err := buildChunk(data, pg, enc, pos, n, item, end, repEnc, defEnc, limit)
			if errors.Is(err, errChunkTooLarge) && n > 1 {
				n = 1 << (bits.Len(uint(n-1)) - 1) // the largest power of two below n
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			word := uint32((len(grown)-len(data))/miniBlockAlign-1) << 4
			if !last {
				word |= uint32(bits.TrailingZeros(uint(n)))
			}
			if pg.v22 {
				meta = binary.LittleEndian.AppendUint32(meta, word)
			} else {
				meta = binary.LittleEndian.AppendUint16(meta, uint16(word))
			}
			if pos == 0 && !last {
				// The chunks are alike: reserve the page's bytes from
				// the first (one chunk over) rather than grow by
				// doubling, which allocated twice them. A first chunk
				// unlike the rest (one long value) must not reserve
				// more than the page's input holds.
				in := 0
				for _, p := range pg.pieces {
					in += p.bytes
				}
				grown = slices.Grow(grown, min(len(grown)*((total+n-1)/n), max(in, len(grown))))
			}
			data = grown
			if pg.rep != nil {
				repIndex = appendRepIndex(repIndex, pg.rep[item:end], pg.spec.maxRep, item == 0, last)
			}
			pos += n
			item = end
			break
		}
	}
	l := &enc21pb.MiniBlockLayout{
		ValueCompression: enc.proto(),
		Layers:           pg.layers,
		NumBuffers:       uint64(enc.buffers()),
		NumItems:         uint64(total),
		HasLargeChunk:    pg.v22,
	}
	if repEnc != nil {
		l.RepCompression = repEnc.proto()
		l.RepetitionIndexDepth = 1
	}
	if defEnc != nil {
		l.DefCompression = defEnc.proto()
	}
	bufs := [][]byte{meta, data}
	if dict != nil {
		l.Dictionary = dict.encoding
		l.NumDictionaryItems = uint64(dict.items)
		bufs = append(bufs, dict.block)
	}
	if pg.rep != nil {
		ri := make([]byte, 0, 8*len(repIndex))
		for _, v := range repIndex {
			ri = binary.LittleEndian.AppendUint64(ri, v)
		}
		bufs = append(bufs, ri)
	}
	return bufs, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_MiniBlockLayout{MiniBlockLayout: l}}, nil
}

// chunkPad is what Lance fills chunk padding with.
const chunkPad = 0xFE

// buildChunk appends one chunk to dst: values [pos, pos+n) and items
// [itemStart, itemEnd). On error dst is left as it was.
func buildChunk(dst []byte, pg *writePage, enc miniEncoder, pos, n, itemStart, itemEnd int, repEnc, defEnc *levelEncoding, limit int) ([]byte, error) {
	vbufs, err := enc.encodeChunk(pos, n)
	if err != nil {
		return nil, err
	}
	var rep, def []byte
	if repEnc != nil {
		if rep, err = repEnc.encode(pg.rep[itemStart:itemEnd]); err != nil {
			return nil, err
		}
	}
	if defEnc != nil {
		if def, err = defEnc.encode(pg.def[itemStart:itemEnd]); err != nil {
			return nil, err
		}
	}
	levels := 0
	if repEnc != nil || defEnc != nil {
		levels = itemEnd - itemStart
	}
	if (!pg.v22 && levels > 0xFFFF) || len(rep) > 0xFFFF || len(def) > 0xFFFF {
		return nil, errChunkTooLarge
	}
	size := 2
	if repEnc != nil {
		size += 2
	}
	if defEnc != nil {
		size += 2
	}
	sizeWidth := 2
	if pg.v22 {
		sizeWidth = 4
	}
	size += sizeWidth * len(vbufs)
	size = alignUp(size, miniBlockAlign)
	if repEnc != nil {
		size += alignUp(len(rep), miniBlockAlign)
	}
	if defEnc != nil {
		size += alignUp(len(def), miniBlockAlign)
	}
	for _, b := range vbufs {
		if !pg.v22 && len(b) > 0xFFFF {
			return nil, errChunkTooLarge
		}
		size += alignUp(len(b), miniBlockAlign)
	}
	if size > limit {
		return nil, errChunkTooLarge
	}
	out := slices.Grow(dst, size)
	out = binary.LittleEndian.AppendUint16(out, uint16(levels))
	if repEnc != nil {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(rep)))
	}
	if defEnc != nil {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(def)))
	}
	for _, b := range vbufs {
		if pg.v22 {
			out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		} else {
			out = binary.LittleEndian.AppendUint16(out, uint16(len(b)))
		}
	}
	out = padTo(out, miniBlockAlign)
	if repEnc != nil {
		out = padTo(append(out, rep...), miniBlockAlign)
	}
	if defEnc != nil {
		out = padTo(append(out, def...), miniBlockAlign)
	}
	for _, b := range vbufs {
		out = padTo(append(out, b...), miniBlockAlign)
	}
	return out, nil
}

func padTo(b []byte, align int) []byte {
	for len(b)%align != 0 {
		b = append(b, chunkPad)
	}
	return b
}

// appendRepIndex appends one chunk's repetition index entry, [rows
// completed in the chunk, entries left over for the next], computed as
// Lance does: row starts after the chunk's first entry each complete a
// row, the last chunk completes its final row, and a chunk that starts a
// row turns the previous chunk's leftovers into a completed row.
func appendRepIndex(index []uint64, rep []uint16, maxRep uint16, first, last bool) []uint64 {
	rows := uint64(0)
	for i := 1; i < len(rep); i++ {
		if rep[i] == maxRep {
			rows++
		}
	}
	leftover := uint64(0)
	if !last {
		leftover = uint64(len(rep))
		for i := len(rep) - 1; i >= 0; i-- {
			if rep[i] == maxRep {
				leftover = uint64(len(rep) - i)
				break
			}
		}
	}
	if !first && len(rep) > 0 && rep[0] == maxRep && len(index) >= 2 && index[len(index)-1] != 0 {
		index[len(index)-2]++
		index[len(index)-1] = 0
	}
	if last {
		rows++
	}
	return append(index, rows, leftover)
}
