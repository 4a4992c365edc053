package v20

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

// Decoding one page of a 2.0 file (docs/spec/lance-format.md §7): the page's encoding is a tree
// of lance.encodings.ArrayEncoding messages whose leaves name the page's
// buffers. The tree is decoded into a v20Page of the field's Arrow type.
//
// Pages backed by buffers are decoded whole, once, into an Arrow array; its
// size is bounded by the buffers (every value costs at least one bit).
// Pages without buffers behind their values (all nulls, a constant, an
// automatic dictionary whose strings are expanded) stay lazy and build only
// the slices asked for, so a page that claims billions of null values costs
// nothing until someone reads them.

// v20Page is one decoded page. slice returns values [off, off+n) of the
// page as a new reference; the caller guarantees the range lies inside the
// page.
type v20Page interface {
	slice(off, n int) (arrow.Array, error)
	release()
}

// Names of the protobuf messages 2.0 files wrap in google.protobuf.Any.
const (
	ArrayEncodingName  = "lance.encodings.ArrayEncoding"
	ColumnEncodingName = "lance.encodings.ColumnEncoding"
)

// v20Corruptf and v20Unsupportedf report problems inside one page or column;
// the cursor adds the file, column, page and field.
func v20Corruptf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrCorrupt)...)
}

func v20Unsupportedf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrUnsupported)...)
}

// v20ParseEncoding unpacks an Encoding holding an Any of the message named
// want into msg.
func v20ParseEncoding(e *file2pb.Encoding, want string, msg proto.Message) error {
	switch e.GetLocation().(type) {
	case *file2pb.Encoding_Direct:
	case *file2pb.Encoding_Indirect:
		return v20Unsupportedf("encoding stored out of line (indirect)")
	default:
		return v20Corruptf("no encoding")
	}
	var a anypb.Any
	if err := proto.Unmarshal(e.GetDirect().GetEncoding(), &a); err != nil {
		return v20Corruptf("encoding is not a protobuf Any: %v", err)
	}
	url := a.GetTypeUrl()
	if name := url[strings.LastIndexByte(url, '/')+1:]; name != want {
		return v20Unsupportedf("encoding %q is not a %s", url, want)
	}
	if err := proto.Unmarshal(a.GetValue(), msg); err != nil {
		return v20Corruptf("%s: %v", want, err)
	}
	return nil
}

// v20PageDecoder decodes the encoding tree of one page of column col.
type v20PageDecoder struct {
	r    *fileio.File
	col  int
	bufs [][]byte // the page's buffers
	// other holds the column and file buffers the encoding names, read
	// beforehand.
	other map[v20BufferKey][]byte
	mem   memory.Allocator
	// allow reports whether n values of dt with no buffer behind them may
	// be materialized now.
	allow func(n int, dt arrow.DataType) error
}

// page decodes n values of type dt.
func (d *v20PageDecoder) page(enc *encpb.ArrayEncoding, dt arrow.DataType, n int) (v20Page, error) {
	switch e := enc.GetArrayEncoding().(type) {
	case *encpb.ArrayEncoding_Nullable:
		return d.nullable(e.Nullable, dt, n)
	case *encpb.ArrayEncoding_Constant:
		return d.constant(e.Constant, dt, n)
	case *encpb.ArrayEncoding_FixedSizeList:
		return d.fixedSizeList(e.FixedSizeList, dt, n)
	case *encpb.ArrayEncoding_Dictionary:
		if _, ok := dt.(*arrow.DictionaryType); !ok {
			return d.dictionaryExpanded(e.Dictionary, dt, n)
		}
	case nil:
		return nil, v20Corruptf("empty array encoding")
	}
	arr, err := d.eager(enc, dt, n)
	if err != nil {
		return nil, err
	}
	return &v20ArrayPage{arr: arr}, nil
}

// array decodes n values of type dt into an array, materializing lazy
// pages.
func (d *v20PageDecoder) array(enc *encpb.ArrayEncoding, dt arrow.DataType, n int) (arrow.Array, error) {
	p, err := d.page(enc, dt, n)
	if err != nil {
		return nil, err
	}
	defer p.release()
	return p.slice(0, n)
}

