package structural

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Full-zip pages (docs/spec/lance-format.md §8.5): each item's control word (rep, def) zipped in
// front of its value, and a row index of where every row starts.

// zipEncoder stores a page's visible values one by one.
type zipEncoder interface {
	proto() *enc21pb.CompressiveEncoding
	// bitsPerValue is the width of fixed-width values, 0 for
	// variable-width ones, which have a length prefix of bitsPerOffset.
	bitsPerValue() int
	bitsPerOffset() int
	count() int
	// valueBytes is the bytes appendValue appends for all values, without
	// length prefixes (an estimate where it compresses values one by one).
	valueBytes() int
	// appendValue appends the stored bytes of visible value v.
	appendValue(dst []byte, v int) ([]byte, error)
}

// fixedZip: Flat{bits}, the raw value bytes.
type fixedZip struct{ vals *fixedVals }

func (e *fixedZip) proto() *enc21pb.CompressiveEncoding { return flatEncoding(e.vals.bits) }
func (e *fixedZip) bitsPerValue() int                   { return e.vals.bits }
func (e *fixedZip) bitsPerOffset() int                  { return 0 }
func (e *fixedZip) count() int                          { return e.vals.n }
func (e *fixedZip) valueBytes() int                     { return e.vals.n * e.vals.bits / 8 }
func (e *fixedZip) appendValue(dst []byte, v int) ([]byte, error) {
	w := e.vals.bits / 8
	return append(dst, e.vals.data[v*w:(v+1)*w]...), nil
}

// fslZip: FixedSizeList{…}: per list the validity bytes of each layer
// with item validity (⌈children/8⌉ bytes, outermost first), then the items.
type fslZip struct{ vals *fslVals }

func (e *fslZip) proto() *enc21pb.CompressiveEncoding { return fslEncoding(e.vals) }
func (e *fslZip) bitsPerOffset() int                  { return 0 }
func (e *fslZip) count() int                          { return e.vals.n }
func (e *fslZip) valueBytes() int                     { return e.vals.n * e.bitsPerValue() / 8 }
func (e *fslZip) bitsPerValue() int {
	b, children := 0, 1
	for k, d := range e.vals.dims {
		children *= d
		if e.vals.validity[k] != nil {
			b += 8 * bytesForBits(children)
		}
	}
	return b + e.vals.rowBits()
}

func (e *fslZip) appendValue(dst []byte, v int) ([]byte, error) {
	children := 1
	for k, d := range e.vals.dims {
		children *= d
		if bm := e.vals.validity[k]; bm != nil {
			dst = append(dst, appendBits(nil, 0, bm, v*children, children)...)
		}
	}
	w := e.vals.items.bits / 8
	return append(dst, e.vals.items.data[v*children*w:(v+1)*children*w]...), nil
}

// varZip: Variable (plain), Fsst (each value compressed with one
// table) or General (each value zstd-compressed on its own).
type varZip struct {
	vals  *varVals // the stored (possibly FSST-compressed) values
	large bool
	fsst  []byte // symbol table
	zstd  bool
	level int32
}

func (e *varZip) proto() *enc21pb.CompressiveEncoding {
	w := 32
	if e.large {
		w = 64
	}
	v := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEncoding(w)}}}
	switch {
	case e.fsst != nil:
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Fsst{Fsst: &enc21pb.Fsst{SymbolTable: e.fsst, Values: v}}}
	case e.zstd:
		level := e.level
		return generalEncoding(codec.CompressionZstd, &level, v)
	}
	return v
}
func (e *varZip) bitsPerValue() int { return 0 }
func (e *varZip) bitsPerOffset() int {
	if e.large {
		return 64
	}
	return 32
}
func (e *varZip) count() int { return e.vals.Len() }

// valueBytes is exact for plain and FSST values; for zstd it is the bytes
// before compression.
func (e *varZip) valueBytes() int { return int(e.vals.Off[len(e.vals.Off)-1] - e.vals.Off[0]) }
func (e *varZip) appendValue(dst []byte, v int) ([]byte, error) {
	if !e.zstd {
		return append(dst, e.vals.Value(v)...), nil
	}
	c, err := codec.Compress(codec.CompressionZstd, int(e.level), e.vals.Value(v))
	if err != nil {
		return nil, err
	}
	return append(dst, c...), nil
}

