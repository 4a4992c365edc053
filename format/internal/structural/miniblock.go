package structural

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Mini-block layout (docs/spec/lance-format.md §8.4, §10).
//
// Page buffers:
//
//	0     chunk metadata: one word per chunk, u16 (u32 with has_large_chunk):
//	      ((chunk bytes / 8 − 1) << 4) | log2(values in chunk); the last
//	      chunk's count is num_items minus the others
//	1     the chunks back to back, each a multiple of 8 bytes
//	2     the dictionary, when the layout has one
//	last  the repetition index, when repetition_index_depth > 0
//
// A chunk is
//
//	u16 num_levels | u16 rep bytes? | u16 def bytes? | value buffer sizes (u16, or u32 with has_large_chunk)
//	pad to 8 | rep levels, pad to 8 | def levels, pad to 8 | each value buffer, pad to 8
//
// and holds a power-of-two number of values (except the last chunk) plus
// the levels from the end of the previous chunk's levels through the level
// of its last value: invisible items after a chunk's last value belong to
// the next chunk.

// miniBlockAlign is the alignment of chunks and of the buffers inside them.
const miniBlockAlign = 8

// miniChunk locates one chunk inside the chunk buffer.
type miniChunk struct {
	Offset, Size int
	Values       int
}

// parseChunkMetadata reads the chunk metadata words and places the chunks
// in a chunk buffer of dataLen bytes. numValues is the page's value count
// (MiniBlockLayout.num_items).
func parseChunkMetadata(meta []byte, dataLen int, numValues uint64, large bool) ([]miniChunk, error) {
	wordSize := 2
	if large {
		wordSize = 4
	}
	if len(meta)%wordSize != 0 {
		return nil, pageCorruptf("chunk metadata of %d bytes is not a whole number of %d-byte words", len(meta), wordSize)
	}
	if numValues > maxPageItems {
		return nil, pageCorruptf("mini-block page claims %d values", numValues)
	}
	n := len(meta) / wordSize
	if n == 0 && numValues > 0 {
		return nil, pageCorruptf("no chunks for %d values", numValues)
	}
	chunks := make([]miniChunk, n)
	offset, seen := 0, 0
	for i := range chunks {
		var word uint64
		if large {
			word = uint64(binary.LittleEndian.Uint32(meta[4*i:]))
		} else {
			word = uint64(binary.LittleEndian.Uint16(meta[2*i:]))
		}
		size := int((word>>4)+1) * miniBlockAlign
		log := int(word & 0xF)
		if size > dataLen-offset {
			return nil, pageCorruptf("chunk %d of %d bytes at %d runs past the %d-byte chunk buffer", i, size, offset, dataLen)
		}
		values := 1 << log
		if i == n-1 {
			rest := int(numValues) - seen
			if rest < 0 || log != 0 && values != rest {
				return nil, pageCorruptf("last chunk word %#x does not fit the %d values left of %d", word, rest, numValues)
			}
			values = rest
		} else if seen += values; uint64(seen) > numValues {
			return nil, pageCorruptf("chunks before chunk %d hold %d values, more than the page's %d", i+1, seen, numValues)
		}
		chunks[i] = miniChunk{Offset: offset, Size: size, Values: values}
		offset += size
	}
	if offset != dataLen {
		return nil, pageCorruptf("chunks take %d bytes of a %d-byte chunk buffer", offset, dataLen)
	}
	return chunks, nil
}

// chunkParts are the pieces of one chunk.
type chunkParts struct {
	numLevels int
	rep, def  []byte // nil when the page has no such levels
	values    [][]byte
}