// eager decodes the encodings whose values are all backed by buffers.
func (d *v20PageDecoder) eager(enc *encpb.ArrayEncoding, dt arrow.DataType, n int) (arrow.Array, error) {
	switch e := enc.GetArrayEncoding().(type) {
	case *encpb.ArrayEncoding_Flat, *encpb.ArrayEncoding_Bitpacked, *encpb.ArrayEncoding_BitpackedForNonNeg:
		bits, ok := BitWidth(dt)
		if !ok {
			return nil, v20Corruptf("%s values in a fixed-width encoding", dt)
		}
		values, err := d.fixed(enc, n, bits)
		if err != nil {
			return nil, err
		}
		return v20Checked(arrays.FixedWidthArray(dt, n, values, nil))
	case *encpb.ArrayEncoding_Binary:
		return d.binary(e.Binary, dt, n)
	case *encpb.ArrayEncoding_Dictionary:
		return d.dictionary(e.Dictionary, dt, n)
	case *encpb.ArrayEncoding_Fsst:
		return d.fsst(e.Fsst, dt, n)
	case *encpb.ArrayEncoding_PackedStruct:
		return d.packedStruct(e.PackedStruct, dt, n)
	case *encpb.ArrayEncoding_FixedSizeBinary:
		return d.fixedSizeBinary(e.FixedSizeBinary, dt, n)
	case *encpb.ArrayEncoding_List, *encpb.ArrayEncoding_Struct:
		return nil, v20Corruptf("%s encoding in a column of %s values", v20EncodingName(enc), dt)
	}
	return nil, v20Unsupportedf("array encoding %s in a 2.0 page", v20EncodingName(enc))
}

// v20Checked gives the build helpers' errors (buffers too short for the
// values) their category: the sizes came from the file.
func v20Checked(arr arrow.Array, err error) (arrow.Array, error) {
	if err != nil {
		return nil, v20Corruptf("%v", err)
	}
	return arr, nil
}

// v20EncodingName names the variant of enc for messages.
func v20EncodingName(enc *encpb.ArrayEncoding) string {
	if enc.GetArrayEncoding() == nil {
		return "(none)"
	}
	return string(enc.ProtoReflect().WhichOneof(enc.ProtoReflect().Descriptor().Oneofs().Get(0)).Name())
}

// nullable decodes the Nullable wrapper: values without nulls, values with a
// validity bitmap, or no values at all.
func (d *v20PageDecoder) nullable(nl *encpb.Nullable, dt arrow.DataType, n int) (v20Page, error) {
	switch x := nl.GetNullability().(type) {
	case *encpb.Nullable_NoNulls:
		return d.page(x.NoNulls.GetValues(), dt, n)
	case *encpb.Nullable_AllNulls:
		return &v20NullPage{mem: d.mem, dt: dt, allow: d.allow}, nil
	case *encpb.Nullable_SomeNulls:
		validity, err := d.fixed(x.SomeNulls.GetValidity(), n, 1)
		if err != nil {
			return nil, fmt.Errorf("validity: %w", err)
		}
		values, err := d.array(x.SomeNulls.GetValues(), dt, n)
		if err != nil {
			return nil, err
		}
		defer values.Release()
		return &v20ArrayPage{arr: v20WithValidity(values, validity)}, nil
	}
	return nil, v20Corruptf("nullable encoding without nullability")
}

// v20WithValidity returns arr (fresh, offset 0) with validity ANDed into its
// own.
func v20WithValidity(arr arrow.Array, validity []byte) arrow.Array {
	d := arr.Data()
	n := d.Len()
	if validity == nil || arr.DataType().ID() == arrow.NULL {
		arr.Retain()
		return arr
	}
	bm := validity[:bitutil.BytesForBits(int64(n))]
	if old := d.Buffers()[0]; old != nil && d.NullN() > 0 {
		merged := make([]byte, len(bm))
		bitutil.BitmapAnd(old.Bytes(), bm, int64(d.Offset()), 0, merged, 0, int64(n))
		bm = merged
	}
	bufs := slices.Clone(d.Buffers())
	bufs[0] = memory.NewBufferBytes(bm)
	var nd *array.Data
	if d.DataType().ID() == arrow.DICTIONARY {
		nd = array.NewDataWithDictionary(d.DataType(), n, bufs, arrays.ValidityNulls(bm, n), d.Offset(), d.Dictionary().(*array.Data))
	} else {
		nd = array.NewData(d.DataType(), n, bufs, d.Children(), arrays.ValidityNulls(bm, n), d.Offset())
	}
	defer nd.Release()
	return array.MakeFromData(nd)
}

