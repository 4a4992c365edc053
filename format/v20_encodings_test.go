package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
)

// Encodings the Lance 12 fixtures do not contain (older or optional
// writers' choices: bit-packing, constants, fixed-size binary, compressed
// buffers, FSST, packed structs, dictionaries of dictionary fields, column
// and file buffers), each in a small hand-built file.

func v20U64s(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func v20U32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// v20PackBits packs values LSB-first at width bits each (the legacy
// Bitpacked layout).
func v20PackBits(values []uint64, width int) []byte {
	out := make([]byte, (len(values)*width+7)/8)
	for i, v := range values {
		for bit := range width {
			if v>>bit&1 == 1 {
				pos := i*width + bit
				out[pos/8] |= 1 << (pos % 8)
			}
		}
	}
	return out
}

// v20FastLanes packs uint32 values in FastLanes blocks (BitpackedForNonNeg).
func v20FastLanes(t testing.TB, values []uint32, width int) []byte {
	t.Helper()
	var out []byte
	for start := 0; start < len(values); start += codec.BlockLen {
		block := make([]uint32, codec.BlockLen)
		copy(block, values[start:])
		packed := make([]uint32, codec.PackedWords[uint32](width))
		if err := codec.Pack(width, block, packed); err != nil {
			t.Fatal(err)
		}
		for _, w := range packed {
			out = binary.LittleEndian.AppendUint32(out, w)
		}
	}
	return out
}

// v20ReadCells opens data and returns the cells of rows [0, rows) of the
// given projection paths (all fields when nil).
func v20ReadCells(t *testing.T, data []byte, paths []string) [][]string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := openBytes(t, "data/f.lance", data, mem)
	if err != nil {
		t.Fatal(err)
	}
	fields := r.Schema().Fields
	if paths != nil {
		s, err := r.Schema().Project(paths)
		if err != nil {
			t.Fatal(err)
		}
		fields = s.Fields
	}
	rec := v20Record(t, r, fields, 0, r.NumRows())
	defer rec.Release()
	v20CheckRanges(t, r, fields, rand.New(rand.NewPCG(4, 4)))
	return v20Cells(t, rec)
}

// v20EncodingCase is a small file of one encoding and the cells it holds.
type v20EncodingCase struct {
	name    string
	fields  []*filepb.Field
	rows    uint64
	columns []v20FileColumn
	globals [][]byte
	paths   []string // the projection read; nil for all fields
	want    [][]string
}

func (tc v20EncodingCase) file(t testing.TB) []byte {
	t.Helper()
	f := &v20File{fields: tc.fields, rows: tc.rows, columns: tc.columns, globals: tc.globals}
	data, _ := f.build(t)
	return data
}

