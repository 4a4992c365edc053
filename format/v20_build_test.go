package format

import (
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lancerdb/lancer/format/internal/fileio"
	v20 "github.com/lancerdb/lancer/format/internal/v20"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
)

// A test-only writer of 2.0 files: real Lance files of the fixtures have one
// page per column, so multi-page columns, misaligned list items and the
// rarer encodings are exercised with files built here, laid out the way
// Lance 12 lays them out (64-byte aligned buffers, the file descriptor as
// global buffer 0 right before the column metadata, footer version 0.3).

// v20File describes a file to build.
type v20File struct {
	fields  []*filepb.Field
	rows    uint64
	columns []v20FileColumn
	// globals are global buffers after the file descriptor (1, 2, ...).
	globals [][]byte
}

// v20FileColumn is one column: its pages, column buffers and column
// encoding (nil: plain values).
type v20FileColumn struct {
	encoding *encpb.ColumnEncoding
	buffers  [][]byte
	pages    []v20FilePage
}

// v20FilePage is one page: its value count, encoding and buffers.
type v20FilePage struct {
	length  uint64
	enc     *encpb.ArrayEncoding
	buffers [][]byte
}

// v20Span is a byte range of a built file.
type v20Span struct{ start, end int64 }

// build returns the file's bytes and where each page's buffers lie:
// spans[column][page] covers all its buffers.
func (f *v20File) build(t testing.TB) ([]byte, [][]v20Span) {
	t.Helper()
	var out []byte
	pad := func() {
		for len(out)%64 != 0 {
			out = append(out, 'H')
		}
	}
	put := func(b []byte) (uint64, uint64) {
		pad()
		off := uint64(len(out))
		out = append(out, b...)
		return off, uint64(len(b))
	}
	var globals []fileio.Range
	for _, g := range f.globals {
		off, size := put(g)
		globals = append(globals, fileio.Range{Offset: off, Size: size})
	}
	spans := make([][]v20Span, len(f.columns))
	metas := make([]*file2pb.ColumnMetadata, len(f.columns))
	for c, col := range f.columns {
		cm := &file2pb.ColumnMetadata{}
		enc := col.encoding
		if enc == nil {
			enc = &encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Values{Values: &emptypb.Empty{}}}
		}
		cm.Encoding = v20Direct(t, enc, v20.ColumnEncodingName)
		for _, b := range col.buffers {
			off, size := put(b)
			cm.BufferOffsets = append(cm.BufferOffsets, off)
			cm.BufferSizes = append(cm.BufferSizes, size)
		}
		for _, p := range col.pages {
			page := &file2pb.ColumnMetadata_Page{Length: p.length, Encoding: v20Direct(t, p.enc, v20.ArrayEncodingName)}
			pad()
			span := v20Span{int64(len(out)), int64(len(out))}
			for _, b := range p.buffers {
				off, size := put(b)
				page.BufferOffsets = append(page.BufferOffsets, off)
				page.BufferSizes = append(page.BufferSizes, size)
				span.end = int64(off + size)
			}
			spans[c] = append(spans[c], span)
			cm.Pages = append(cm.Pages, page)
		}
		metas[c] = cm
	}
	fd, err := proto.Marshal(&filepb.FileDescriptor{Schema: &filepb.Schema{Fields: f.fields}, Length: f.rows})
	if err != nil {
		t.Fatal(err)
	}
	fdOff, fdSize := put(fd)
	globals = append([]fileio.Range{{Offset: fdOff, Size: fdSize}}, globals...)
	columnMetaStart := uint64(len(out))
	var cmo []byte
	for _, cm := range metas {
		b, err := proto.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(out)))
		cmo = binary.LittleEndian.AppendUint64(cmo, uint64(len(b)))
		out = append(out, b...)
	}
	cmoPos := uint64(len(out))
	out = append(out, cmo...)
	gboPos := uint64(len(out))
	for _, g := range globals {
		out = binary.LittleEndian.AppendUint64(out, g.Offset)
		out = binary.LittleEndian.AppendUint64(out, g.Size)
	}
	out = binary.LittleEndian.AppendUint64(out, columnMetaStart)
	out = binary.LittleEndian.AppendUint64(out, cmoPos)
	out = binary.LittleEndian.AppendUint64(out, gboPos)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(globals)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(f.columns)))
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint16(out, 3)
	out = append(out, fileio.Magic...)
	return out, spans
}