// maxV20PageValues bounds the values of one page, list items of a fixed-size
// list page included: Arrow lengths and 32-bit offsets are Go ints.
const maxV20PageValues = 1<<31 - 1

// maxV20Bits bounds n·bits so that byte counts of plausible pages never
// overflow; any larger count cannot be backed by a buffer anyway.
const maxV20Bits = 1 << 60

// fixed decodes n values of bits bits each (1: an LSB-first bitmap) from a
// Flat, Bitpacked or BitpackedForNonNeg encoding, possibly wrapped in a
// Nullable without nulls, as little-endian bytes.
func (d *v20PageDecoder) fixed(enc *encpb.ArrayEncoding, n, bits int) ([]byte, error) {
	if n < 0 || bits <= 0 || uint64(n) > maxV20Bits/uint64(bits) {
		return nil, v20Corruptf("%d values of %d bits", n, bits)
	}
	switch e := enc.GetArrayEncoding().(type) {
	case *encpb.ArrayEncoding_Nullable:
		if nn := e.Nullable.GetNoNulls(); nn != nil {
			return d.fixed(nn.GetValues(), n, bits)
		}
		return nil, v20Unsupportedf("nullable %d-bit values where plain ones were expected", bits)
	case *encpb.ArrayEncoding_Flat:
		return d.flat(e.Flat, n, bits)
	case *encpb.ArrayEncoding_Bitpacked:
		b := e.Bitpacked
		if bits != 8 && bits != 16 && bits != 32 && bits != 64 {
			return nil, v20Unsupportedf("bit-packing of %d-bit values", bits)
		}
		if int(b.GetUncompressedBitsPerValue()) != bits {
			return nil, v20Corruptf("bit-packed values of %d bits where %d-bit values were expected", b.GetUncompressedBitsPerValue(), bits)
		}
		buf, err := d.buffer(b.GetBuffer())
		if err != nil {
			return nil, err
		}
		return v20Unbitpack(buf, n, bits, int(min(b.GetCompressedBitsPerValue(), 65)), b.GetSigned())
	case *encpb.ArrayEncoding_BitpackedForNonNeg:
		b := e.BitpackedForNonNeg
		if int(b.GetUncompressedBitsPerValue()) != bits {
			return nil, v20Corruptf("bit-packed values of %d bits where %d-bit values were expected", b.GetUncompressedBitsPerValue(), bits)
		}
		buf, err := d.buffer(b.GetBuffer())
		if err != nil {
			return nil, err
		}
		width := int(min(b.GetCompressedBitsPerValue(), 65))
		switch bits {
		case 8:
			return v20UnpackFastLanes[uint8](buf, n, width)
		case 16:
			return v20UnpackFastLanes[uint16](buf, n, width)
		case 32:
			return v20UnpackFastLanes[uint32](buf, n, width)
		case 64:
			return v20UnpackFastLanes[uint64](buf, n, width)
		}
		return nil, v20Unsupportedf("bit-packing of %d-bit values", bits)
	}
	return nil, v20Unsupportedf("%s encoding of %d-bit values", v20EncodingName(enc), bits)
}

// flat decodes a Flat buffer of n values, decompressing it whole if the
// writer compressed it (docs/spec/lance-format.md §9.9 framing).
func (d *v20PageDecoder) flat(f *encpb.Flat, n, bits int) ([]byte, error) {
	if int(min(f.GetBitsPerValue(), math.MaxInt32)) != bits {
		return nil, v20Corruptf("flat values of %d bits where %d-bit values were expected", f.GetBitsPerValue(), bits)
	}
	need := (n*bits + 7) / 8
	buf, err := d.buffer(f.GetBuffer())
	if err != nil {
		return nil, err
	}
	if c := f.GetCompression(); c != nil && c.GetScheme() != "none" && c.GetScheme() != "" {
		var scheme codec.CompressionScheme
		switch c.GetScheme() {
		case "zstd":
			scheme = codec.CompressionZstd
		case "lz4":
			scheme = codec.CompressionLZ4
		default:
			return nil, v20Unsupportedf("flat buffer compressed with %q", c.GetScheme())
		}
		// need comes from counts in the file; the buffer's own size bounds
		// how much it may expand to (as for 2.1+ pages).
		if buf, err = codec.Decompress(scheme, buf, min(need, fileio.DecompressLimit(len(buf)))); err != nil {
			return nil, err
		}
	}
	if len(buf) < need {
		return nil, v20Corruptf("%d values of %d bits need %d bytes, the buffer has %d", n, bits, need, len(buf))
	}
	return buf[:need:need], nil
}