// v20EncodingCases builds the encoding cases (the fuzzer's seeds too).
func v20EncodingCases(t testing.TB) []v20EncodingCase {
	t.Helper()
	fastValues := make([]uint32, 1500)
	var fastWant []string
	for i := range fastValues {
		fastValues[i] = uint32(i*37) % 100
		fastWant = append(fastWant, fmt.Sprint(fastValues[i]))
	}
	plain := []byte("alphabetagammadeltaalphabeta")
	zstd, err := codec.Compress(codec.CompressionZstd, 0, plain)
	if err != nil {
		t.Fatal(err)
	}
	lz4, err := codec.Compress(codec.CompressionLZ4, 0, plain)
	if err != nil {
		t.Fatal(err)
	}
	compressedBinary := func(scheme string, buf []byte) v20FilePage {
		enc := v20BinaryEnc(0, 1, 29)
		enc.GetBinary().GetBytes().GetFlat().Compression = &encpb.Compression{Scheme: scheme}
		// "alpha" "beta" null "gamma" "delta" "alphabeta"
		return v20FilePage{length: 6, enc: enc, buffers: [][]byte{v20U64s(5, 9, 9+29, 14, 19, 28), buf}}
	}
	fsstStrings, fsstPage := v20FSSTPage(t)

	return []v20EncodingCase{{
		name:   "bitpacked signed int32",
		fields: []*filepb.Field{v20Field(0, -1, "x", "int32")},
		rows:   6,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 6,
			enc:     &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Bitpacked{Bitpacked: &encpb.Bitpacked{CompressedBitsPerValue: 4, UncompressedBitsPerValue: 32, Buffer: v20Buf(0), Signed: true}}},
			buffers: [][]byte{v20PackBits([]uint64{0xd, 5, 0, 0xf, 7, 8}, 4)}}}}},
		want: [][]string{{"-3", "5", "0", "-1", "7", "-8"}},
	}, {
		name:   "bitpacked uint16 with nulls",
		fields: []*filepb.Field{v20Field(0, -1, "x", "uint16")},
		rows:   4,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 4,
			enc: v20SomeNulls(0, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Bitpacked{Bitpacked: &encpb.Bitpacked{
				CompressedBitsPerValue: 5, UncompressedBitsPerValue: 16, Buffer: v20Buf(1)}}}),
			buffers: [][]byte{{0b1011}, v20PackBits([]uint64{1, 31, 0, 17}, 5)}}}}},
		want: [][]string{{"1", "31", "null", "17"}},
	}, {
		name:   "bitpacked for non-negative uint32, two blocks",
		fields: []*filepb.Field{v20Field(0, -1, "x", "uint32")},
		rows:   1500,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 1500,
			enc: v20NoNulls(&encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_BitpackedForNonNeg{BitpackedForNonNeg: &encpb.BitpackedForNonNeg{
				CompressedBitsPerValue: 7, UncompressedBitsPerValue: 32, Buffer: v20Buf(0)}}}),
			buffers: [][]byte{v20FastLanes(t, fastValues, 7)}}}}},
		want: [][]string{fastWant},
	}, {
		name:   "constant, plain and all-null pages in one column",
		fields: []*filepb.Field{v20Field(0, -1, "x", "int64"), v20Field(1, -1, "b", "bool")},
		rows:   10,
		columns: []v20FileColumn{{pages: []v20FilePage{
			{length: 5, enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Constant{Constant: &encpb.Constant{Value: v20U64s(42)}}}},
			{length: 3, enc: v20NoNulls(v20Flat(64, 0)), buffers: [][]byte{v20U64s(1, 2, 3)}},
			{length: 2, enc: v20AllNulls()},
		}}, {pages: []v20FilePage{
			{length: 4, enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Constant{Constant: &encpb.Constant{Value: []byte{1}}}}},
			{length: 6, enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Constant{Constant: &encpb.Constant{Value: []byte{0}}}}},
		}}},
		want: [][]string{
			{"42", "42", "42", "42", "42", "1", "2", "3", "null", "null"},
			{"true", "true", "true", "true", "false", "false", "false", "false", "false", "false"},
		},
	}, {
		name:   "fixed-size binary strings",
		fields: []*filepb.Field{v20Field(0, -1, "s", "string"), v20Field(1, -1, "l", "large_binary")},
		rows:   3,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 3,
			enc: v20SomeNulls(0, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_FixedSizeBinary{FixedSizeBinary: &encpb.FixedSizeBinary{
				Bytes: v20Flat(24, 1), ByteWidth: 3}}}),
			buffers: [][]byte{{0b101}, []byte("abcdefghi")}}}}, {pages: []v20FilePage{{length: 3,
			enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_FixedSizeBinary{FixedSizeBinary: &encpb.FixedSizeBinary{
				Bytes: v20Flat(16, 0), ByteWidth: 2}}},
			buffers: [][]byte{{0, 1, 2, 3, 4, 5}}}}}},
		want: [][]string{{`"abc"`, "null", `"ghi"`}, {`"AAE="`, `"AgM="`, `"BAU="`}},
	}, {
		name:    "zstd and lz4 compressed binary bytes",
		fields:  []*filepb.Field{v20Field(0, -1, "z", "string"), v20Field(1, -1, "l", "large_string")},
		rows:    6,
		columns: []v20FileColumn{{pages: []v20FilePage{compressedBinary("zstd", zstd)}}, {pages: []v20FilePage{compressedBinary("lz4", lz4)}}},
		want: [][]string{
			{`"alpha"`, `"beta"`, "null", `"gamma"`, `"delta"`, `"alphabeta"`},
			{`"alpha"`, `"beta"`, "null", `"gamma"`, `"delta"`, `"alphabeta"`},
		},
	}, {
		name:    "fsst strings",
		fields:  []*filepb.Field{v20Field(0, -1, "s", "string")},
		rows:    uint64(len(fsstStrings)),
		columns: []v20FileColumn{{pages: []v20FilePage{fsstPage}}},
		want:    [][]string{fsstStrings},
	}, {
		name: "packed struct",
		fields: []*filepb.Field{
			{Id: 0, ParentId: -1, Name: "p", LogicalType: "struct", Metadata: map[string][]byte{schema.MetaPacked: []byte("true")}},
			v20Field(1, 0, "x", "int32"), v20Field(2, 0, "y", "double"), v20Field(3, 0, "z", "fixed_size_list:uint8:2"),
		},
		rows: 2,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 2,
			enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_PackedStruct{PackedStruct: &encpb.PackedStruct{
				Inner:  []*encpb.ArrayEncoding{v20NoNulls(v20Flat(32, 0)), v20NoNulls(v20Flat(64, 0)), v20NoNulls(v20FSLEnc(2, v20NoNulls(v20Flat(8, 0))))},
				Buffer: v20Buf(0)}}},
			buffers: [][]byte{append(append(append(append(append(v20U32s(7), v20U64s(math.Float64bits(1.5))...), 1, 2),
				v20U32s(math.MaxUint32)...), v20U64s(math.Float64bits(-2))...), 3, 4)}}}}},
		want: [][]string{{`{"x":7,"y":1.5,"z":[1,2]}`, `{"x":-1,"y":-2,"z":[3,4]}`}},
	}, {
		name: "packed struct, pruned",
		fields: []*filepb.Field{
			{Id: 0, ParentId: -1, Name: "p", LogicalType: "struct", Metadata: map[string][]byte{schema.MetaPacked: []byte("true")}},
			v20Field(1, 0, "x", "int32"), v20Field(2, 0, "y", "double"),
		},
		rows: 2,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 2,
			enc: v20SomeNulls(0, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_PackedStruct{PackedStruct: &encpb.PackedStruct{
				Inner:  []*encpb.ArrayEncoding{v20NoNulls(v20Flat(32, 0)), v20NoNulls(v20Flat(64, 0))},
				Buffer: v20Buf(1)}}}),
			buffers: [][]byte{{0b10}, append(append(append(v20U32s(7), v20U64s(math.Float64bits(1.5))...),
				v20U32s(8)...), v20U64s(math.Float64bits(-2))...)}}}}},
		paths: []string{"p.y"},
		want:  [][]string{{`null`, `{"y":-2}`}},
	}, {
		name:   "dictionary field with null items and null indices",
		fields: []*filepb.Field{v20Field(0, -1, "d", "dict:string:int8:false")},
		rows:   5,
		columns: []v20FileColumn{{pages: []v20FilePage{{length: 5,
			enc: v20DictEnc(v20SomeNulls(0, v20Flat(8, 1)), v20BinaryEnc(2, 3, 3), 3),
			// items "a", null, "b"
			buffers: [][]byte{{0b10111}, {0, 1, 2, 99, 2}, v20U64s(1, 1+3, 2), []byte("ab")}}}}},
		want: [][]string{{`"a"`, "null", `"b"`, "null", `"b"`}},
	}, {
		name:   "automatic dictionary pages, one all null",
		fields: []*filepb.Field{v20Field(0, -1, "s", "string")},
		rows:   6,
		columns: []v20FileColumn{{pages: []v20FilePage{
			{length: 4, enc: v20DictEnc(v20NoNulls(v20Flat(8, 0)), v20BinaryEnc(1, 2, 4), 2),
				buffers: [][]byte{{1, 0, 2, 2}, v20U64s(1, 3), []byte("xyy")}},
			{length: 2, enc: v20DictEnc(v20NoNulls(v20Flat(8, 0)), v20BinaryEnc(1, 2, 1), 1),
				buffers: [][]byte{{0, 0}, v20U64s(1), nil}},
		}}},
		want: [][]string{{`"x"`, "null", `"yy"`, `"yy"`, "null", "null"}},
	}, {
		name:   "column and file buffers",
		fields: []*filepb.Field{v20Field(0, -1, "x", "int32")},
		rows:   4,
		columns: []v20FileColumn{{buffers: [][]byte{v20U32s(10, 20)}, pages: []v20FilePage{
			{length: 2, enc: v20NoNulls(&encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Flat{Flat: &encpb.Flat{BitsPerValue: 32,
				Buffer: &encpb.Buffer{BufferIndex: 0, BufferType: encpb.Buffer_column}}}})},
			{length: 2, enc: v20NoNulls(&encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Flat{Flat: &encpb.Flat{BitsPerValue: 32,
				Buffer: &encpb.Buffer{BufferIndex: 1, BufferType: encpb.Buffer_file}}}})},
		}}},
		globals: [][]byte{v20U32s(30, 40)},
		want:    [][]string{{"10", "20", "30", "40"}},
	}, {
		name:   "large list over all-null items, pages misaligned",
		fields: []*filepb.Field{v20Field(0, -1, "l", "large_list"), v20Field(1, 0, "item", "int32")},
		rows:   4,
		columns: []v20FileColumn{{pages: []v20FilePage{
			// [a, b], null, [c] | []
			{length: 3, enc: v20ListEnc(0, 4, 3), buffers: [][]byte{v20U64s(2, 2+4, 3)}},
			{length: 1, enc: v20ListEnc(0, 1, 0), buffers: [][]byte{v20U64s(0)}},
		}}, {pages: []v20FilePage{
			{length: 1, enc: v20AllNulls()},
			{length: 2, enc: v20SomeNulls(0, v20Flat(32, 1)), buffers: [][]byte{{0b10}, v20U32s(0, 5)}},
		}}},
		// items: a (all-null page) | b = null, c = 5
		want: [][]string{{"[null,null]", "null", "[5]", "[]"}},
	}, {
		name:   "fixed-size list of all-null items",
		fields: []*filepb.Field{v20Field(0, -1, "v", "fixed_size_list:float:2")},
		rows:   3,
		columns: []v20FileColumn{{pages: []v20FilePage{
			{length: 3, enc: v20SomeNulls(0, v20FSLEnc(2, v20AllNulls())), buffers: [][]byte{{0b011}}},
		}}},
		want: [][]string{{"[null,null]", "[null,null]", "null"}},
	}}
}

