package structural

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Constant and all-null pages (docs/spec/lance-format.md §8.6, §10). PageLayout field 2 is
// AllNullLayout in 2.1 and ConstantLayout in 2.2 (wire compatible: layers
// keep number 5). What a page means follows from inline_value and the
// number of page buffers together:
//
//	inline  buffers  meaning
//	no      0        all null, no levels (def 1 for every row)
//	no      2        all null; rep, def (compressed per rep/def_compression, else raw u16)
//	yes     0        every row is the inline value, no levels
//	yes     2        the inline value; rep, def as raw u16
//	no      1        scalar value buffer, no levels
//	no      3        scalar value buffer; rep, def as raw u16
//
// A zero-length level buffer means the page has no such levels. With levels,
// visible items get the value (or null) and the others are null or empty
// lists as their levels say.

// decodeConstant decodes a constant or all-null page.
func (d *pageDecoder) decodeConstant(l *enc21pb.ConstantLayout, bufs [][]byte) (*leafPage, error) {
	inline := l.InlineValue != nil
	layers := l.GetLayers()
	switch {
	case !inline && len(bufs) == 0:
		// Every row null and nothing else to say: Lance reads these as
		// one nullable item layer whatever the layers say.
		n := int(d.NumRows)
		def := make([]uint16, n)
		for i := range def {
			def[i] = 1
		}
		values, err := toArrow(d.Mem, &nullBlock{n: n}, d.ScanType)
		if err != nil {
			return nil, err
		}
		return &leafPage{
			numRows: d.NumRows, numItems: n, def: def, values: values,
			layers: []enc21pb.RepDefLayer{enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM},
		}, nil
	case !inline && len(bufs) == 2, inline && (len(bufs) == 0 || len(bufs) == 2), !inline && (len(bufs) == 1 || len(bufs) == 3):
	default:
		return nil, pageCorruptf("constant page with inline value %t has %d buffers", inline, len(bufs))
	}
	lp := &leafPage{numRows: d.NumRows, layers: layers}
	lay, err := newRepDefLayout(layers)
	if err != nil {
		return nil, err
	}
	// Levels.
	var levelBufs [][]byte
	switch len(bufs) {
	case 2:
		levelBufs = bufs
	case 3:
		levelBufs = bufs[1:]
	}
	if levelBufs != nil {
		allNull := !inline && len(bufs) == 2
		if lp.rep, err = constantLevels(levelBufs[0], l.GetRepCompression(), l.GetNumRepValues(), allNull); err != nil {
			return nil, pageWrapf(err, "repetition levels")
		}
		if lp.def, err = constantLevels(levelBufs[1], l.GetDefCompression(), l.GetNumDefValues(), allNull); err != nil {
			return nil, pageWrapf(err, "definition levels")
		}
	}
	switch {
	case lp.rep != nil && lp.def != nil && len(lp.rep) != len(lp.def):
		return nil, pageCorruptf("%d repetition and %d definition levels", len(lp.rep), len(lp.def))
	case lp.rep != nil:
		lp.numItems = len(lp.rep)
	case lp.def != nil:
		lp.numItems = len(lp.def)
	default:
		lp.numItems = int(d.NumRows)
	}
	visible := lp.numItems
	if lp.def != nil {
		visible = countVisible(lp.def, lay.MaxVisible)
	}
	// The value.
	var block valueBlock
	switch {
	case inline:
		block, err = repeatFixed(l.InlineValue, visible)
	case len(bufs) == 1 || len(bufs) == 3:
		block, err = scalarBlock(bufs[0], d.ScanType, visible)
	default:
		block = &nullBlock{n: visible}
	}
	if err != nil {
		return nil, err
	}
	if lp.values, err = toArrow(d.Mem, block, d.ScanType); err != nil {
		return nil, err
	}
	return lp, nil
}

// constantLevels decodes one level buffer of a constant page: nil when
// empty, raw u16 levels, or (all-null pages only) a block compressed with
// enc holding count levels.
func constantLevels(buf []byte, enc *enc21pb.CompressiveEncoding, count uint64, allowCompressed bool) ([]uint16, error) {
	if len(buf) == 0 {
		return nil, nil
	}
	if enc != nil && allowCompressed {
		// decodeLevels bounds the count, which comes from metadata, by the
		// buffer.
		if count > maxPageItems {
			return nil, pageCorruptf("%d levels in a %d-byte buffer", count, len(buf))
		}
		return decodeLevels(enc, buf, int(count), false)
	}
	return rawLevels16(buf)
}

// repeatFixed returns n copies of one fixed-width value.
func repeatFixed(v []byte, n int) (valueBlock, error) {
	if len(v) == 0 {
		return nil, pageCorruptf("constant value of 0 bytes")
	}
	if n*len(v) > fileio.MaxDecompressedBytes {
		return nil, pageUnsupportedf("%d copies of a %d-byte constant are too large to materialise", n, len(v))
	}
	return &fixedBlock{bits: 8 * len(v), n: n, data: bytes.Repeat(v, n)}, nil
}

// scalarBlock returns n copies of the value in a scalar value buffer (a
// length-1 Arrow array: u32 count, u32 lengths, the buffers), read as the
// scan type: utf8 and binary values have offsets [0, L] (8 bytes, or 16 for
// the large types) and the bytes; other values one buffer of value bytes.
func scalarBlock(buf []byte, dt arrow.DataType, n int) (valueBlock, error) {
	parts, err := codec.DecodeScalarBuffers(buf)
	if err != nil {
		return nil, pageWrapf(err, "constant value")
	}
	if dict, ok := dt.(*arrow.DictionaryType); ok {
		dt = dict.ValueType
	}
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		if len(parts) != 2 || (len(parts[0]) != 8 && len(parts[0]) != 16) {
			return nil, pageCorruptf("constant %s value has %d buffers", dt, len(parts))
		}
		w := len(parts[0]) / 2
		start, end := getLE(parts[0], w), getLE(parts[0][w:], w)
		if start > end || end > uint64(len(parts[1])) {
			return nil, pageCorruptf("constant %s value spans [%d, %d) of %d bytes", dt, start, end, len(parts[1]))
		}
		v := parts[1][start:end]
		if n*len(v) > fileio.MaxDecompressedBytes {
			return nil, pageUnsupportedf("%d copies of a %d-byte constant are too large to materialise", n, len(v))
		}
		out := newVarBlock(w == 8, n)
		out.data = make([]byte, 0, n*len(v))
		for range n {
			if err := out.add(v); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if _, ok := dt.(arrow.FixedWidthDataType); !ok || len(parts) != 1 {
		return nil, pageUnsupportedf("constant value of %d buffers for %s", len(parts), dt)
	}
	return repeatFixed(parts[0], n)
}