// parseChunk splits a chunk into its level and value buffers.
func parseChunk(chunk []byte, hasRep, hasDef bool, numBuffers int, large bool) (chunkParts, error) {
	sizeWidth := 2
	if large {
		sizeWidth = 4
	}
	header := 2 + numBuffers*sizeWidth
	if hasRep {
		header += 2
	}
	if hasDef {
		header += 2
	}
	if header > len(chunk) {
		return chunkParts{}, pageCorruptf("chunk header of %d bytes in a %d-byte chunk", header, len(chunk))
	}
	p := chunkParts{numLevels: int(binary.LittleEndian.Uint16(chunk))}
	pos := 2
	u16 := func() int {
		v := int(binary.LittleEndian.Uint16(chunk[pos:]))
		pos += 2
		return v
	}
	repSize, defSize := 0, 0
	if hasRep {
		repSize = u16()
	}
	if hasDef {
		defSize = u16()
	}
	sizes := make([]int, numBuffers)
	for i := range sizes {
		if large {
			sizes[i] = int(binary.LittleEndian.Uint32(chunk[pos:]))
			pos += 4
		} else {
			sizes[i] = u16()
		}
	}
	pos = alignUp(pos, miniBlockAlign)
	take := func(size int, what string) ([]byte, error) {
		if pos > len(chunk) || size > len(chunk)-pos {
			return nil, pageCorruptf("%s of %d bytes at %d runs past the %d-byte chunk", what, size, pos, len(chunk))
		}
		b := chunk[pos : pos+size : pos+size]
		pos = alignUp(pos+size, miniBlockAlign)
		return b, nil
	}
	var err error
	if hasRep {
		if p.rep, err = take(repSize, "repetition levels"); err != nil {
			return chunkParts{}, err
		}
	}
	if hasDef {
		if p.def, err = take(defSize, "definition levels"); err != nil {
			return chunkParts{}, err
		}
	}
	p.values = make([][]byte, numBuffers)
	for i, size := range sizes {
		if p.values[i], err = take(size, "value buffer"); err != nil {
			return chunkParts{}, err
		}
	}
	if pos != len(chunk) {
		return chunkParts{}, pageCorruptf("chunk of %d bytes ends at %d", len(chunk), pos)
	}
	return p, nil
}

func alignUp(n, align int) int { return (n + align - 1) / align * align }

// decodeMiniBlock decodes a mini-block page.
func (d *pageDecoder) decodeMiniBlock(l *enc21pb.MiniBlockLayout, bufs [][]byte) (*leafPage, error) {
	want := miniBlockBuffers(l)
	if len(bufs) != want {
		return nil, pageCorruptf("mini-block page has %d buffers, want %d", len(bufs), want)
	}
	chunks, err := parseChunkMetadata(bufs[0], len(bufs[1]), l.GetNumItems(), l.GetHasLargeChunk())
	if err != nil {
		return nil, err
	}
	if depth := uint64(l.GetRepetitionIndexDepth()); depth > 0 {
		// The repetition index has depth+1 u64 per chunk; a full decode
		// does not need it.
		if size := uint64(len(bufs[len(bufs)-1])); size != uint64(len(chunks))*(depth+1)*8 {
			return nil, pageCorruptf("repetition index of %d bytes for %d chunks at depth %d", size, len(chunks), depth)
		}
	}
	// Size the page's value buffers from the chunk metadata up front
	// instead of growing them chunk by chunk. The last chunk's count comes
	// from num_items, not the metadata, so it only counts up to what a
	// chunk's 4-bit log2 can say.
	capValues := 0
	for i, c := range chunks {
		if i == len(chunks)-1 {
			capValues += min(c.Values, 1<<15)
		} else {
			capValues += c.Values
		}
	}
	cd, err := newChunkDecoder(l, capValues, len(bufs[1]))
	if err != nil {
		return nil, err
	}
	for i, c := range chunks {
		if err := cd.decode(i, c, bufs[1][c.Offset:c.Offset+c.Size], nil); err != nil {
			return nil, err
		}
	}
	var dict []byte
	if l.GetDictionary() != nil {
		dict = bufs[2]
	}
	values, err := cd.finish(d, dict)
	if err != nil {
		return nil, err
	}
	return &leafPage{numRows: d.NumRows, layers: l.GetLayers(), rep: cd.rep, def: cd.def, numItems: cd.numItems, values: values}, nil
}