func TestV20Encodings(t *testing.T) {
	for _, tc := range v20EncodingCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := v20ReadCells(t, tc.file(t), tc.paths)
			for c := range tc.want {
				if strings.Join(got[c], " ") != strings.Join(tc.want[c], " ") {
					t.Errorf("field %d:\n got %v\nwant %v", c, got[c], tc.want[c])
				}
			}
		})
	}
}

// v20FSSTPage builds an FSST page of 2000 strings (enough for the encoder
// to really compress), one of them null, and returns their cells.
func v20FSSTPage(t testing.TB) ([]string, v20FilePage) {
	t.Helper()
	var data []byte
	offsets := []uint32{0}
	var cells []string
	for i := range 2000 {
		s := fmt.Sprintf("lance-row-%d-of-the-fsst-page", i%37)
		if i == 5 {
			s = ""
			cells = append(cells, "null")
		} else {
			cells = append(cells, `"`+s+`"`)
		}
		data = append(data, s...)
		offsets = append(offsets, uint32(len(data)))
	}
	table, compOffsets, compressed, err := codec.FSSTEncodeAll(offsets, data)
	if err != nil {
		t.Fatal(err)
	}
	if !table.Compressed() {
		t.Fatal("the FSST table does not compress")
	}
	adjustment := uint64(len(compressed)) + 1
	var ends []byte
	for i := 1; i < len(compOffsets); i++ {
		end := uint64(compOffsets[i])
		if i-1 == 5 {
			end += adjustment
		}
		ends = binary.LittleEndian.AppendUint64(ends, end)
	}
	enc := &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Fsst{Fsst: &encpb.Fsst{Binary: v20BinaryEnc(0, 1, adjustment), SymbolTable: table.Bytes()}}}
	return cells, v20FilePage{length: 2000, enc: enc, buffers: [][]byte{ends, compressed}}
}

