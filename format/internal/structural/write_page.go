package structural

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Field metadata keys that steer the writer (Lance's names).
const (
	// metaStructural forces the layout: "miniblock" or "fullzip".
	metaStructural = "lance-encoding:structural-encoding"
	// metaDictSizeRatio is the dictionary size ratio below which a page is
	// dictionary-encoded (default 0.8).
	metaDictSizeRatio = "lance-encoding:dict-size-ratio"
)

// writePage is one page of one leaf being encoded: its levels with their
// meaning and the pieces holding its values.
type writePage struct {
	spec   *leafSpec
	v22    bool
	meta   map[string]string
	rows   int
	items  int
	values int
	rep    []uint16 // nil: no repetition levels
	def    []uint16 // nil: no definition levels
	// layers innermost first, as the page layout records them.
	layers     []enc21pb.RepDefLayer
	maxVisible uint16
	// nulls marks the visible values whose item is null (nil: none);
	// nullValues counts them.
	nulls      []bool
	nullValues int
	pieces     []*leafPiece
}

// newWritePage classifies the page's layers from its null keys and turns
// the keys into definition levels.
func newWritePage(spec *leafSpec, v22 bool, pieces []*leafPiece) *writePage {
	pg := &writePage{spec: spec, v22: v22, meta: spec.field.Metadata, pieces: pieces}
	m := len(spec.lists)
	seen := make([]bool, 2*m+1)
	for _, p := range pieces {
		pg.rows += p.rows
		pg.items += p.items
		pg.values += p.values
		if p.key != nil {
			for _, k := range p.key {
				if int(k) < len(seen) {
					seen[k] = true
				}
			}
		}
	}
	// Levels innermost first.
	defOf := make([]uint16, 2*m+1)
	var cur uint16
	pg.layers = make([]enc21pb.RepDefLayer, 0, m)
	pg.maxVisible = 0
	for j := m - 1; j >= 0; j-- {
		if j == spec.innerList {
			pg.maxVisible = cur
		}
		null, empty := seen[2*j+1] || spec.sticky[j], seen[2*j+2] && spec.lists[j]
		switch {
		case !spec.lists[j] && null:
			cur++
			defOf[2*j+1] = cur
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM)
		case !spec.lists[j]:
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM)
		case null && empty:
			defOf[2*j+1], defOf[2*j+2] = cur+1, cur+2
			cur += 2
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST)
		case null:
			cur++
			defOf[2*j+1] = cur
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST)
		case empty:
			cur++
			defOf[2*j+2] = cur
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST)
		default:
			pg.layers = append(pg.layers, enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST)
		}
	}
	if spec.innerList < 0 {
		pg.maxVisible = cur
	}
	switch {
	case spec.maxRep > 0 && len(pieces) == 1 && pieces[0].rep != nil:
		// Levels are only read from here on, and the page holds its
		// pieces until it is written: no copy (issue #17).
		pg.rep = pieces[0].rep
	case spec.maxRep > 0:
		pg.rep = make([]uint16, 0, pg.items)
		for _, p := range pieces {
			pg.rep = append(pg.rep, p.rep...)
		}
	}
	if cur > 0 {
		// Some layer has levels (a sticky one may have none in use): the
		// page has definition levels.
		pg.def = make([]uint16, pg.items)
		at := 0
		for _, p := range pieces {
			if p.key != nil {
				for i, k := range p.key {
					pg.def[at+i] = defOf[k]
				}
			}
			at += p.items
		}
	}
	pg.nulls = valueNulls(spec, pieces)
	for _, n := range pg.nulls {
		if n {
			pg.nullValues++
		}
	}
	return pg
}

// levels returns the repetition and definition levels of item i (0 where
// the page has none).
func (pg *writePage) levels(i int) (rep, def uint16) {
	if pg.rep != nil {
		rep = pg.rep[i]
	}
	if pg.def != nil {
		def = pg.def[i]
	}
	return rep, def
}

// encodePage encodes pieces (whole rows of one leaf) as one page starting
// at row firstRow and returns its row count.
func (fw *structuralFieldWriter) encodePage(ctx context.Context, spec *leafSpec, pieces []*leafPiece, firstRow uint64) (int, error) {
	v22 := !fw.w.Version.Less(fileio.Version2_2)
	pg := newWritePage(spec, v22, pieces)
	if pg.rows == 0 {
		return 0, nil
	}
	bufs, layout, err := fw.layoutPage(ctx, pg)
	if err != nil {
		return 0, err
	}
	if err := fw.w.AddPage(spec.col, bufs, layout, uint64(pg.rows), firstRow); err != nil {
		return 0, err
	}
	return pg.rows, nil
}