// miniBlockBuffers is the number of buffers of a mini-block page.
func miniBlockBuffers(l *enc21pb.MiniBlockLayout) int {
	want := 2
	if l.GetDictionary() != nil {
		want++
	}
	if l.GetRepetitionIndexDepth() > 0 {
		want++
	}
	return want
}

// chunkDecoder decodes chunks of a mini-block page, all of them or (for a
// take) some, appending their levels and values.
type chunkDecoder struct {
	l              *enc21pb.MiniBlockLayout
	large          bool
	maxVisible     uint16
	repEnc, defEnc *enc21pb.CompressiveEncoding
	values         miniBlockValues
	// rep and def are the levels of the chunks decoded so far (nil: the
	// page has no such levels), numItems their count, numValues the
	// values'.
	rep, def            []uint16
	numItems, numValues int
}

// newChunkDecoder prepares decoding chunks of about capValues values in
// capBytes bytes (bounds from the page).
func newChunkDecoder(l *enc21pb.MiniBlockLayout, capValues, capBytes int) (*chunkDecoder, error) {
	lay, err := newRepDefLayout(l.GetLayers())
	if err != nil {
		return nil, err
	}
	values, err := newMiniBlockValues(l.GetValueCompression(), capValues, capBytes)
	if err != nil {
		return nil, pageWrapf(err, "mini-block values")
	}
	if l.GetNumBuffers() != uint64(values.buffers()) {
		return nil, pageCorruptf("layout says %d value buffers per chunk, the value encoding has %d", l.GetNumBuffers(), values.buffers())
	}
	cd := &chunkDecoder{
		l: l, large: l.GetHasLargeChunk(), maxVisible: lay.MaxVisible,
		repEnc: l.GetRepCompression(), defEnc: l.GetDefCompression(), values: values,
	}
	if cd.repEnc != nil {
		cd.rep = []uint16{}
	}
	if cd.defEnc != nil {
		cd.def = []uint16{}
	}
	return cd, nil
}

// decode decodes chunk i, c, whose bytes are chunk. With sel (ascending
// distinct indices of the chunk's items) it keeps only those items: pages
// without repetition levels, whose items are their rows and values, when
// canSelect.
func (cd *chunkDecoder) decode(i int, c miniChunk, chunk []byte, sel []int) error {
	parts, err := parseChunk(chunk, cd.repEnc != nil, cd.defEnc != nil, cd.values.buffers(), cd.large)
	if err != nil {
		return pageWrapf(err, "chunk %d", i)
	}
	if sel != nil && (cd.repEnc != nil || !cd.canSelect()) {
		return pageUnsupportedf("chunk %d: selecting items of these values", i)
	}
	if len(sel) > 0 && (sel[0] < 0 || sel[len(sel)-1] >= c.Values) {
		return pageCorruptf("chunk %d: items %d to %d asked of %d", i, sel[0], sel[len(sel)-1], c.Values)
	}
	switch vs, ok := cd.values.(selectiveValues); {
	case sel == nil:
		err = cd.values.decodeChunk(parts.values, c.Values)
	case ok:
		err = vs.decodeChunkRows(parts.values, c.Values, sel)
	default:
		if err = cd.values.decodeChunk(parts.values, c.Values); err == nil {
			keepLast(cd.values.block(), c.Values, sel)
		}
	}
	if err != nil {
		return pageWrapf(err, "chunk %d values", i)
	}
	levels := c.Values
	var chunkRep, chunkDef []uint16
	if cd.repEnc != nil {
		if chunkRep, err = decodeLevels(cd.repEnc, parts.rep, parts.numLevels, cd.large); err != nil {
			return pageWrapf(err, "chunk %d repetition levels", i)
		}
		levels = len(chunkRep)
	}
	if cd.defEnc != nil {
		if chunkDef, err = decodeLevels(cd.defEnc, parts.def, parts.numLevels, cd.large); err != nil {
			return pageWrapf(err, "chunk %d definition levels", i)
		}
		if chunkRep != nil && len(chunkDef) != len(chunkRep) {
			return pageCorruptf("chunk %d has %d repetition and %d definition levels", i, len(chunkRep), len(chunkDef))
		}
		levels = len(chunkDef)
	}
	visible := levels
	if chunkDef != nil {
		visible = countVisible(chunkDef, cd.maxVisible)
	}
	if visible != c.Values {
		return pageCorruptf("chunk %d has %d visible items in %d levels but %d values", i, visible, levels, c.Values)
	}
	if sel != nil {
		if chunkDef != nil {
			kept := make([]uint16, len(sel))
			for j, k := range sel {
				kept[j] = chunkDef[k]
			}
			chunkDef = kept
		}
		levels, c.Values = len(sel), len(sel)
	}
	if cd.rep != nil {
		cd.rep = append(cd.rep, chunkRep...)
	}
	if cd.def != nil {
		cd.def = append(cd.def, chunkDef...)
	}
	cd.numItems += levels
	cd.numValues += c.Values
	return nil
}