// TestV20Malformed breaks files in the ways the reader must catch: each
// gives an error of the right kind naming the file, never a panic.
func TestV20Malformed(t *testing.T) {
	int64s := []*filepb.Field{v20Field(0, -1, "x", "int64")}
	strs := []*filepb.Field{v20Field(0, -1, "s", "string")}
	list := []*filepb.Field{v20Field(0, -1, "l", "list"), v20Field(1, 0, "item", "int32")}
	page := func(length uint64, enc *encpb.ArrayEncoding, bufs ...[]byte) []v20FileColumn {
		return []v20FileColumn{{pages: []v20FilePage{{length: length, enc: enc, buffers: bufs}}}}
	}
	const hugeFSL = "fixed_size_list:fixed_size_list:fixed_size_binary:1073741824:1073741824:1073741824"
	flatWith := func(bits uint64, scheme string) *encpb.ArrayEncoding {
		e := v20Flat(bits, 0)
		e.GetFlat().Compression = &encpb.Compression{Scheme: scheme}
		return e
	}
	cases := []struct {
		name    string
		fields  []*filepb.Field
		rows    uint64
		columns []v20FileColumn
		want    error
	}{
		{"flat buffer too short", int64s, 3, page(3, v20NoNulls(v20Flat(64, 0)), v20U64s(1, 2)), lancer.ErrCorrupt},
		{"flat width is not the type's", int64s, 2, page(2, v20NoNulls(v20Flat(32, 0)), v20U64s(1, 2)), lancer.ErrCorrupt},
		{"page buffer index past the page", int64s, 1, page(1, v20NoNulls(v20Flat(64, 5)), v20U64s(1)), lancer.ErrCorrupt},
		{"validity too short", int64s, 9, page(9, v20SomeNulls(0, v20Flat(64, 1)), []byte{1}, make([]byte, 72)), lancer.ErrCorrupt},
		{"column of more values than rows", int64s, 1, page(2, v20NoNulls(v20Flat(64, 0)), v20U64s(1, 2)), lancer.ErrCorrupt},
		{"page of 2^40 nulls", int64s, 1 << 40, page(1<<40, v20AllNulls()), lancer.ErrCorrupt},
		{"binary end past the bytes", strs, 2, page(2, v20BinaryEnc(0, 1, 11), v20U64s(3, 10), []byte("abcde")), lancer.ErrCorrupt},
		{"binary ends decrease", strs, 2, page(2, v20BinaryEnc(0, 1, 6), v20U64s(4, 2), []byte("abcde")), lancer.ErrCorrupt},
		{"binary end past 32-bit offsets", strs, 1, page(1, v20BinaryEnc(0, 1, 1<<40), v20U64s(1<<33), nil), lancer.ErrCorrupt},
		{"unknown compression", strs, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Binary{Binary: &encpb.Binary{
			Indices: v20NoNulls(v20Flat(64, 0)), Bytes: flatWith(8, "brotli"), NullAdjustment: 2}}}, v20U64s(1), []byte("a")), lancer.ErrUnsupported},
		{"zstd garbage", int64s, 1, page(1, flatWith(64, "zstd"), []byte("not zstd at all")), lancer.ErrCorrupt},
		{"dictionary index past the items", []*filepb.Field{v20Field(0, -1, "d", "dict:string:int8:false")}, 1,
			page(1, v20DictEnc(v20NoNulls(v20Flat(8, 0)), v20BinaryEnc(1, 2, 2), 1), []byte{1}, v20U64s(1), []byte("a")), lancer.ErrCorrupt},
		{"automatic dictionary index past the items", strs, 1,
			page(1, v20DictEnc(v20NoNulls(v20Flat(8, 0)), v20BinaryEnc(1, 2, 2), 1), []byte{2}, v20U64s(1), []byte("a")), lancer.ErrCorrupt},
		{"fixed-size list of the wrong dimension", []*filepb.Field{v20Field(0, -1, "v", "fixed_size_list:float:2")}, 1,
			page(1, v20NoNulls(v20FSLEnc(3, v20NoNulls(v20Flat(32, 0)))), make([]byte, 12)), lancer.ErrCorrupt},
		{"struct encoding in a leaf column", int64s, 1, page(1, v20StructEnc()), lancer.ErrCorrupt},
		{"2.1 encoding in a 2.0 page", int64s, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Variable{Variable: &encpb.Variable{BitsPerOffset: 32}}}), lancer.ErrUnsupported},
		{"bit-packing wider than the values", int64s, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Bitpacked{Bitpacked: &encpb.Bitpacked{
			CompressedBitsPerValue: 70, UncompressedBitsPerValue: 64, Buffer: v20Buf(0)}}}, make([]byte, 9)), lancer.ErrCorrupt},
		{"fastlanes buffer short", int64s, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_BitpackedForNonNeg{BitpackedForNonNeg: &encpb.BitpackedForNonNeg{
			CompressedBitsPerValue: 3, UncompressedBitsPerValue: 64, Buffer: v20Buf(0)}}}, make([]byte, 100)), lancer.ErrCorrupt},
		{"fastlanes of width 0", int64s, 1 << 20, page(1<<20, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_BitpackedForNonNeg{BitpackedForNonNeg: &encpb.BitpackedForNonNeg{
			CompressedBitsPerValue: 0, UncompressedBitsPerValue: 64, Buffer: v20Buf(0)}}}, nil), lancer.ErrCorrupt},
		{"list end past its items", list, 2, []v20FileColumn{
			{pages: []v20FilePage{{length: 2, enc: v20ListEnc(0, 4, 3), buffers: [][]byte{v20U64s(2, 9)}}}},
			{pages: []v20FilePage{{length: 3, enc: v20NoNulls(v20Flat(32, 0)), buffers: [][]byte{v20U32s(1, 2, 3)}}}},
		}, lancer.ErrCorrupt},
		{"list ends decrease", list, 2, []v20FileColumn{
			{pages: []v20FilePage{{length: 2, enc: v20ListEnc(0, 4, 3), buffers: [][]byte{v20U64s(3, 1)}}}},
			{pages: []v20FilePage{{length: 3, enc: v20NoNulls(v20Flat(32, 0)), buffers: [][]byte{v20U32s(1, 2, 3)}}}},
		}, lancer.ErrCorrupt},
		{"list null adjustment of 0", list, 1, []v20FileColumn{
			{pages: []v20FilePage{{length: 1, enc: v20ListEnc(0, 0, 0), buffers: [][]byte{v20U64s(0)}}}},
			{},
		}, lancer.ErrCorrupt},
		{"list items column of the wrong length", list, 1, []v20FileColumn{
			{pages: []v20FilePage{{length: 1, enc: v20ListEnc(0, 3, 2), buffers: [][]byte{v20U64s(2)}}}},
			{pages: []v20FilePage{{length: 3, enc: v20NoNulls(v20Flat(32, 0)), buffers: [][]byte{v20U32s(1, 2, 3)}}}},
		}, lancer.ErrCorrupt},
		{"offsets page that is not a list", list, 1, []v20FileColumn{
			{pages: []v20FilePage{{length: 1, enc: v20NoNulls(v20Flat(64, 0)), buffers: [][]byte{v20U64s(0)}}}},
			{},
		}, lancer.ErrCorrupt},
		{"a list of 100 million null items", list, 1, []v20FileColumn{
			{pages: []v20FilePage{{length: 1, enc: v20ListEnc(0, 100e6+1, 100e6), buffers: [][]byte{v20U64s(100e6)}}}},
			{pages: []v20FilePage{{length: 100e6, enc: v20AllNulls()}}},
		}, lancer.ErrUnsupported},
		// 2^30 lists of 2^30 values of 2^30 bytes each: the size of one
		// null value must saturate, not wrap around to 0.
		{"null of a type too big to hold", []*filepb.Field{v20Field(0, -1, "v", hugeFSL)}, 1,
			page(1, v20AllNulls()), lancer.ErrUnsupported},
		{"null list items of a type too big to hold", []*filepb.Field{v20Field(0, -1, "l", "list"), v20Field(1, 0, "item", hugeFSL)}, 1, []v20FileColumn{
			{pages: []v20FilePage{{length: 1, enc: v20ListEnc(0, 3, 2), buffers: [][]byte{v20U64s(2)}}}},
			{pages: []v20FilePage{{length: 2, enc: v20AllNulls()}}},
		}, lancer.ErrUnsupported},
		{"packed struct narrower than its type", []*filepb.Field{
			{Id: 0, ParentId: -1, Name: "p", LogicalType: "struct", Metadata: map[string][]byte{schema.MetaPacked: []byte("true")}},
			v20Field(1, 0, "x", "int64"),
		}, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_PackedStruct{PackedStruct: &encpb.PackedStruct{
			Inner: []*encpb.ArrayEncoding{v20NoNulls(v20Flat(32, 0))}, Buffer: v20Buf(0)}}}, make([]byte, 8)), lancer.ErrCorrupt},
		{"fsst with a bad symbol table", strs, 1, page(1, &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Fsst{Fsst: &encpb.Fsst{
			Binary: v20BinaryEnc(0, 1, 2), SymbolTable: []byte("short")}}}, v20U64s(1), []byte("a")), lancer.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &v20File{fields: tc.fields, rows: tc.rows, columns: tc.columns}
			data, _ := f.build(t)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			err := openAndReadAll(t, "data/f.lance", data, mem)
			if err == nil {
				t.Fatalf("read without error, want %v", tc.want)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "data/f.lance") {
				t.Fatalf("error %q, want one wrapping %v that names the file", err, tc.want)
			}
		})
	}
}