// layoutPage picks the page's layout the way Lance's default writer does
// (docs/spec/lance-format.md §8.3) and encodes it.
func (fw *structuralFieldWriter) layoutPage(ctx context.Context, pg *writePage) ([][]byte, *enc21pb.PageLayout, error) {
	spec := pg.spec
	switch {
	case spec.kind == kindEmptyStruct:
		return simpleAllNull()
	case spec.kind == kindBlobLegacy:
		// The descriptors carry the nulls: always a blob page, as Lance.
		return fw.encodeLegacyBlob(pg)
	case pg.values == 0 || spec.kind == kindNull || pg.nullValues == pg.values:
		if len(pg.layers) == 1 && pg.layers[0] == enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM && pg.rep == nil {
			return simpleAllNull()
		}
		return complexAllNull(pg)
	}
	switch spec.kind {
	case kindBlobV2:
		return fw.encodeBlobV2(ctx, pg)
	case kindPacked:
		st := spec.dt.(*arrow.StructType)
		vals, err := gatherPackedPage(st, pg.pieces, pg.nulls)
		if err != nil {
			return nil, nil, err
		}
		if packedHasVariable(vals) {
			return encodeFullZip(pg, &packedZip{vals: vals})
		}
		enc, err := newPackedMini(vals)
		if err != nil {
			return nil, nil, err
		}
		return encodeMiniBlock(pg, enc, nil)
	case kindDictionary:
		d, err := arrowDictionaryPage(pg)
		if err != nil {
			return nil, nil, err
		}
		bufs, layout, err := encodeDictPage(pg, d)
		if !tooLarge(err) {
			return bufs, layout, err
		}
		// Levels too large for mini-block chunks: store the values.
		if d.vars != nil {
			return variablePage(pg, d.materializeVar())
		}
		return fixedPage(pg, d.materializeFixed())
	case kindFSL:
		vals, err := gatherFSLPage(spec.dt, pg.pieces)
		if err != nil {
			return nil, nil, err
		}
		return fslPage(pg, vals)
	case kindFixed:
		vals, err := gatherFixedPage(fixedBits(spec.dt), pg.pieces, pg.nulls)
		if err != nil {
			return nil, nil, err
		}
		return fixedPage(pg, vals)
	case kindVariable:
		vals, err := gatherVarPage(spec.large, pg.pieces, pg.nulls)
		if err != nil {
			return nil, nil, err
		}
		return variablePage(pg, vals)
	}
	return nil, nil, fmt.Errorf("leaf kind %d: %w", spec.kind, lancer.ErrUnsupported)
}

// structural returns the layout the field metadata asks for: "miniblock",
// "fullzip" or "".
func (pg *writePage) structural() string {
	return strings.ToLower(pg.meta[metaStructural])
}

// compression returns the general compression the field metadata asks for.
func (pg *writePage) compression() string {
	return strings.ToLower(pg.meta[fileio.MetaCompression])
}

// fullZipSafe reports whether Lance's full-zip reader reads the page's
// levels right: it counts as visible the def levels of every item layer,
// also those outside the innermost list (docs/spec/lance-format.md §8.5 note).
func (pg *writePage) fullZipSafe() bool {
	var items uint16
	for _, l := range pg.layers {
		if l == enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM {
			items++
		}
	}
	return items == pg.maxVisible
}

// simpleAllNull is a page of null rows without levels.
func simpleAllNull() ([][]byte, *enc21pb.PageLayout, error) {
	return nil, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: &enc21pb.ConstantLayout{
		Layers: []enc21pb.RepDefLayer{enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM},
	}}}, nil
}

// complexAllNull is a page without non-null values whose levels must be
// kept: raw u16 levels in 2.1; in 2.2 compressed like mini-block levels.
func complexAllNull(pg *writePage) ([][]byte, *enc21pb.PageLayout, error) {
	l := &enc21pb.ConstantLayout{Layers: pg.layers}
	bufs := make([][]byte, 2)
	for i, levels := range [][]uint16{pg.rep, pg.def} {
		if levels == nil {
			bufs[i] = []byte{}
			continue
		}
		if !pg.v22 {
			bufs[i] = codec.EncodeFlat(nil, levels)
			continue
		}
		// Lance 12 writes these bit-packed; RLE is left out here.
		enc := chooseLevelEncodingRLE(levels, true, false)
		block, err := enc.encode(levels)
		if err != nil {
			return nil, nil, err
		}
		bufs[i] = block
		if enc.flat() {
			continue // raw u16 is the default
		}
		if i == 0 {
			l.RepCompression, l.NumRepValues = enc.proto(), uint64(len(levels))
		} else {
			l.DefCompression, l.NumDefValues = enc.proto(), uint64(len(levels))
		}
	}
	return bufs, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: l}}, nil
}