// canSelect reports whether decode can keep some of a chunk's values: the
// values are fixed-width or binary (not lists or structs).
func (cd *chunkDecoder) canSelect() bool {
	switch b := cd.values.block().(type) {
	case *fixedBlock:
		return b.bits == 1 || b.bits%8 == 0
	case *varBlock:
		return true
	}
	return false
}

// selectiveValues is implemented by value decoders that can decode some
// values of a chunk only, which is cheaper than decoding all (FSST).
type selectiveValues interface {
	// decodeChunkRows appends values sel (ascending, distinct, < n) of
	// the n values of a chunk held in bufs.
	decodeChunkRows(bufs [][]byte, n int, sel []int) error
}

func (v *binaryValues) decodeChunkRows(bufs [][]byte, n int, sel []int) error {
	if v.large {
		return decodeBinaryRows[uint64](v.out, v.fsst, bufs[0], n, sel)
	}
	return decodeBinaryRows[uint32](v.out, v.fsst, bufs[0], n, sel)
}

func decodeBinaryRows[O codec.Offset](out *varBlock, fsst *codec.FSSTTable, chunk []byte, n int, sel []int) error {
	offsets, data, err := codec.DecodeBinaryChunk[O](chunk, n)
	if err != nil {
		return err
	}
	for _, i := range sel {
		v := data[offsets[i]:offsets[i+1]]
		if fsst == nil || !fsst.Compressed() {
			err = out.add(v)
		} else if out.data, err = fsst.AppendDecoded(out.data, v); err == nil {
			err = out.endValue()
		}
		if err != nil {
			return pageWrapf(err, "value %d", i)
		}
	}
	return nil
}

func (v *generalValues) decodeChunkRows(bufs [][]byte, n int, sel []int) error {
	inner, ok := v.inner.(selectiveValues)
	if !ok {
		if err := v.decodeChunk(bufs, n); err != nil {
			return err
		}
		keepLast(v.block(), n, sel)
		return nil
	}
	limit := min(v.inner.firstBufferLimit(n, len(bufs[0])), fileio.DecompressLimit(len(bufs[0])))
	first, err := decompress(v.compression, bufs[0], limit)
	if err != nil {
		return err
	}
	v.bufs = append(v.bufs[:0], bufs...)
	v.bufs[0] = first
	return inner.decodeChunkRows(v.bufs, n, sel)
}

