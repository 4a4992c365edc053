package format

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// dictionaryMiniBlock builds a mini-block dictionary page: indices as Flat{32}
// chunk values, the dictionary as buffer 2 encoded with enc.
func dictionaryMiniBlock(t *testing.T, indices []int32, def []uint16, enc *enc21pb.CompressiveEncoding, dict []byte, items uint64) (*enc21pb.PageLayout, [][]byte) {
	layers := []enc21pb.RepDefLayer{allValidItem}
	if def != nil {
		layers = []enc21pb.RepDefLayer{nullableItem}
	}
	l, bufs := testMiniBlock{def: def, layers: layers, values: indices, chunkValues: 4}.build(t)
	l.Dictionary = enc
	l.NumDictionaryItems = items
	return miniBlockPage(l), append(bufs[:2:2], dict)
}

func TestDictionaryPage(t *testing.T) {
	words, err := codec.EncodeVariableBlock(nil, []uint32{0, 3, 8, 12}, []byte("redgreenblue"))
	if err != nil {
		t.Fatal(err)
	}
	var ints []byte
	for _, v := range []int64{-5, 1 << 40, 7} {
		ints = binary.LittleEndian.AppendUint64(ints, uint64(v))
	}
	lz4Ints, err := codec.Compress(codec.CompressionLZ4, 0, ints)
	if err != nil {
		t.Fatal(err)
	}
	general := func(scheme enc21pb.CompressionScheme, inner *enc21pb.CompressiveEncoding) *enc21pb.CompressiveEncoding {
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
			Compression: &enc21pb.BufferCompression{Scheme: scheme}, Values: inner}}}
	}
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	cases := []struct {
		name    string
		indices []int32
		def     []uint16
		enc     *enc21pb.CompressiveEncoding
		dict    []byte
		items   uint64
		dt      arrow.DataType
		want    string
	}{
		{"strings materialised", []int32{2, 0, 1, 1, 2}, nil, variableEnc(32), words, 3, arrow.BinaryTypes.String,
			`["blue","red","green","green","blue"]`},
		{"strings as large_utf8", []int32{2, 0}, nil, variableEnc(32), words, 3, arrow.BinaryTypes.LargeString, `["blue","red"]`},
		{"arrow dictionary", []int32{2, 0, 1, 1, 2}, nil, variableEnc(32), words, 3, dictType,
			`["blue","red","green","green","blue"]`},
		// A null slot's index means nothing, even out of range.
		{"null slot out of range", []int32{1, 99, 0}, []uint16{0, 1, 0}, variableEnc(32), words, 3, dictType, `["green",null,"red"]`},
		{"null slot out of range materialised", []int32{1, 99, 0}, []uint16{0, 1, 0}, variableEnc(32), words, 3, arrow.BinaryTypes.String,
			`["green",null,"red"]`},
		{"lz4 int64 dictionary", []int32{1, 2, 0}, nil, general(enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_LZ4, flatEnc(64)), lz4Ints, 3,
			arrow.PrimitiveTypes.Int64, `[1099511627776,7,-5]`},
		{"128-bit dictionary", []int32{1, 0}, nil, flatEnc(128), make([]byte, 32), 2, &arrow.FixedSizeBinaryType{ByteWidth: 16},
			`["AAAAAAAAAAAAAAAAAAAAAA==","AAAAAAAAAAAAAAAAAAAAAA=="]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			page, bufs := dictionaryMiniBlock(t, tc.indices, tc.def, tc.enc, tc.dict, tc.items)
			lp, err := newTestDecoder(mem, uint64(len(tc.indices)), tc.dt).decode(page, bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.release()
			if !arrow.TypeEqual(lp.values.DataType(), tc.dt) {
				t.Errorf("values are %s, want %s", lp.values.DataType(), tc.dt)
			}
			if d, ok := lp.values.(*array.Dictionary); ok && d.Dictionary().Len() != int(tc.items) {
				t.Errorf("dictionary of %d items, want %d", d.Dictionary().Len(), tc.items)
			}
			if got := valuesJSON(t, lp); got != tc.want {
				t.Errorf("values %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDictionaryPageCorrupt(t *testing.T) {
	words, err := codec.EncodeVariableBlock(nil, []uint32{0, 3, 8}, []byte("redgreen"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		indices []int32
		dict    []byte
		items   uint64
	}{
		{"valid slot out of range", []int32{0, 2}, words, 2},
		{"item count disagrees with the block", []int32{0, 1}, words, 3},
		{"truncated block", []int32{0, 1}, words[:10], 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, bufs := dictionaryMiniBlock(t, tc.indices, nil, variableEnc(32), tc.dict, tc.items)
			for _, dt := range []arrow.DataType{arrow.BinaryTypes.String, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}} {
				lp, err := newTestDecoder(memory.NewGoAllocator(), uint64(len(tc.indices)), dt).decode(page, bufs)
				if !errors.Is(err, lancer.ErrCorrupt) {
					lp.release()
					t.Fatalf("%s: got %v, want an error wrapping ErrCorrupt", dt, err)
				}
			}
		})
	}
}