// constValuePage is a 2.2 page whose valid values are all one value (docs/spec/lance-format.md
// §10): inline for fixed-width values up to 32 bytes, else one scalar value
// buffer; levels, if any, follow as raw u16 buffers.
func constValuePage(pg *writePage, inline []byte, scalar [][]byte) ([][]byte, *enc21pb.PageLayout, error) {
	l := &enc21pb.ConstantLayout{Layers: pg.layers}
	var bufs [][]byte
	if inline != nil {
		l.InlineValue = inline
	} else {
		b, err := codec.EncodeScalarBuffers(nil, scalar)
		if err != nil {
			return nil, nil, err
		}
		bufs = [][]byte{b}
	}
	if pg.rep != nil || pg.def != nil {
		for _, levels := range [][]uint16{pg.rep, pg.def} {
			if levels == nil {
				bufs = append(bufs, []byte{})
			} else {
				bufs = append(bufs, codec.EncodeFlat(nil, levels))
			}
		}
	}
	return bufs, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: l}}, nil
}

// constMaxItems bounds the pages that may keep raw levels in a constant
// page: beyond it mini-block levels are always smaller.
const constMaxItems = 4096

// smallerConstant returns the constant form of a page whose valid values
// all equal one value when it takes fewer bytes than the page encoded
// otherwise (bufs, layout); Lance 12 writes such pages with raw levels,
// which pays only for small pages.
func smallerConstant(pg *writePage, bufs [][]byte, layout *enc21pb.PageLayout, inline []byte, scalar [][]byte) ([][]byte, *enc21pb.PageLayout, error) {
	cb, cl, err := constValuePage(pg, inline, scalar)
	if err != nil || paddedSize(cb) >= paddedSize(bufs) {
		return bufs, layout, nil
	}
	return cb, cl, nil
}

// paddedSize is what buffers take in a file, each 64-byte aligned.
func paddedSize(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += alignUp(len(b), fileio.Alignment)
	}
	return n
}

// constantCandidate reports whether the page may be a constant page with
// levels: 2.2, small, and some valid value.
func (pg *writePage) constantCandidate() bool {
	return pg.v22 && (pg.rep != nil || pg.def != nil) && pg.items <= constMaxItems && pg.nullValues < pg.values
}

// canConstant reports whether the page may be a value-carrying constant
// page: 2.2, no levels at all.
func (pg *writePage) canConstant() bool {
	return pg.v22 && pg.rep == nil && pg.def == nil && pg.values == pg.rows && pg.values > 0
}

// fixedPage encodes fixed-width values: constant, dictionary (128-bit, and
// 64-bit in 2.2), mini-block when narrow, else full-zip.
func fixedPage(pg *writePage, vals *fixedVals) ([][]byte, *enc21pb.PageLayout, error) {
	var inline []byte
	var scalar [][]byte
	if (pg.canConstant() || pg.constantCandidate()) && allEqualFixed(vals, pg.nulls) {
		first := firstValid(pg.nulls)
		switch {
		case vals.bits == 1:
			inline = []byte{0}
			if bitSet(vals.data, first) {
				inline[0] = 1
			}
		case vals.bits/8 <= 32:
			inline = bytes.Clone(vals.data[first*vals.bits/8 : (first+1)*vals.bits/8])
		default:
			scalar = [][]byte{vals.data[first*vals.bits/8 : (first+1)*vals.bits/8]}
		}
		if pg.canConstant() {
			return constValuePage(pg, inline, scalar)
		}
	}
	bufs, layout, err := fixedPageVaried(pg, vals)
	if err == nil && (inline != nil || scalar != nil) {
		return smallerConstant(pg, bufs, layout, inline, scalar)
	}
	return bufs, layout, err
}

// fixedPageVaried encodes fixed-width values that are not one constant.
func fixedPageVaried(pg *writePage, vals *fixedVals) ([][]byte, *enc21pb.PageLayout, error) {
	if d := autoDictionaryFixed(pg, vals); d != nil {
		bufs, layout, err := encodeDictPage(pg, d)
		if !tooLarge(err) {
			return bufs, layout, err
		}
	}
	wide := vals.bits/8 >= miniBlockMaxValueBytes
	mode := pg.structural()
	if (wide && mode != "miniblock" && vals.bits%8 == 0 && pg.fullZipSafe()) || mode == "fullzip" && vals.bits%8 == 0 {
		return encodeFullZip(pg, &fixedZip{vals: vals})
	}
	enc, err := newFixedMini(pg, vals)
	if err != nil {
		return nil, nil, err
	}
	bufs, layout, err := encodeMiniBlock(pg, enc, nil)
	if err != nil && vals.bits%8 == 0 {
		// Levels too large for mini-block chunks: full-zip has no limits.
		return encodeFullZip(pg, &fixedZip{vals: vals})
	}
	return bufs, layout, err
}