// keepLast keeps, of the last n values of b, those at sel (ascending,
// distinct, < n). b is a fixedBlock (of whole bytes or bits) or a varBlock
// (chunkDecoder.canSelect).
func keepLast(b valueBlock, n int, sel []int) {
	switch b := b.(type) {
	case *fixedBlock:
		start := b.n - n
		if b.bits == 1 {
			for j, k := range sel {
				at := start + j
				mask := byte(1) << (at % 8)
				if bitSet(b.data, start+k) {
					b.data[at/8] |= mask
				} else {
					b.data[at/8] &^= mask
				}
			}
			b.n = start + len(sel)
			b.data = b.data[:bytesForBits(b.n)]
			if r := b.n % 8; r != 0 {
				b.data[len(b.data)-1] &= byte(1)<<r - 1
			}
			return
		}
		w := b.bits / 8
		for j, k := range sel {
			copy(b.data[(start+j)*w:(start+j+1)*w], b.data[(start+k)*w:(start+k+1)*w])
		}
		b.n = start + len(sel)
		b.data = b.data[:b.n*w]
	case *varBlock:
		start := b.length() - n
		off := func(i int) int {
			if b.large {
				return int(b.off64[i])
			}
			return int(b.off32[i])
		}
		at := off(start)
		for j, k := range sel {
			from, to := off(start+k), off(start+k+1)
			copy(b.data[at:], b.data[from:to])
			at += to - from
			if b.large {
				b.off64[start+j+1] = int64(at)
			} else {
				b.off32[start+j+1] = int32(at)
			}
		}
		b.data = b.data[:at]
		if b.large {
			b.off64 = b.off64[:start+len(sel)+1]
		} else {
			b.off32 = b.off32[:start+len(sel)+1]
		}
	}
}

// finish returns the values of the chunks decoded, looked up in dict (page
// buffer 2) if the page has a dictionary.
func (cd *chunkDecoder) finish(d *pageDecoder, dict []byte) (arrow.Array, error) {
	block := cd.values.block()
	if cd.l.GetDictionary() != nil {
		return d.dictionaryValues(cd.l, dict, block, cd.def, cd.maxVisible)
	}
	return toArrow(d.Mem, block, d.ScanType)
}

// countVisible counts the levels of visible items.
func countVisible(def []uint16, maxVisible uint16) int {
	n := 0
	for _, d := range def {
		if d <= maxVisible {
			n++
		}
	}
	return n
}

// miniBlockValues decodes the value buffers of a page's chunks, one chunk at
// a time, into one block for the page.
type miniBlockValues interface {
	// buffers is the number of value buffers in each chunk.
	buffers() int
	// decodeChunk appends the n values of a chunk held in bufs.
	decodeChunk(bufs [][]byte, n int) error
	// firstBufferLimit bounds the size of the first buffer of a chunk of n
	// values, for decompressing it (General compresses only that buffer).
	firstBufferLimit(n, compressed int) int
	block() valueBlock
}