// buffer returns the bytes a Buffer names: one of the page's buffers, the
// column's or the file's.
func (d *v20PageDecoder) buffer(b *encpb.Buffer) ([]byte, error) {
	if b == nil {
		return nil, v20Corruptf("encoding names no buffer")
	}
	i := uint64(b.GetBufferIndex())
	switch b.GetBufferType() {
	case encpb.Buffer_page:
		if i >= uint64(len(d.bufs)) {
			return nil, v20Corruptf("page buffer %d of %d", i, len(d.bufs))
		}
		return d.bufs[i], nil
	case encpb.Buffer_column, encpb.Buffer_file:
		if buf, ok := d.other[v20BufferKey{b.GetBufferType(), i}]; ok {
			return buf, nil
		}
		return nil, v20Corruptf("%s buffer %d does not exist", b.GetBufferType(), i)
	}
	return nil, v20Unsupportedf("buffer type %d", b.GetBufferType())
}

// v20BufferKey names a column or file buffer.
type v20BufferKey struct {
	kind  encpb.Buffer_BufferType
	index uint64
}

// uints decodes n unsigned integers of any stored width (Binary and list
// offsets, dictionary indices), with their validity if the encoding has
// one.
func (d *v20PageDecoder) uints(enc *encpb.ArrayEncoding, n int) ([]uint64, []byte, error) {
	var validity []byte
	if nl := enc.GetNullable(); nl != nil {
		switch x := nl.GetNullability().(type) {
		case *encpb.Nullable_NoNulls:
			enc = x.NoNulls.GetValues()
		case *encpb.Nullable_SomeNulls:
			var err error
			if validity, err = d.fixed(x.SomeNulls.GetValidity(), n, 1); err != nil {
				return nil, nil, fmt.Errorf("validity: %w", err)
			}
			enc = x.SomeNulls.GetValues()
		default:
			return nil, nil, v20Unsupportedf("integers without values (%T)", x)
		}
	}
	var bits uint64
	switch e := enc.GetArrayEncoding().(type) {
	case *encpb.ArrayEncoding_Flat:
		bits = e.Flat.GetBitsPerValue()
	case *encpb.ArrayEncoding_Bitpacked:
		bits = e.Bitpacked.GetUncompressedBitsPerValue()
	case *encpb.ArrayEncoding_BitpackedForNonNeg:
		bits = e.BitpackedForNonNeg.GetUncompressedBitsPerValue()
	default:
		return nil, nil, v20Unsupportedf("%s encoding of integers", v20EncodingName(enc))
	}
	if bits != 8 && bits != 16 && bits != 32 && bits != 64 {
		return nil, nil, v20Corruptf("integers of %d bits", bits)
	}
	raw, err := d.fixed(enc, n, int(bits))
	if err != nil {
		return nil, nil, err
	}
	size := int(bits / 8)
	out := make([]uint64, n)
	for i := range out {
		out[i] = v20LoadWord(raw[i*size:], size)
	}
	return out, validity, nil
}

// binary decodes utf8/binary values: u64 end offsets (a null row's offset
// is its end plus null_adjustment) and the value bytes.
func (d *v20PageDecoder) binary(b *encpb.Binary, dt arrow.DataType, n int) (arrow.Array, error) {
	large, ok := arrays.BinaryType(dt)
	if !ok {
		return nil, v20Corruptf("binary encoding in a column of %s values", dt)
	}
	// The indices' own validity, if any, carries nothing: Lance marks
	// nulls with null_adjustment and reads the raw values.
	ends, _, err := d.uints(b.GetIndices(), n)
	if err != nil {
		return nil, fmt.Errorf("binary offsets: %w", err)
	}
	adj := b.GetNullAdjustment()
	offsets := arrays.NewOffsetWriter(large, n)
	validity := arrays.NullBitmap{N: n}
	var prev uint64
	for i, v := range ends {
		end := v
		if v >= adj {
			end = v - adj
			validity.SetNull(i)
		}
		if end < prev {
			return nil, v20Corruptf("binary value %d ends at byte %d, before the previous one (%d)", i, end, prev)
		}
		if !large && end > math.MaxInt32 {
			return nil, v20Corruptf("binary value %d ends at byte %d, past 32-bit offsets", i, end)
		}
		prev = end
		offsets.Add(end)
	}
	if prev > maxV20Bits/8 {
		return nil, v20Corruptf("binary values of %d bytes", prev)
	}
	data, err := d.fixed(b.GetBytes(), int(prev), 8)
	if err != nil {
		return nil, fmt.Errorf("binary bytes: %w", err)
	}
	return v20Checked(arrays.VarWidthArray(dt, n, offsets.Buf, data, validity.Finish()))
}