// TestV20EncodingErrors covers encodings that are not array encodings.
func TestV20EncodingErrors(t *testing.T) {
	good := func() *v20File {
		return &v20File{fields: []*filepb.Field{v20Field(0, -1, "x", "int64")}, rows: 1,
			columns: []v20FileColumn{{pages: []v20FilePage{{length: 1, enc: v20NoNulls(v20Flat(64, 0)), buffers: [][]byte{v20U64s(7)}}}}}}
	}
	cases := []struct {
		name string
		edit func(f *v20File)
		want error
	}{
		{name: "blob column encoding on a plain field", want: lancer.ErrUnsupported, edit: func(f *v20File) {
			f.columns[0].encoding = &encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Blob{Blob: &encpb.Blob{}}}
		}},
		{name: "zone index column encoding", want: lancer.ErrUnsupported, edit: func(f *v20File) {
			f.columns[0].encoding = &encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_ZoneIndex{ZoneIndex: &encpb.ZoneIndex{}}}
		}},
		{name: "legacy blob field without the blob encoding", want: lancer.ErrUnsupported, edit: func(f *v20File) {
			f.fields = []*filepb.Field{{Id: 0, ParentId: -1, Name: "b", LogicalType: "large_binary", Metadata: map[string][]byte{schema.MetaBlob: []byte("true")}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.edit(f)
			data, _ := f.build(t)
			err := openAndReadAll(t, "data/f.lance", data, memory.DefaultAllocator)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "data/f.lance") {
				t.Fatalf("error %v, want one wrapping %v that names the file", err, tc.want)
			}
		})
	}
}