// v20Direct wraps msg in an Any the way Lance does ("/" + message name).
func v20Direct(t testing.TB, msg proto.Message, name string) *file2pb.Encoding {
	t.Helper()
	value, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := proto.Marshal(&anypb.Any{TypeUrl: "/" + name, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	return &file2pb.Encoding{Location: &file2pb.Encoding_Direct{Direct: &file2pb.DirectEncoding{Encoding: a}}}
}

// Encoding tree builders.

func v20Buf(i uint32) *encpb.Buffer { return &encpb.Buffer{BufferIndex: i} }

func v20Flat(bits uint64, buf uint32) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Flat{Flat: &encpb.Flat{BitsPerValue: bits, Buffer: v20Buf(buf)}}}
}

func v20NoNulls(values *encpb.ArrayEncoding) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_NoNulls{NoNulls: &encpb.Nullable_NoNull{Values: values}}}}}
}

func v20SomeNulls(validity uint32, values *encpb.ArrayEncoding) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_SomeNulls{SomeNulls: &encpb.Nullable_SomeNull{Validity: v20Flat(1, validity), Values: values}}}}}
}

func v20AllNulls() *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_AllNulls{AllNulls: &encpb.Nullable_AllNull{}}}}}
}

func v20BinaryEnc(indices, bytes uint32, adjustment uint64) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Binary{Binary: &encpb.Binary{
		Indices: v20NoNulls(v20Flat(64, indices)), Bytes: v20Flat(8, bytes), NullAdjustment: adjustment}}}
}

func v20ListEnc(offsets uint32, adjustment, numItems uint64) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_List{List: &encpb.List{
		Offsets: v20NoNulls(v20Flat(64, offsets)), NullOffsetAdjustment: adjustment, NumItems: numItems}}}
}

func v20FSLEnc(dim uint32, items *encpb.ArrayEncoding) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_FixedSizeList{FixedSizeList: &encpb.FixedSizeList{Dimension: dim, Items: items}}}
}

func v20StructEnc() *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Struct{Struct: &encpb.SimpleStruct{}}}
}

func v20DictEnc(indices, items *encpb.ArrayEncoding, numItems uint32) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Dictionary{Dictionary: &encpb.Dictionary{
		Indices: indices, Items: items, NumDictionaryItems: numItems}}}
}

// v20Field is a schema field.
func v20Field(id, parent int32, name, logicalType string) *filepb.Field {
	return &filepb.Field{Id: id, ParentId: parent, Name: name, LogicalType: logicalType, Nullable: true}
}

// v20PageRanges cuts n values into pages of the given sizes, repeating the
// last size.
func v20PageRanges(n int, sizes ...int) [][2]int {
	var out [][2]int
	for start, i := 0, 0; start < n; i++ {
		size := sizes[min(i, len(sizes)-1)]
		out = append(out, [2]int{start, min(start+size, n)})
		start += size
	}
	return out
}

// v20Validity returns the LSB-first validity of arr[a:b] and whether it
// has nulls.
func v20Validity(arr arrow.Array, a, b int) ([]byte, bool) {
	bm := make([]byte, bitutil.BytesForBits(int64(b-a)))
	nulls := false
	for i := a; i < b; i++ {
		if arr.IsValid(i) {
			bitutil.SetBit(bm, i-a)
		} else {
			nulls = true
		}
	}
	return bm, nulls
}