// fsst decodes FSST-compressed strings: a Binary of compressed values and
// the page's symbol table.
func (d *v20PageDecoder) fsst(f *encpb.Fsst, dt arrow.DataType, n int) (arrow.Array, error) {
	large, ok := arrays.BinaryType(dt)
	if !ok {
		return nil, v20Corruptf("fsst encoding in a column of %s values", dt)
	}
	table, err := codec.ParseFSSTTable(f.GetSymbolTable())
	if err != nil {
		return nil, err
	}
	inner, err := d.array(f.GetBinary(), dt, n)
	if err != nil {
		return nil, err
	}
	defer inner.Release()
	compressed, values := v20BinaryParts(inner, large)
	validity := arrays.NullBitmap{N: n}
	for i := range n {
		if inner.IsNull(i) {
			validity.SetNull(i)
		}
	}
	ends, decoded, err := codec.FSSTDecodeAll(table, compressed, values)
	if err != nil {
		return nil, err
	}
	if !large && len(decoded) > math.MaxInt32 {
		return nil, v20Corruptf("fsst values decode to %d bytes, past 32-bit offsets", len(decoded))
	}
	offsets := arrays.NewOffsetWriter(large, n)
	for _, end := range ends[1:] {
		offsets.Add(end)
	}
	return v20Checked(arrays.VarWidthArray(dt, n, offsets.Buf, decoded, validity.Finish()))
}

// fixedSizeBinary decodes utf8/binary values that all have byte_width
// bytes (a legacy encoding): the bytes back to back.
func (d *v20PageDecoder) fixedSizeBinary(f *encpb.FixedSizeBinary, dt arrow.DataType, n int) (arrow.Array, error) {
	width := int(f.GetByteWidth())
	if fsb, ok := dt.(*arrow.FixedSizeBinaryType); ok {
		if fsb.ByteWidth != width {
			return nil, v20Corruptf("fixed-size binary of %d bytes in a column of %s values", width, dt)
		}
		data, err := d.fixed(f.GetBytes(), n, 8*width)
		if err != nil {
			return nil, err
		}
		return v20Checked(arrays.FixedWidthArray(dt, n, data, nil))
	}
	large, ok := arrays.BinaryType(dt)
	if !ok {
		return nil, v20Corruptf("fixed-size binary encoding in a column of %s values", dt)
	}
	if width <= 0 || (!large && uint64(n)*uint64(width) > math.MaxInt32) {
		return nil, v20Corruptf("%d fixed-size binary values of %d bytes", n, width)
	}
	data, err := d.fixed(f.GetBytes(), n, 8*width)
	if err != nil {
		return nil, err
	}
	offsets := arrays.NewOffsetWriter(large, n)
	for i := 1; i <= n; i++ {
		offsets.Add(uint64(i * width))
	}
	return v20Checked(arrays.VarWidthArray(dt, n, offsets.Buf, data, nil))
}

// constant decodes a page whose values are all one fixed-width value.
func (d *v20PageDecoder) constant(c *encpb.Constant, dt arrow.DataType, n int) (v20Page, error) {
	bits, ok := BitWidth(dt)
	if !ok {
		return nil, v20Unsupportedf("constant encoding of %s values", dt)
	}
	want := max(bits/8, 1)
	if len(c.GetValue()) != want {
		return nil, v20Corruptf("constant of %d bytes for %s values (%d bytes)", len(c.GetValue()), dt, want)
	}
	return &v20ConstantPage{dt: dt, bits: bits, value: c.GetValue(), allow: d.allow}, nil
}