// fslPage encodes fixed-size lists: mini-block when a list takes less than
// 256 bytes, else full-zip.
func fslPage(pg *writePage, vals *fslVals) ([][]byte, *enc21pb.PageLayout, error) {
	rowBytes := vals.rowBits() / 8
	canZip := vals.items.bits%8 == 0
	mode := pg.structural()
	if canZip && pg.fullZipSafe() && (mode == "fullzip" || rowBytes >= miniBlockMaxValueBytes && mode != "miniblock") {
		return encodeFullZip(pg, &fslZip{vals: vals})
	}
	bufs, layout, err := encodeMiniBlock(pg, &fslMini{vals: vals}, nil)
	if err != nil && canZip {
		return encodeFullZip(pg, &fslZip{vals: vals})
	}
	return bufs, layout, err
}

// variablePage encodes variable-width values: constant, dictionary,
// mini-block when every value is shorter than 256 bytes, else full-zip.
func variablePage(pg *writePage, vals *varVals) ([][]byte, *enc21pb.PageLayout, error) {
	var scalar [][]byte
	if (pg.canConstant() || pg.constantCandidate()) && allEqualVar(vals, pg.nulls) {
		v := vals.Value(firstValid(pg.nulls))
		var offsets []byte
		if vals.large {
			offsets = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 0), uint64(len(v)))
		} else {
			offsets = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 0), uint32(len(v)))
		}
		scalar = [][]byte{offsets, v}
		if pg.canConstant() {
			return constValuePage(pg, nil, scalar)
		}
	}
	bufs, layout, err := variablePageVaried(pg, vals)
	if err == nil && scalar != nil {
		return smallerConstant(pg, bufs, layout, nil, scalar)
	}
	return bufs, layout, err
}

// variablePageVaried encodes variable-width values that are not one
// constant.
func variablePageVaried(pg *writePage, vals *varVals) ([][]byte, *enc21pb.PageLayout, error) {
	if d := autoDictionaryVar(pg, vals); d != nil {
		bufs, layout, err := encodeDictPage(pg, d)
		if !tooLarge(err) {
			return bufs, layout, err
		}
	}
	maxLen := vals.maxLen()
	mode := pg.structural()
	if pg.fullZipSafe() && (mode == "fullzip" || maxLen >= miniBlockMaxValueBytes && mode != "miniblock") {
		return encodeFullZip(pg, newVarZip(pg, vals, maxLen))
	}
	enc, err := newVarMini(pg, vals, maxLen)
	if err != nil {
		return nil, nil, err
	}
	bufs, layout, err := encodeMiniBlock(pg, enc, nil)
	if err != nil {
		return encodeFullZip(pg, newVarZip(pg, vals, maxLen))
	}
	return bufs, layout, nil
}

// miniBlockMaxValueBytes: values this wide or wider go full-zip.
const miniBlockMaxValueBytes = 256

// firstValid returns the index of the first value nulls does not mark.
func firstValid(nulls []bool) int {
	for i, n := range nulls {
		if !n {
			return i
		}
	}
	return 0
}

// allEqualFixed reports whether every valid value (nulls marks the others)
// is the same.
func allEqualFixed(v *fixedVals, nulls []bool) bool {
	if v.n == 0 {
		return false
	}
	first := firstValid(nulls)
	if v.bits == 1 {
		want := bitSet(v.data, first)
		for i := range v.n {
			if (nulls == nil || !nulls[i]) && bitSet(v.data, i) != want {
				return false
			}
		}
		return true
	}
	w := v.bits / 8
	want := v.data[first*w : (first+1)*w]
	for i := range v.n {
		if (nulls == nil || !nulls[i]) && !bytes.Equal(v.data[i*w:(i+1)*w], want) {
			return false
		}
	}
	return true
}

// allEqualVar reports whether every valid value is the same.
func allEqualVar(v *varVals, nulls []bool) bool {
	if v.Len() == 0 {
		return false
	}
	want := v.Value(firstValid(nulls))
	for i := range v.Len() {
		if (nulls == nil || !nulls[i]) && !bytes.Equal(v.Value(i), want) {
			return false
		}
	}
	return true
}