// newMiniBlockValues builds the decoder of a mini-block value encoding.
// capValues and capBytes, bounded by the caller by the page's size, are the
// expected number of values and, for variable-width values, of value bytes.
func newMiniBlockValues(enc *enc21pb.CompressiveEncoding, capValues, capBytes int) (miniBlockValues, error) {
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Flat:
		bits, err := flatBits(e.Flat)
		if err != nil {
			return nil, err
		}
		return &flatValues{out: newFixedBlock(bits, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_InlineBitpacking:
		bits, err := wordBlockBits(enc)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return &inlineValues[uint8]{out: newFixedBlock(8, capValues, capBytes)}, nil
		case 16:
			return &inlineValues[uint16]{out: newFixedBlock(16, capValues, capBytes)}, nil
		case 32:
			return &inlineValues[uint32]{out: newFixedBlock(32, capValues, capBytes)}, nil
		default:
			return &inlineValues[uint64]{out: newFixedBlock(64, capValues, capBytes)}, nil
		}
	case *enc21pb.CompressiveEncoding_Rle:
		bits, err := rleBits(e.Rle)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return &rleValues[uint8]{out: newFixedBlock(8, capValues, capBytes)}, nil
		case 16:
			return &rleValues[uint16]{out: newFixedBlock(16, capValues, capBytes)}, nil
		case 32:
			return &rleValues[uint32]{out: newFixedBlock(32, capValues, capBytes)}, nil
		default:
			return &rleValues[uint64]{out: newFixedBlock(64, capValues, capBytes)}, nil
		}
	case *enc21pb.CompressiveEncoding_ByteStreamSplit:
		f, err := flatChild(e.ByteStreamSplit.GetValues(), "byte stream split")
		if err != nil {
			return nil, err
		}
		bits, err := flatBits(f)
		if err != nil {
			return nil, err
		}
		if bits%8 != 0 {
			return nil, pageUnsupportedf("byte stream split of %d-bit values", bits)
		}
		return &bssValues{out: newFixedBlock(bits, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_General:
		if e.General.GetCompression() == nil {
			return nil, pageCorruptf("general encoding names no compression")
		}
		inner, err := newMiniBlockValues(e.General.GetValues(), capValues, capBytes)
		if err != nil {
			return nil, err
		}
		return &generalValues{compression: e.General.GetCompression(), inner: inner}, nil
	case *enc21pb.CompressiveEncoding_Variable:
		if err := checkVariable(e.Variable); err != nil {
			return nil, err
		}
		large := e.Variable.GetOffsets().GetFlat().GetBitsPerValue() == 64
		return &binaryValues{large: large, out: newVarBlockSized(large, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_Fsst:
		table, err := codec.ParseFSSTTable(e.Fsst.GetSymbolTable())
		if err != nil {
			return nil, pageWrapf(err, "fsst symbol table")
		}
		v := e.Fsst.GetValues().GetVariable()
		if v == nil {
			return nil, pageUnsupportedf("fsst over %T", e.Fsst.GetValues().GetCompression())
		}
		if err := checkVariable(v); err != nil {
			return nil, err
		}
		large := v.GetOffsets().GetFlat().GetBitsPerValue() == 64
		return &binaryValues{large: large, fsst: table, out: newVarBlockSized(large, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_FixedSizeList:
		dims, hasValidity, bits, err := fslLayers(e.FixedSizeList)
		if err != nil {
			return nil, err
		}
		out := &fslBlock{dims: dims, validity: make([][]byte, len(dims)), items: fixedBlock{bits: bits}}
		for k, v := range hasValidity {
			if v {
				out.validity[k] = []byte{}
			}
		}
		return &fslValues{out: out}, nil
	case *enc21pb.CompressiveEncoding_PackedStruct:
		f, err := flatChild(e.PackedStruct.GetValues(), "packed struct")
		if err != nil {
			return nil, err
		}
		p := &packedValues{out: &structBlock{}}
		for _, b := range e.PackedStruct.GetBitsPerValue() {
			if b == 0 || b%8 != 0 || b > 1<<20 {
				return nil, pageUnsupportedf("packed struct child of %d bits", b)
			}
			p.widths = append(p.widths, int(b/8))
			p.rowBytes += int(b / 8)
			p.out.children = append(p.out.children, &fixedBlock{bits: int(b)})
		}
		if len(p.widths) == 0 || uint64(8*p.rowBytes) != f.GetBitsPerValue() {
			return nil, pageCorruptf("packed struct of children %v stored as %d-bit rows", e.PackedStruct.GetBitsPerValue(), f.GetBitsPerValue())
		}
		return p, nil
	case nil:
		return nil, pageCorruptf("missing value encoding")
	default:
		return nil, pageUnsupportedf("mini-block value encoding %T", e)
	}
}

// flatValues: Flat{bits}, one buffer of n·bits bits (bools LSB-first).
type flatValues struct{ out fixedBlock }

func (v *flatValues) buffers() int      { return 1 }
func (v *flatValues) block() valueBlock { return &v.out }
func (v *flatValues) firstBufferLimit(n, _ int) int {
	return bytesForBits(n * v.out.bits)
}

func (v *flatValues) decodeChunk(bufs [][]byte, n int) error {
	if need := bytesForBits(n * v.out.bits); len(bufs[0]) < need {
		return pageCorruptf("flat buffer of %d bytes cannot hold %d values of %d bits", len(bufs[0]), n, v.out.bits)
	}
	v.out.appendValues(bufs[0], n)
	return nil
}

// inlineValues: InlineBitpacking{T}, one buffer of 1024-value blocks.
type inlineValues[T codec.Word] struct {
	out     fixedBlock
	scratch []T
}

func (v *inlineValues[T]) buffers() int      { return 1 }
func (v *inlineValues[T]) block() valueBlock { return &v.out }
func (v *inlineValues[T]) firstBufferLimit(n, _ int) int {
	blocks := (n + codec.BlockLen - 1) / codec.BlockLen
	return blocks * (1 + codec.BlockLen) * v.out.bits / 8
}

func (v *inlineValues[T]) decodeChunk(bufs [][]byte, n int) error {
	// Every 1024 values take at least their width word.
	if wordBytes := v.out.bits / 8; n > len(bufs[0])/wordBytes*codec.BlockLen {
		return pageCorruptf("inline bit-packed buffer of %d bytes cannot hold %d values", len(bufs[0]), n)
	}
	return appendWordsInPlace(&v.out, &v.scratch, n, func(dst []T) ([]T, error) {
		return codec.DecodeInlineBitpacked(dst, bufs[0], n)
	})
}

// rleValues: Rle{Flat{T}, Flat{8}}, two buffers: run values, run lengths.
type rleValues[T codec.Word] struct {
	out     fixedBlock
	scratch []T
}

func (v *rleValues[T]) buffers() int      { return 2 }
func (v *rleValues[T]) block() valueBlock { return &v.out }
func (v *rleValues[T]) firstBufferLimit(_, compressed int) int {
	return fileio.DecompressLimit(compressed)
}

func (v *rleValues[T]) decodeChunk(bufs [][]byte, n int) error {
	// A run covers at most 255 values.
	if n > 255*len(bufs[1]) {
		return pageCorruptf("%d runs cannot hold %d values", len(bufs[1]), n)
	}
	return appendWordsInPlace(&v.out, &v.scratch, n, func(dst []T) ([]T, error) {
		return codec.DecodeRLE(dst, bufs[0], bufs[1], n)
	})
}

// bssValues: ByteStreamSplit{Flat{bits}}: byte j of value i at j·n + i.
type bssValues struct{ out fixedBlock }

func (v *bssValues) buffers() int      { return 1 }
func (v *bssValues) block() valueBlock { return &v.out }
func (v *bssValues) firstBufferLimit(n, _ int) int {
	return n * v.out.bits / 8
}

func (v *bssValues) decodeChunk(bufs [][]byte, n int) error {
	width := v.out.bits / 8
	if len(bufs[0]) != n*width {
		return pageCorruptf("byte stream split buffer of %d bytes for %d values of %d bytes", len(bufs[0]), n, width)
	}
	var err error
	if v.out.data, err = codec.DecodeByteStreamSplit(v.out.data, bufs[0], width); err != nil {
		return err
	}
	v.out.n += n
	return nil
}

// generalValues: General{zstd|lz4, inner}: each chunk's first buffer is
// compressed, the others are the inner encoding's as they are.
type generalValues struct {
	compression *enc21pb.BufferCompression
	inner       miniBlockValues
	bufs        [][]byte
}

func (v *generalValues) buffers() int      { return v.inner.buffers() }
func (v *generalValues) block() valueBlock { return v.inner.block() }
func (v *generalValues) firstBufferLimit(_, compressed int) int {
	return fileio.DecompressLimit(compressed)
}

func (v *generalValues) decodeChunk(bufs [][]byte, n int) error {
	limit := min(v.inner.firstBufferLimit(n, len(bufs[0])), fileio.DecompressLimit(len(bufs[0])))
	first, err := decompress(v.compression, bufs[0], limit)
	if err != nil {
		return err
	}
	v.bufs = append(v.bufs[:0], bufs...)
	v.bufs[0] = first
	return v.inner.decodeChunk(v.bufs, n)
}

// binaryValues: Variable{Flat{32|64}} binary chunks ([offsets][bytes][pad]
// with offsets from the chunk start), optionally FSST-compressed strings.
type binaryValues struct {
	large bool
	fsst  *codec.FSSTTable // nil: plain
	out   *varBlock
}

func (v *binaryValues) buffers() int      { return 1 }
func (v *binaryValues) block() valueBlock { return v.out }
func (v *binaryValues) firstBufferLimit(_, compressed int) int {
	return fileio.DecompressLimit(compressed)
}

func (v *binaryValues) decodeChunk(bufs [][]byte, n int) error {
	if v.large {
		return decodeBinaryChunk[uint64](v.out, v.fsst, bufs[0], n)
	}
	return decodeBinaryChunk[uint32](v.out, v.fsst, bufs[0], n)
}

func decodeBinaryChunk[O codec.Offset](out *varBlock, fsst *codec.FSSTTable, chunk []byte, n int) error {
	offsets, data, err := codec.DecodeBinaryChunk[O](chunk, n)
	if err != nil {
		return err
	}
	if fsst == nil || !fsst.Compressed() {
		return appendVarValues(out, offsets, data)
	}
	// Decode each string straight into the page's bytes.
	for i := range n {
		if out.data, err = fsst.AppendDecoded(out.data, data[offsets[i]:offsets[i+1]]); err != nil {
			return pageWrapf(err, "value %d", i)
		}
		if err := out.endValue(); err != nil {
			return err
		}
	}
	return nil
}

// fslValues: FixedSizeList{dim, has_validity, …Flat}: per chunk one
// validity buffer per list layer with item validity (outermost first), then
// the items.
type fslValues struct{ out *fslBlock }

func (v *fslValues) block() valueBlock { return v.out }
func (v *fslValues) buffers() int {
	n := 1
	for _, b := range v.out.validity {
		if b != nil {
			n++
		}
	}
	return n
}

func (v *fslValues) firstBufferLimit(n, _ int) int {
	children := n
	for k, d := range v.out.dims {
		children *= d
		if v.out.validity[k] != nil {
			return bytesForBits(children)
		}
	}
	return bytesForBits(children * v.out.items.bits)
}

func (v *fslValues) decodeChunk(bufs [][]byte, n int) error {
	b := v.out
	next := 0
	children := n
	for k, d := range b.dims {
		children *= d
		if b.validity[k] == nil {
			continue
		}
		buf := bufs[next]
		next++
		if len(buf) < bytesForBits(children) {
			return pageCorruptf("item validity of %d bytes for %d items", len(buf), children)
		}
		b.validity[k] = appendBitmap(b.validity[k], b.children(k), buf, children)
	}
	items := bufs[next]
	if need := bytesForBits(children * b.items.bits); len(items) < need {
		return pageCorruptf("fixed-size list buffer of %d bytes cannot hold %d items of %d bits", len(items), children, b.items.bits)
	}
	b.items.appendValues(items, children)
	b.n += n
	return nil
}

// packedValues: PackedStruct{[b1…bk], Flat{Σb}}: rows of the children's
// bytes side by side.
type packedValues struct {
	widths   []int // bytes per child
	rowBytes int
	out      *structBlock
}

func (v *packedValues) buffers() int      { return 1 }
func (v *packedValues) block() valueBlock { return v.out }
func (v *packedValues) firstBufferLimit(n, _ int) int {
	return n * v.rowBytes
}

func (v *packedValues) decodeChunk(bufs [][]byte, n int) error {
	if len(bufs[0]) < n*v.rowBytes {
		return pageCorruptf("packed struct buffer of %d bytes cannot hold %d rows of %d bytes", len(bufs[0]), n, v.rowBytes)
	}
	scatterRows(v.out, v.widths, bufs[0][:n*v.rowBytes], n)
	return nil
}

// scatterRows appends n row-major rows of fixed-width children (widths in
// bytes) to the children of out.
func scatterRows(out *structBlock, widths []int, rows []byte, n int) {
	rowBytes := 0
	for _, w := range widths {
		rowBytes += w
	}
	at := 0
	for c, w := range widths {
		child := out.children[c].(*fixedBlock)
		start := len(child.data)
		child.data = append(child.data, make([]byte, n*w)...)
		dst := child.data[start:]
		for i := range n {
			copy(dst[i*w:(i+1)*w], rows[i*rowBytes+at:])
		}
		child.n += n
		at += w
	}
	out.n += n
}