// perValueZstdMin: values this long make Lance compress each value on its
// own (when the page holds at least FSSTMinInputSize bytes).
const perValueZstdMin = 32 << 10

// newVarZip chooses how a full-zip page stores variable-width values
// (docs/spec/lance-format.md §9.11): zstd per value for huge values (or when general
// compression is asked for), FSST for strings when it pays, else plain.
func newVarZip(pg *writePage, vals *varVals, maxLen int) *varZip {
	e := &varZip{vals: vals, large: vals.large}
	comp := pg.compression()
	if comp == "none" {
		return e
	}
	if (maxLen > perValueZstdMin || comp == "zstd" || comp == "lz4") && len(vals.Data) >= codec.FSSTMinInputSize {
		e.zstd = true
		if _, level, _, err := userCompression(pg); err == nil && level != nil {
			e.level = *level
		}
		return e
	}
	if comp == "fsst" || (isString(pg.spec) && maxLen >= fsstMinMaxLen && len(vals.Data) >= codec.FSSTMinInputSize) {
		if f := fsstCompress(vals); f != nil {
			e.vals, e.fsst = f.vals, f.fsst
		}
	}
	return e
}

// packedZip: VariablePackedStruct (2.2): each struct's members
// row-major, fixed-width ones raw, variable-width ones as a u32 (u64 for
// large types) length and bytes.
type packedZip struct{ vals *packedVals }

func (e *packedZip) proto() *enc21pb.CompressiveEncoding {
	p := &enc21pb.VariablePackedStruct{}
	for _, c := range e.vals.children {
		switch c := c.(type) {
		case *fixedVals:
			p.Fields = append(p.Fields, &enc21pb.VariablePackedStruct_FieldEncoding{
				Value:  flatEncoding(c.bits),
				Layout: &enc21pb.VariablePackedStruct_FieldEncoding_BitsPerValue{BitsPerValue: uint64(c.bits)},
			})
		case *varVals:
			w := 32
			if c.large {
				w = 64
			}
			p.Fields = append(p.Fields, &enc21pb.VariablePackedStruct_FieldEncoding{
				Value: &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{
					Variable: &enc21pb.Variable{Offsets: flatEncoding(w)}}},
				Layout: &enc21pb.VariablePackedStruct_FieldEncoding_BitsPerLength{BitsPerLength: uint64(w)},
			})
		}
	}
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_VariablePackedStruct{VariablePackedStruct: p}}
}
func (e *packedZip) bitsPerValue() int  { return 0 }
func (e *packedZip) bitsPerOffset() int { return 32 }
func (e *packedZip) count() int         { return e.vals.n }
func (e *packedZip) valueBytes() int {
	b := 0
	for _, c := range e.vals.children {
		switch c := c.(type) {
		case *fixedVals:
			b += e.vals.n * c.bits / 8
		case *varVals:
			w := 4
			if c.large {
				w = 8
			}
			b += e.vals.n*w + int(c.Off[len(c.Off)-1]-c.Off[0])
		}
	}
	return b
}
func (e *packedZip) appendValue(dst []byte, v int) ([]byte, error) {
	for _, c := range e.vals.children {
		switch c := c.(type) {
		case *fixedVals:
			w := c.bits / 8
			dst = append(dst, c.data[v*w:(v+1)*w]...)
		case *varVals:
			b := c.Value(v)
			if c.large {
				dst = binary.LittleEndian.AppendUint64(dst, uint64(len(b)))
			} else {
				dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
			}
			dst = append(dst, b...)
		}
	}
	return dst, nil
}

