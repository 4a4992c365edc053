package structural

import (
	"encoding/binary"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Full-zip layout (docs/spec/lance-format.md §8.5): for wide values, each item's rep/def
// "control word" is zipped in front of its value.
//
// Page buffers: 0 the zipped items; 1 the row index, present when values are
// variable-width or the page has repetition levels.
//
// Control word: (rep << bits_def) | def, little-endian in 1 byte when
// bits_rep + bits_def ≤ 8, 2 when ≤ 16, else 4; absent when both are 0.
// After it:
//   - fixed-width values: visible items have bits_per_value/8 value bytes
//     (null items too); invisible items nothing;
//   - variable-width values: valid items (def 0) have a u32 or u64 length
//     (bits_per_offset) and that many bytes; null and invisible items
//     nothing.

// controlWordBytes returns the size of a control word.
func controlWordBytes(bitsRep, bitsDef uint32) int {
	switch total := bitsRep + bitsDef; {
	case total == 0:
		return 0
	case total <= 8:
		return 1
	case total <= 16:
		return 2
	}
	return 4
}

// zipReader walks the items of a full-zip buffer.
type zipReader struct {
	data             []byte
	pos              int
	ctrl             int
	bitsRep, bitsDef uint32
	maxRep, maxDef   uint16
	maxVisible       uint16
	rep, def         []uint16 // appended per item; nil when absent
	// rowStarts, when not nil, receives the offset of each item that
	// starts a row.
	rowStarts *[]int
}

// next reads one control word and reports whether its item is visible and
// valid.
func (z *zipReader) next(item int) (visible, valid bool, err error) {
	start := z.pos
	if z.ctrl == 0 {
		if z.rowStarts != nil {
			*z.rowStarts = append(*z.rowStarts, start)
		}
		return true, true, nil
	}
	if len(z.data)-z.pos < z.ctrl {
		return false, false, pageCorruptf("item %d: control word at byte %d runs past the %d-byte buffer", item, z.pos, len(z.data))
	}
	var word uint32
	switch z.ctrl {
	case 1:
		word = uint32(z.data[z.pos])
	case 2:
		word = uint32(binary.LittleEndian.Uint16(z.data[z.pos:]))
	default:
		word = binary.LittleEndian.Uint32(z.data[z.pos:])
	}
	z.pos += z.ctrl
	rep, def := word>>z.bitsDef, word&(1<<z.bitsDef-1)
	if z.bitsRep == 0 {
		rep = 0
	}
	if rep > uint32(z.maxRep) || def > uint32(z.maxDef) {
		return false, false, pageCorruptf("item %d: control word %#x holds rep %d, def %d; the layers allow at most %d, %d",
			item, word, rep, def, z.maxRep, z.maxDef)
	}
	if z.bitsRep > 0 {
		z.rep = append(z.rep, uint16(rep))
	}
	if z.rowStarts != nil && (z.maxRep == 0 || rep == uint32(z.maxRep)) {
		*z.rowStarts = append(*z.rowStarts, start)
	}
	if z.bitsDef > 0 {
		z.def = append(z.def, uint16(def))
	}
	return uint16(def) <= z.maxVisible, def == 0, nil
}

// take returns the next n bytes.
func (z *zipReader) take(item, n int) ([]byte, error) {
	if n < 0 || len(z.data)-z.pos < n {
		return nil, pageCorruptf("item %d: %d value bytes at byte %d run past the %d-byte buffer", item, n, z.pos, len(z.data))
	}
	b := z.data[z.pos : z.pos+n : z.pos+n]
	z.pos += n
	return b, nil
}

// decodeFullZip decodes a full-zip page.
func (d *pageDecoder) decodeFullZip(l *enc21pb.FullZipLayout, bufs [][]byte) (*leafPage, error) {
	if err := checkFullZip(l); err != nil {
		return nil, err
	}
	want := 1
	if fullZipIndexed(l) {
		want = 2
	}
	if len(bufs) != want {
		return nil, pageCorruptf("full-zip page has %d buffers, want %d", len(bufs), want)
	}
	if want == 2 {
		if err := checkRowIndex(bufs[1], d.NumRows, len(bufs[0])); err != nil {
			return nil, err
		}
	}
	numItems, numVisible := int(l.GetNumItems()), int(l.GetNumVisibleItems())
	if numItems > maxPageItems || numVisible > numItems {
		return nil, pageCorruptf("full-zip page of %d items, %d visible", numItems, numVisible)
	}
	return d.DecodeZipped(l, bufs[0], numItems, numVisible)
}

// checkFullZip checks what decoding any part of a full-zip page relies on.
func checkFullZip(l *enc21pb.FullZipLayout) error {
	if l.GetBitsRep() > 16 || l.GetBitsDef() > 16 {
		return pageCorruptf("control words of %d rep and %d def bits (levels are u16)", l.GetBitsRep(), l.GetBitsDef())
	}
	if l.GetDetails() == nil {
		return pageCorruptf("full-zip layout gives neither bits per value nor bits per offset")
	}
	return nil
}

// fullZipIndexed reports whether a full-zip page has a row index (buffer
// 1): its rows are not all the same size.
func fullZipIndexed(l *enc21pb.FullZipLayout) bool {
	_, variable := l.GetDetails().(*enc21pb.FullZipLayout_BitsPerOffset)
	return variable || l.GetBitsRep() > 0
}

// DecodeZipped decodes the zipped items of a full-zip page (checkFullZip):
// all of them, numItems of which numVisible are visible, or, with numItems
// < 0, the whole rows data holds (a take reads only the rows it wants; the
// caller checks the row count).
func (d *pageDecoder) DecodeZipped(l *enc21pb.FullZipLayout, data []byte, numItems, numVisible int) (*leafPage, error) {
	bitsRep, bitsDef := l.GetBitsRep(), l.GetBitsDef()
	layers := l.GetLayers()
	lay, err := newRepDefLayout(layers)
	if err != nil {
		return nil, err
	}
	_, variable := l.GetDetails().(*enc21pb.FullZipLayout_BitsPerOffset)
	z := &zipReader{
		data: data, ctrl: controlWordBytes(bitsRep, bitsDef),
		bitsRep: bitsRep, bitsDef: bitsDef,
		maxRep: lay.MaxRep, maxDef: lay.MaxDef, maxVisible: lay.MaxVisible,
		rowStarts: d.rowStarts,
	}
	// Every item takes at least its control word (or, without control
	// words, at least one byte of value or length), which bounds the level
	// slices by the buffer.
	if numItems > len(z.data)/max(z.ctrl, 1) {
		return nil, pageCorruptf("%d items do not fit a %d-byte buffer", numItems, len(z.data))
	}
	if capItems := numItems; numItems >= 0 || z.ctrl > 0 {
		if numItems < 0 {
			capItems = len(z.data) / z.ctrl
		}
		if bitsRep > 0 {
			z.rep = make([]uint16, 0, capItems)
		}
		if bitsDef > 0 {
			z.def = make([]uint16, 0, capItems)
		}
	}
	var block valueBlock
	if variable {
		block, numItems, err = zipVariable(z, l, numItems, numVisible)
	} else {
		block, numItems, err = zipFixed(z, l, numItems, numVisible)
	}
	if err != nil {
		return nil, err
	}
	if z.pos != len(z.data) {
		return nil, pageCorruptf("%d items end at byte %d of a %d-byte buffer", numItems, z.pos, len(z.data))
	}
	if numVisible >= 0 && block.length() != numVisible {
		return nil, pageCorruptf("%d visible items, the layout says %d", block.length(), numVisible)
	}
	values, err := toArrow(d.Mem, block, d.ScanType)
	if err != nil {
		return nil, err
	}
	return &leafPage{numRows: d.NumRows, layers: layers, rep: z.rep, def: z.def, numItems: numItems, values: values}, nil
}

// more reports whether item i is to be read: i < numItems, or with
// numItems < 0 (unknown) while bytes are left.
func (z *zipReader) more(i, numItems int) bool {
	if numItems >= 0 {
		return i < numItems
	}
	return z.pos < len(z.data)
}

// checkRowIndex checks the size of a full-zip row index: rows+1 unsigned
// offsets of 1, 2, 4 or 8 bytes, from 0 to the end of the zipped buffer. A
// full decode does not need it.
func checkRowIndex(index []byte, rows uint64, dataLen int) error {
	entries := rows + 1
	width := uint64(len(index)) / entries
	if uint64(len(index))%entries != 0 || (width != 1 && width != 2 && width != 4 && width != 8) {
		return pageCorruptf("row index of %d bytes for %d rows", len(index), rows)
	}
	w := int(width)
	first, last := getLE(index, w), getLE(index[len(index)-w:], w)
	if first != 0 || last != uint64(dataLen) {
		return pageCorruptf("row index spans [%d, %d), the zipped buffer has %d bytes", first, last, dataLen)
	}
	return nil
}

// zipFixed reads fixed-width items: Flat{bits} or FixedSizeList{…, Flat}
// whose value is the items' validity bytes (one group per list layer with
// validity, ⌈items/8⌉ bytes each) followed by the items. numItems and
// numVisible are as for decodeZipped; it returns the number of items read.
func zipFixed(z *zipReader, l *enc21pb.FullZipLayout, numItems, numVisible int) (valueBlock, int, error) {
	bits := l.GetBitsPerValue()
	if bits == 0 || bits%8 != 0 || bits > 1<<30 {
		return nil, 0, pageUnsupportedf("full-zip values of %d bits", bits)
	}
	width := int(bits / 8)
	var (
		dims        []int
		hasValidity []bool
		itemBits    int
	)
	switch e := l.GetValueCompression().GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Flat:
		b, err := flatBits(e.Flat)
		if err != nil {
			return nil, 0, err
		}
		if b != int(bits) {
			return nil, 0, pageCorruptf("flat values of %d bits, the layout says %d", b, bits)
		}
	case *enc21pb.CompressiveEncoding_FixedSizeList:
		var err error
		if dims, hasValidity, itemBits, err = fslLayers(e.FixedSizeList); err != nil {
			return nil, 0, err
		}
		if itemBits%8 != 0 {
			return nil, 0, pageUnsupportedf("full-zip fixed-size list of %d-bit items", itemBits)
		}
		total, children := 0, 1
		for k, d := range dims {
			children *= d
			if hasValidity[k] {
				total += bytesForBits(children)
			}
		}
		total += children * itemBits / 8
		if total != width {
			return nil, 0, pageCorruptf("fixed-size list values of %d bytes, the layout says %d", total, width)
		}
	case nil:
		return nil, 0, pageCorruptf("full-zip page has no value encoding")
	default:
		return nil, 0, pageUnsupportedf("full-zip fixed-width encoding %T", e)
	}
	if z.ctrl == 0 && numItems < 0 {
		if len(z.data)%width != 0 {
			return nil, 0, pageCorruptf("%d bytes of rows are not a whole number of %d-byte values", len(z.data), width)
		}
		numItems = len(z.data) / width
	}
	if z.ctrl == 0 && numItems*width != len(z.data) {
		return nil, 0, pageCorruptf("%d values of %d bytes in a %d-byte buffer", numItems, width, len(z.data))
	}
	if numVisible > len(z.data)/width {
		return nil, 0, pageCorruptf("%d values of %d bytes do not fit a %d-byte buffer", numVisible, width, len(z.data))
	}
	// Gather the visible values; without control words they are the buffer.
	var raw []byte
	if z.ctrl == 0 {
		raw, z.pos = z.data, len(z.data)
	} else {
		capBytes := numVisible * width
		if numVisible < 0 {
			capBytes = len(z.data) / (z.ctrl + width) * width
		}
		raw = make([]byte, 0, capBytes)
		i := 0
		for ; z.more(i, numItems); i++ {
			visible, _, err := z.next(i)
			if err != nil {
				return nil, 0, err
			}
			if !visible {
				continue
			}
			v, err := z.take(i, width)
			if err != nil {
				return nil, 0, err
			}
			raw = append(raw, v...)
		}
		numItems = i
	}
	n := len(raw) / width
	if dims == nil {
		return &fixedBlock{bits: int(bits), n: n, data: raw}, numItems, nil
	}
	out := &fslBlock{n: n, dims: dims, validity: make([][]byte, len(dims)), items: fixedBlock{bits: itemBits}}
	anyValidity := false
	for _, v := range hasValidity {
		anyValidity = anyValidity || v
	}
	if !anyValidity {
		out.items.n, out.items.data = len(raw)*8/itemBits, raw
		return out, numItems, nil
	}
	// Unzip each value's validity groups from its items.
	children := make([]int, len(dims)) // children per value at each layer
	c := 1
	for k, d := range dims {
		c *= d
		children[k] = c
		if hasValidity[k] {
			out.validity[k] = make([]byte, 0, bytesForBits(n*c))
		}
	}
	itemBytes := c * itemBits / 8
	out.items.data = make([]byte, 0, n*itemBytes)
	for i := range n {
		v := raw[i*width : (i+1)*width]
		for k := range dims {
			if !hasValidity[k] {
				continue
			}
			size := bytesForBits(children[k])
			out.validity[k] = appendBitmap(out.validity[k], i*children[k], v[:size], children[k])
			v = v[size:]
		}
		out.items.data = append(out.items.data, v...)
	}
	out.items.n = n * c
	return out, numItems, nil
}