// fixedSizeList decodes n lists of dimension items each.
func (d *v20PageDecoder) fixedSizeList(f *encpb.FixedSizeList, dt arrow.DataType, n int) (v20Page, error) {
	fsl, ok := dt.(*arrow.FixedSizeListType)
	if !ok {
		return nil, v20Corruptf("fixed-size list encoding in a column of %s values", dt)
	}
	dim := int(fsl.Len())
	if uint64(f.GetDimension()) != uint64(fsl.Len()) {
		return nil, v20Corruptf("fixed-size list of dimension %d in a column of %s values", f.GetDimension(), dt)
	}
	if dim <= 0 {
		return nil, v20Unsupportedf("fixed-size lists of dimension %d", dim)
	}
	if uint64(n) > maxV20PageValues/uint64(dim) {
		return nil, v20Corruptf("%d fixed-size lists of %d items", n, dim)
	}
	items, err := d.page(f.GetItems(), fsl.Elem(), n*dim)
	if err != nil {
		return nil, fmt.Errorf("fixed-size list items: %w", err)
	}
	if ap, ok := items.(*v20ArrayPage); ok {
		defer ap.release()
		return &v20ArrayPage{arr: arrays.FixedSizeListArray(fsl, n, ap.arr, nil)}, nil
	}
	return &v20FSLPage{dt: fsl, dim: dim, items: items}, nil
}

// dictionary decodes a page into a dictionary array (the field's type is a
// dictionary): indices of the field's index type into the page's items.
// Lance moves nulls into the items, so an index pointing at a null item is
// marked null as well.
func (d *v20PageDecoder) dictionary(dict *encpb.Dictionary, dt arrow.DataType, n int) (arrow.Array, error) {
	dictType, ok := dt.(*arrow.DictionaryType)
	if !ok {
		return nil, v20Corruptf("dictionary in a column of %s values", dt)
	}
	items, indices, indexValid, err := d.dictionaryParts(dict, dictType.ValueType, n)
	if err != nil {
		return nil, err
	}
	defer items.Release()
	idxBits, ok := BitWidth(dictType.IndexType)
	if !ok || !arrow.IsInteger(dictType.IndexType.ID()) {
		return nil, v20Unsupportedf("dictionary index type %s", dictType.IndexType)
	}
	size := idxBits / 8
	maxIndex := uint64(math.MaxUint64) >> (64 - idxBits)
	if arrow.IsSignedInteger(dictType.IndexType.ID()) {
		maxIndex >>= 1
	}
	out := make([]byte, 0, n*size)
	validity := arrays.NullBitmap{N: n}
	for i, idx := range indices {
		switch {
		case indexValid != nil && !bitutil.BitIsSet(indexValid, i):
			idx = 0
			validity.SetNull(i)
		case idx >= uint64(items.Len()) || idx > maxIndex:
			return nil, v20Corruptf("dictionary index %d of row %d past the %d items", idx, i, items.Len())
		case items.IsNull(int(idx)):
			validity.SetNull(i)
		}
		out = v20AppendWord(out, idx, size)
	}
	bits := validity.Finish()
	bufs := []*memory.Buffer{arrays.WrapBuffer(bits), memory.NewBufferBytes(out)}
	data := array.NewDataWithDictionary(dt, n, bufs, arrays.ValidityNulls(bits, n), 0, items.Data().(*array.Data))
	defer data.Release()
	return array.MakeFromData(data), nil
}

// dictionaryParts decodes a dictionary page's items (as values of itemType)
// and indices.
func (d *v20PageDecoder) dictionaryParts(dict *encpb.Dictionary, itemType arrow.DataType, n int) (arrow.Array, []uint64, []byte, error) {
	indices, validity, err := d.uints(dict.GetIndices(), n)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dictionary indices: %w", err)
	}
	numItems := dict.GetNumDictionaryItems()
	if uint64(numItems) > maxV20PageValues {
		return nil, nil, nil, v20Corruptf("dictionary of %d items", numItems)
	}
	items, err := d.array(dict.GetItems(), itemType, int(numItems))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dictionary items: %w", err)
	}
	return items, indices, validity, nil
}