// TestV20DecompressionBounded: the length prefix of a compressed buffer
// comes from the file, so a few bytes claiming half a gigabyte must be
// refused before anything that size is allocated, however many bytes the
// page's offsets claim too.
func TestV20DecompressionBounded(t *testing.T) {
	const claimed = 512 << 20
	for _, scheme := range []string{"zstd", "lz4"} {
		t.Run(scheme, func(t *testing.T) {
			var compressed []byte
			if scheme == "zstd" {
				compressed = binary.LittleEndian.AppendUint64(nil, claimed)
			} else {
				compressed = binary.LittleEndian.AppendUint32(nil, claimed)
			}
			compressed = append(compressed, "not a real frame"...)
			bytesEnc := v20Flat(8, 1)
			bytesEnc.GetFlat().Compression = &encpb.Compression{Scheme: scheme}
			f := &v20File{fields: []*filepb.Field{v20Field(0, -1, "s", "large_binary")}, rows: 1, columns: []v20FileColumn{{pages: []v20FilePage{{
				length: 1,
				enc: &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Binary{Binary: &encpb.Binary{
					Indices: v20NoNulls(v20Flat(64, 0)), Bytes: bytesEnc, NullAdjustment: claimed + 1}}},
				buffers: [][]byte{v20U64s(claimed), compressed},
			}}}}}
			data, _ := f.build(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := openAndReadAll(t, "data/f.lance", data, memory.DefaultAllocator)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Errorf("err %v, want ErrCorrupt", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("a %d-byte file made the reader allocate %d bytes", len(data), grew)
			}
		})
	}
}