// v20LeafPages encodes a leaf array the way Lance 12's 2.0 writer does, in
// pages of the given sizes: fixed-width values (and fixed-size lists of
// them) as Nullable{Flat}, strings and binaries as Binary with the
// null_adjustment trick.
func v20LeafPages(t testing.TB, arr arrow.Array, sizes ...int) []v20FilePage {
	t.Helper()
	var pages []v20FilePage
	for _, r := range v20PageRanges(arr.Len(), sizes...) {
		a, b := r[0], r[1]
		var page v20FilePage
		switch arr := arr.(type) {
		case *array.String, *array.Binary, *array.LargeString:
			bl := arr.(array.BinaryLike)
			var total uint64
			for i := a; i < b; i++ {
				if arr.IsValid(i) {
					total += uint64(bl.ValueLen(i))
				}
			}
			// A null row stores its end (= its start: nulls take no
			// bytes) plus the adjustment, one more than the page's bytes.
			adjustment := total + 1
			var ends, data []byte
			for i := a; i < b; i++ {
				if arr.IsValid(i) {
					data = append(data, v20.BinaryValue(bl, i)...)
				}
				end := uint64(len(data))
				if arr.IsNull(i) {
					end += adjustment
				}
				ends = binary.LittleEndian.AppendUint64(ends, end)
			}
			page = v20FilePage{enc: v20BinaryEnc(0, 1, adjustment), buffers: [][]byte{ends, data}}
		case *array.FixedSizeList:
			dim := int(arr.DataType().(*arrow.FixedSizeListType).Len())
			items := arr.ListValues()
			bits, _ := v20.BitWidth(items.DataType())
			values := v20FixedBytes(t, items, a*dim, b*dim)
			var bufs [][]byte
			var itemsEnc *encpb.ArrayEncoding
			listValidity, listNulls := v20Validity(arr, a, b)
			next := uint32(0)
			if listNulls {
				bufs = append(bufs, listValidity)
				next++
			}
			if iv, itemNulls := v20Validity(items, a*dim, b*dim); itemNulls {
				bufs = append(bufs, iv, values)
				itemsEnc = v20SomeNulls(next, v20Flat(uint64(bits), next+1))
			} else {
				bufs = append(bufs, values)
				itemsEnc = v20NoNulls(v20Flat(uint64(bits), next))
			}
			enc := v20FSLEnc(uint32(dim), itemsEnc)
			if listNulls {
				enc = v20SomeNulls(0, enc)
			} else {
				enc = v20NoNulls(enc)
			}
			page = v20FilePage{enc: enc, buffers: bufs}
		default:
			bits, ok := v20.BitWidth(arr.DataType())
			if !ok {
				t.Fatalf("v20LeafPages: %s", arr.DataType())
			}
			values := v20FixedBytes(t, arr, a, b)
			if validity, nulls := v20Validity(arr, a, b); nulls {
				page = v20FilePage{enc: v20SomeNulls(0, v20Flat(uint64(bits), 1)), buffers: [][]byte{validity, values}}
			} else {
				page = v20FilePage{enc: v20NoNulls(v20Flat(uint64(bits), 0)), buffers: [][]byte{values}}
			}
		}
		page.length = uint64(b - a)
		pages = append(pages, page)
	}
	return pages
}

// v20FixedBytes returns the values buffer of arr[a:b] (booleans as a
// bitmap starting at bit 0).
func v20FixedBytes(t testing.TB, arr arrow.Array, a, b int) []byte {
	t.Helper()
	if bools, ok := arr.(*array.Boolean); ok {
		bm := make([]byte, bitutil.BytesForBits(int64(b-a)))
		for i := a; i < b; i++ {
			if bools.Value(i) {
				bitutil.SetBit(bm, i-a)
			}
		}
		return bm
	}
	bits, ok := v20.BitWidth(arr.DataType())
	if !ok {
		t.Fatalf("v20FixedBytes: %s", arr.DataType())
	}
	w := bits / 8
	data := arr.Data()
	buf := data.Buffers()[1].Bytes()
	off := data.Offset()
	return append([]byte(nil), buf[(off+a)*w:(off+b)*w]...)
}

// v20ListPages encodes the offsets column of a list array in pages of the
// given sizes (each page's offsets relative to its first item, null lists
// shifted by null_offset_adjustment) and returns the items the pages cover,
// for the item columns (which page on their own).
func v20ListPages(t testing.TB, arr *array.List, sizes ...int) ([]v20FilePage, arrow.Array) {
	t.Helper()
	off := func(i int) int64 { return v20ListOffset(arr, i) }
	var pages []v20FilePage
	for _, r := range v20PageRanges(arr.Len(), sizes...) {
		a, b := r[0], r[1]
		numItems := uint64(off(b) - off(a))
		adjustment := numItems + 1
		var buf []byte
		for i := a; i < b; i++ {
			end := uint64(off(i+1) - off(a))
			if arr.IsNull(i) {
				end += adjustment
			}
			buf = binary.LittleEndian.AppendUint64(buf, end)
		}
		pages = append(pages, v20FilePage{length: uint64(b - a), enc: v20ListEnc(0, adjustment, numItems), buffers: [][]byte{buf}})
	}
	return pages, array.NewSlice(arr.ListValues(), off(0), off(arr.Len()))
}

// v20ListOffset is where list i of arr starts in its values (for i = n:
// where the last list ends).
func v20ListOffset(arr *array.List, i int) int64 {
	if i < arr.Len() {
		start, _ := arr.ValueOffsets(i)
		return start
	}
	if i == 0 {
		return 0
	}
	_, end := arr.ValueOffsets(i - 1)
	return end
}

// v20StructPage is a struct's header column: one page, no buffers.
func v20StructPage(rows int) []v20FilePage {
	return []v20FilePage{{length: uint64(rows), enc: v20StructEnc()}}
}