// dictionaryExpanded decodes a dictionary the writer chose for a plain
// utf8 column (few distinct strings): indices are 1-based, 0 meaning null,
// and the reader returns the strings themselves.
func (d *v20PageDecoder) dictionaryExpanded(dict *encpb.Dictionary, dt arrow.DataType, n int) (v20Page, error) {
	large, ok := arrays.BinaryType(dt)
	if !ok {
		return nil, v20Corruptf("dictionary in a column of %s values", dt)
	}
	items, indices, validity, err := d.dictionaryParts(dict, dt, n)
	if err != nil {
		return nil, err
	}
	for i, idx := range indices {
		if validity != nil && !bitutil.BitIsSet(validity, i) {
			indices[i] = 0
			continue
		}
		if numItems := items.Len(); idx > uint64(numItems) {
			items.Release()
			return nil, v20Corruptf("dictionary index %d of row %d past the %d items (1-based)", idx, i, numItems)
		}
	}
	return &v20ExpandedDictPage{dt: dt, large: large, items: items.(array.BinaryLike), indices: indices}, nil
}

// packedStruct decodes a struct stored row-major: every row is the
// concatenation of its members' fixed-width values. The members' widths come
// from the inner encodings and must match the struct type's.
func (d *v20PageDecoder) packedStruct(p *encpb.PackedStruct, dt arrow.DataType, n int) (arrow.Array, error) {
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return nil, v20Corruptf("packed struct encoding in a column of %s values", dt)
	}
	if len(p.GetInner()) != st.NumFields() {
		return nil, v20Corruptf("packed struct of %d members for a struct of %d", len(p.GetInner()), st.NumFields())
	}
	widths := make([]int, st.NumFields())
	rowWidth := 0
	for i, f := range st.Fields() {
		w, err := v20PackedWidth(f.Type)
		if err != nil {
			return nil, err
		}
		if stored, ok := v20PackedEncodingWidth(p.GetInner()[i]); !ok || stored != w {
			return nil, v20Corruptf("packed struct member %q stored as %s, its type %s needs %d bytes", f.Name, v20EncodingName(p.GetInner()[i]), f.Type, w)
		}
		widths[i] = w
		rowWidth += w
	}
	buf, err := d.buffer(p.GetBuffer())
	if err != nil {
		return nil, err
	}
	if rowWidth > 0 && len(buf)/rowWidth < n {
		return nil, v20Corruptf("%d packed rows of %d bytes need %d bytes, the buffer has %d", n, rowWidth, n*rowWidth, len(buf))
	}
	members := make([]arrow.Array, st.NumFields())
	defer fileio.ReleaseAll(members)
	at := 0
	for i, f := range st.Fields() {
		w := widths[i]
		col := make([]byte, n*w)
		for row := range n {
			copy(col[row*w:(row+1)*w], buf[row*rowWidth+at:])
		}
		at += w
		m, err := v20PackedMember(f.Type, n, col)
		if err != nil {
			return nil, err
		}
		members[i] = m
	}
	return arrays.StructArray(st, n, members, nil), nil
}

// v20PackedWidth is the byte width of a packed struct member type:
// fixed-width values or fixed-size lists of them.
func v20PackedWidth(dt arrow.DataType) (int, error) {
	if fsl, ok := dt.(*arrow.FixedSizeListType); ok {
		w, err := v20PackedWidth(fsl.Elem())
		if err != nil {
			return 0, err
		}
		if fsl.Len() <= 0 || w > math.MaxInt32/int(fsl.Len()) {
			return 0, v20Unsupportedf("packed struct member %s", dt)
		}
		return w * int(fsl.Len()), nil
	}
	bits, ok := BitWidth(dt)
	if !ok || bits%8 != 0 {
		return 0, v20Unsupportedf("packed struct member of type %s", dt)
	}
	return bits / 8, nil
}

// v20PackedEncodingWidth reads a member's byte width from its inner
// encoding.
func v20PackedEncodingWidth(enc *encpb.ArrayEncoding) (int, bool) {
	switch e := enc.GetArrayEncoding().(type) {
	case *encpb.ArrayEncoding_Nullable:
		if nn := e.Nullable.GetNoNulls(); nn != nil {
			return v20PackedEncodingWidth(nn.GetValues())
		}
	case *encpb.ArrayEncoding_Flat:
		if b := e.Flat.GetBitsPerValue(); b%8 == 0 && b > 0 && b <= 8*math.MaxInt32 {
			return int(b / 8), true
		}
	case *encpb.ArrayEncoding_FixedSizeList:
		w, ok := v20PackedEncodingWidth(e.FixedSizeList.GetItems())
		dim := int(e.FixedSizeList.GetDimension())
		if ok && dim > 0 && w <= math.MaxInt32/dim {
			return w * dim, true
		}
	}
	return 0, false
}