// encodeFullZip zips the page's control words and values.
func encodeFullZip(pg *writePage, enc zipEncoder) ([][]byte, *enc21pb.PageLayout, error) {
	if enc.count() != pg.values {
		return nil, nil, fmt.Errorf("full-zip encoder holds %d values, the page %d: %w", enc.count(), pg.values, lancer.ErrInvalidArgument)
	}
	if pg.items > math.MaxUint32 {
		return nil, nil, fmt.Errorf("full-zip page of %d items: %w", pg.items, lancer.ErrUnsupported)
	}
	var maxRep, maxDef uint16
	for _, r := range pg.rep {
		maxRep = max(maxRep, r)
	}
	for _, d := range pg.def {
		maxDef = max(maxDef, d)
	}
	bitsRep, bitsDef := uint32(bits.Len16(maxRep)), uint32(bits.Len16(maxDef))
	ctrl := controlWordBytes(bitsRep, bitsDef)
	fixedBits := enc.bitsPerValue()
	variable := fixedBits == 0
	if !variable && fixedBits%8 != 0 {
		return nil, nil, fmt.Errorf("full-zip values of %d bits: %w", fixedBits, lancer.ErrUnsupported)
	}
	needIndex := variable || bitsRep > 0
	prefix := enc.bitsPerOffset() / 8
	// Room for every control word, length prefix and value, so that the
	// values are copied once, straight into place.
	zipped := make([]byte, 0, pg.items*ctrl+pg.values*prefix+enc.valueBytes())
	var rowStarts []uint64
	if needIndex {
		rowStarts = make([]uint64, 0, pg.rows+1)
	}
	maxRepLevel := pg.spec.maxRep
	v := 0
	var err error
	for i := range pg.items {
		r, d := pg.levels(i)
		if needIndex && (pg.rep == nil || r == maxRepLevel) {
			rowStarts = append(rowStarts, uint64(len(zipped)))
		}
		if ctrl > 0 {
			word := uint32(r)<<bitsDef | uint32(d)
			switch ctrl {
			case 1:
				zipped = append(zipped, byte(word))
			case 2:
				zipped = binary.LittleEndian.AppendUint16(zipped, uint16(word))
			default:
				zipped = binary.LittleEndian.AppendUint32(zipped, word)
			}
		}
		if pg.def != nil && d > pg.maxVisible {
			continue
		}
		switch {
		case !variable:
			if zipped, err = enc.appendValue(zipped, v); err != nil {
				return nil, nil, err
			}
		case d == 0:
			// The length prefix goes in front of the value once its
			// length is known.
			at := len(zipped)
			zipped = append(zipped, make([]byte, prefix)...)
			if zipped, err = enc.appendValue(zipped, v); err != nil {
				return nil, nil, err
			}
			n := len(zipped) - at - prefix
			if prefix == 4 {
				if n > math.MaxUint32 {
					return nil, nil, fmt.Errorf("value of %d bytes overflows a 32-bit length: %w", n, lancer.ErrUnsupported)
				}
				binary.LittleEndian.PutUint32(zipped[at:], uint32(n))
			} else {
				binary.LittleEndian.PutUint64(zipped[at:], uint64(n))
			}
		}
		v++
	}
	l := &enc21pb.FullZipLayout{
		BitsRep:          bitsRep,
		BitsDef:          bitsDef,
		NumItems:         uint32(pg.items),
		NumVisibleItems:  uint32(pg.values),
		ValueCompression: enc.proto(),
		Layers:           pg.layers,
	}
	if variable {
		l.Details = &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: uint32(8 * prefix)}
	} else {
		l.Details = &enc21pb.FullZipLayout_BitsPerValue{BitsPerValue: uint32(fixedBits)}
	}
	bufs := [][]byte{zipped}
	if needIndex {
		rowStarts = append(rowStarts, uint64(len(zipped)))
		bufs = append(bufs, packRowIndex(rowStarts, uint64(len(zipped))))
	}
	return bufs, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_FullZipLayout{FullZipLayout: l}}, nil
}

// packRowIndex writes offsets at the narrowest width (1, 2, 4 or 8 bytes)
// that holds maxValue.
func packRowIndex(offsets []uint64, maxValue uint64) []byte {
	w := 8
	switch {
	case maxValue <= math.MaxUint8:
		w = 1
	case maxValue <= math.MaxUint16:
		w = 2
	case maxValue <= math.MaxUint32:
		w = 4
	}
	out := make([]byte, len(offsets)*w)
	for i, o := range offsets {
		putLE(out[i*w:], w, o)
	}
	return out
}