// perValue decodes the bytes of one variable-width value into a block.
type perValue interface {
	add(v []byte) error
	addNull() error
	block() valueBlock
}

// zipVariable reads variable-width items. numItems and numVisible are as
// for decodeZipped; it returns the number of items read.
func zipVariable(z *zipReader, l *enc21pb.FullZipLayout, numItems, numVisible int) (valueBlock, int, error) {
	prefix := int(l.GetBitsPerOffset() / 8)
	if l.GetBitsPerOffset() != 32 && l.GetBitsPerOffset() != 64 {
		return nil, 0, pageUnsupportedf("full-zip lengths of %d bits", l.GetBitsPerOffset())
	}
	// A value takes at least its control word or, without control words,
	// its length.
	capValues := len(z.data) / max(z.ctrl, 1)
	if z.ctrl == 0 {
		capValues = len(z.data) / prefix
	}
	if numVisible >= 0 {
		capValues = min(numVisible, capValues)
	}
	dec, err := newPerValue(l.GetValueCompression(), prefix == 8, capValues, len(z.data))
	if err != nil {
		return nil, 0, err
	}
	i := 0
	for ; z.more(i, numItems); i++ {
		visible, valid, err := z.next(i)
		if err != nil {
			return nil, 0, err
		}
		switch {
		case !visible:
		case !valid:
			if err := dec.addNull(); err != nil {
				return nil, 0, err
			}
		default:
			p, err := z.take(i, prefix)
			if err != nil {
				return nil, 0, err
			}
			size := getLE(p, prefix)
			if size > uint64(len(z.data)) {
				return nil, 0, pageCorruptf("item %d: length %d exceeds the %d-byte buffer", i, size, len(z.data))
			}
			v, err := z.take(i, int(size))
			if err != nil {
				return nil, 0, err
			}
			if err := dec.add(v); err != nil {
				return nil, 0, pageWrapf(err, "item %d", i)
			}
		}
	}
	return dec.block(), i, nil
}