// v20PackedMember wraps n packed values of dt.
func v20PackedMember(dt arrow.DataType, n int, data []byte) (arrow.Array, error) {
	if fsl, ok := dt.(*arrow.FixedSizeListType); ok {
		items, err := v20PackedMember(fsl.Elem(), n*int(fsl.Len()), data)
		if err != nil {
			return nil, err
		}
		defer items.Release()
		return arrays.FixedSizeListArray(fsl, n, items, nil), nil
	}
	return v20Checked(arrays.FixedWidthArray(dt, n, data, nil))
}

// v20ArrayPage is a page decoded into one array.
type v20ArrayPage struct{ arr arrow.Array }

func (p *v20ArrayPage) slice(off, n int) (arrow.Array, error) {
	if off == 0 && n == p.arr.Len() {
		p.arr.Retain()
		return p.arr, nil
	}
	return array.NewSlice(p.arr, int64(off), int64(off+n)), nil
}

func (p *v20ArrayPage) release() { p.arr.Release() }

// v20NullPage is a page of nulls.
type v20NullPage struct {
	mem   memory.Allocator
	dt    arrow.DataType
	allow func(int, arrow.DataType) error
}

func (p *v20NullPage) slice(_, n int) (arrow.Array, error) {
	if err := p.allow(n, p.dt); err != nil {
		return nil, err
	}
	return arrays.NullArray(p.mem, p.dt, n), nil
}

func (p *v20NullPage) release() {}

// v20ConstantPage is a page whose values are all one value.
type v20ConstantPage struct {
	dt    arrow.DataType
	bits  int
	value []byte
	allow func(int, arrow.DataType) error
}

func (p *v20ConstantPage) slice(_, n int) (arrow.Array, error) {
	if err := p.allow(n, p.dt); err != nil {
		return nil, err
	}
	var data []byte
	if p.bits == 1 {
		data = make([]byte, bitutil.BytesForBits(int64(n)))
		bitutil.SetBitsTo(data, 0, int64(n), p.value[0] != 0)
	} else {
		data = slices.Repeat(p.value, n)
	}
	return v20Checked(arrays.FixedWidthArray(p.dt, n, data, nil))
}

func (p *v20ConstantPage) release() {}

// v20FSLPage is a fixed-size list page whose items are lazy.
type v20FSLPage struct {
	dt    *arrow.FixedSizeListType
	dim   int
	items v20Page
}

func (p *v20FSLPage) slice(off, n int) (arrow.Array, error) {
	items, err := p.items.slice(off*p.dim, n*p.dim)
	if err != nil {
		return nil, err
	}
	defer items.Release()
	return arrays.FixedSizeListArray(p.dt, n, items, nil), nil
}

func (p *v20FSLPage) release() { p.items.release() }

// v20ExpandedDictPage is an automatic dictionary page: strings are copied
// out of the items for the rows sliced.
type v20ExpandedDictPage struct {
	dt      arrow.DataType
	large   bool
	items   array.BinaryLike
	indices []uint64 // 1-based, 0 = null
}

func (p *v20ExpandedDictPage) slice(off, n int) (arrow.Array, error) {
	var total uint64
	for _, idx := range p.indices[off : off+n] {
		if idx > 0 && p.items.IsValid(int(idx-1)) {
			total += uint64(p.items.ValueLen(int(idx - 1)))
		}
	}
	if !p.large && total > math.MaxInt32 {
		return nil, v20Unsupportedf("%d rows of strings take %d bytes, too many for 32-bit offsets", n, total)
	}
	offsets := arrays.NewOffsetWriter(p.large, n)
	data := make([]byte, 0, total)
	validity := arrays.NullBitmap{N: n}
	for i, idx := range p.indices[off : off+n] {
		if idx == 0 || p.items.IsNull(int(idx-1)) {
			validity.SetNull(i)
		} else {
			data = append(data, BinaryValue(p.items, int(idx-1))...)
		}
		offsets.Add(uint64(len(data)))
	}
	return v20Checked(arrays.VarWidthArray(p.dt, n, offsets.Buf, data, validity.Finish()))
}

func (p *v20ExpandedDictPage) release() { p.items.Release() }