// newPerValue builds the decoder of a full-zip variable-width encoding for
// about capValues values stored in capBytes bytes (bounds from the page).
func newPerValue(enc *enc21pb.CompressiveEncoding, large bool, capValues, capBytes int) (perValue, error) {
	switch e := enc.GetCompression().(type) {
	case *enc21pb.CompressiveEncoding_Variable:
		if err := checkVariable(e.Variable); err != nil {
			return nil, err
		}
		return &plainPerValue{out: newVarBlockSized(large, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_Fsst:
		table, err := codec.ParseFSSTTable(e.Fsst.GetSymbolTable())
		if err != nil {
			return nil, pageWrapf(err, "fsst symbol table")
		}
		return &fsstPerValue{table: table, out: newVarBlockSized(large, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_General:
		if e.General.GetCompression() == nil {
			return nil, pageCorruptf("general encoding names no compression")
		}
		return &generalPerValue{compression: e.General.GetCompression(), out: newVarBlockSized(large, capValues, capBytes)}, nil
	case *enc21pb.CompressiveEncoding_VariablePackedStruct:
		return newPackedPerValue(e.VariablePackedStruct, capValues)
	case nil:
		return nil, pageCorruptf("full-zip page has no value encoding")
	default:
		return nil, pageUnsupportedf("full-zip variable-width encoding %T", e)
	}
}

type plainPerValue struct{ out *varBlock }

func (p *plainPerValue) add(v []byte) error { return p.out.add(v) }
func (p *plainPerValue) addNull() error     { return p.out.add(nil) }
func (p *plainPerValue) block() valueBlock  { return p.out }

// fsstPerValue: each value FSST-compressed on its own with the page's table.
type fsstPerValue struct {
	table *codec.FSSTTable
	out   *varBlock
}

func (p *fsstPerValue) addNull() error    { return p.out.add(nil) }
func (p *fsstPerValue) block() valueBlock { return p.out }
func (p *fsstPerValue) add(v []byte) error {
	var err error
	if p.out.data, err = p.table.AppendDecoded(p.out.data, v); err != nil {
		return err
	}
	return p.out.endValue()
}

// generalPerValue: each value zstd- or lz4-compressed on its own.
type generalPerValue struct {
	compression *enc21pb.BufferCompression
	out         *varBlock
}

func (p *generalPerValue) addNull() error    { return p.out.add(nil) }
func (p *generalPerValue) block() valueBlock { return p.out }
func (p *generalPerValue) add(v []byte) error {
	raw, err := decompress(p.compression, v, fileio.DecompressLimit(len(v)))
	if err != nil {
		return err
	}
	return p.out.add(raw)
}

// packedPerValue: VariablePackedStruct (2.2+): each value is a struct's
// children row-major, fixed-width ones as raw bytes, variable-width ones as
// a length and bytes. Null rows get zero and empty children.
type packedPerValue struct {
	fields []packedField
	out    *structBlock
}

type packedField struct {
	width  int // bytes of a fixed-width child; 0 for variable-width
	prefix int // bytes of a variable-width child's length
}

func newPackedPerValue(e *enc21pb.VariablePackedStruct, capHint int) (*packedPerValue, error) {
	p := &packedPerValue{out: &structBlock{}}
	if len(e.GetFields()) == 0 {
		return nil, pageCorruptf("variable packed struct without fields")
	}
	for i, f := range e.GetFields() {
		switch layout := f.GetLayout().(type) {
		case *enc21pb.VariablePackedStruct_FieldEncoding_BitsPerValue:
			b, err := flatBits(f.GetValue().GetFlat())
			if err != nil {
				return nil, pageWrapf(err, "packed struct field %d", i)
			}
			if b%8 != 0 || uint64(b) != layout.BitsPerValue {
				return nil, pageCorruptf("packed struct field %d: flat values of %d bits stored as %d", i, b, layout.BitsPerValue)
			}
			p.fields = append(p.fields, packedField{width: b / 8})
			p.out.children = append(p.out.children, &fixedBlock{bits: b})
		case *enc21pb.VariablePackedStruct_FieldEncoding_BitsPerLength:
			if layout.BitsPerLength != 32 && layout.BitsPerLength != 64 {
				return nil, pageUnsupportedf("packed struct field %d with %d-bit lengths", i, layout.BitsPerLength)
			}
			v := f.GetValue().GetVariable()
			if v == nil {
				return nil, pageUnsupportedf("packed struct field %d encoded as %T", i, f.GetValue().GetCompression())
			}
			if err := checkVariable(v); err != nil {
				return nil, pageWrapf(err, "packed struct field %d", i)
			}
			prefix := int(layout.BitsPerLength / 8)
			p.fields = append(p.fields, packedField{prefix: prefix})
			p.out.children = append(p.out.children, newVarBlock(prefix == 8, capHint))
		default:
			return nil, pageCorruptf("packed struct field %d has no layout", i)
		}
	}
	return p, nil
}

func (p *packedPerValue) block() valueBlock { return p.out }

func (p *packedPerValue) addNull() error {
	for i, f := range p.fields {
		if f.width > 0 {
			p.out.children[i].(*fixedBlock).appendZeros(1)
		} else if err := p.out.children[i].(*varBlock).add(nil); err != nil {
			return err
		}
	}
	p.out.n++
	return nil
}

func (p *packedPerValue) add(row []byte) error {
	pos := 0
	take := func(n uint64) ([]byte, error) {
		if n > uint64(len(row)-pos) {
			return nil, pageCorruptf("packed struct row of %d bytes ends inside a field", len(row))
		}
		b := row[pos : pos+int(n)]
		pos += int(n)
		return b, nil
	}
	for i, f := range p.fields {
		if f.width > 0 {
			b, err := take(uint64(f.width))
			if err != nil {
				return err
			}
			p.out.children[i].(*fixedBlock).appendValues(b, 1)
			continue
		}
		l, err := take(uint64(f.prefix))
		if err != nil {
			return err
		}
		b, err := take(getLE(l, f.prefix))
		if err != nil {
			return err
		}
		if err := p.out.children[i].(*varBlock).add(b); err != nil {
			return err
		}
	}
	if pos != len(row) {
		return pageCorruptf("packed struct row of %d bytes has %d bytes after its fields", len(row), len(row)-pos)
	}
	p.out.n++
	return nil
}
