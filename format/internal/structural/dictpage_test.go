package structural

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/codec"
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
	emptyWords, err := codec.EncodeVariableBlock(nil, []uint32{0}, nil)
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
		// Every slot null: the dictionary may be empty, every index out of range.
		{"empty fixed-width dictionary", []int32{0, 3}, []uint16{1, 1}, flatEnc(64), nil, 0, arrow.PrimitiveTypes.Int64, `[null,null]`},
		{"empty variable dictionary", []int32{0, 0}, []uint16{1, 1}, variableEnc(32), emptyWords, 0, arrow.BinaryTypes.String, `[null,null]`},
		{"empty arrow dictionary", []int32{0, 0}, []uint16{1, 1}, variableEnc(32), emptyWords, 0, dictType, `[null,null]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			page, bufs := dictionaryMiniBlock(t, tc.indices, tc.def, tc.enc, tc.dict, tc.items)
			lp, err := newTestDecoder(mem, uint64(len(tc.indices)), tc.dt).Decode(page, bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Release()
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
	// Out-of-line bit-packing at width 0 stores any number of values in no
	// bytes; the item count must not size an allocation on its own.
	zeroWidth := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{
		OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 64, Values: flatEnc(0)}}}
	cases := []struct {
		name    string
		indices []int32
		enc     *enc21pb.CompressiveEncoding
		dict    []byte
		items   uint64
	}{
		{"valid slot out of range", []int32{0, 2}, variableEnc(32), words, 2},
		{"item count disagrees with the block", []int32{0, 1}, variableEnc(32), words, 3},
		{"truncated block", []int32{0, 1}, variableEnc(32), words[:10], 2},
		{"item count beyond an empty bit-packed block", []int32{0, 1}, zeroWidth, nil, maxPageItems - codec.BlockLen + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			page, bufs := dictionaryMiniBlock(t, tc.indices, nil, tc.enc, tc.dict, tc.items)
			for _, dt := range []arrow.DataType{arrow.BinaryTypes.String, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}} {
				lp, err := newTestDecoder(memory.NewGoAllocator(), uint64(len(tc.indices)), dt).Decode(page, bufs)
				if !errors.Is(err, lancer.ErrCorrupt) {
					lp.Release()
					t.Fatalf("%s: got %v, want an error wrapping ErrCorrupt", dt, err)
				}
			}
			runtime.ReadMemStats(&after)
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Errorf("rejecting the page allocated %d bytes", grown)
			}
		})
	}
}

// TestPlainPageOfNarrowDictionary reads plain and constant pages of a
// dictionary field whose index type cannot number every value: the values
// become the distinct entries.
func TestPlainPageOfNarrowDictionary(t *testing.T) {
	word, err := codec.EncodeScalarBuffers(nil, [][]byte{rawLevels(0, 0, 5, 0), []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	values := make([]int32, 300)
	for i := range values {
		values[i] = int32(i % 3)
	}
	plain, plainBufs := testMiniBlock{layers: []enc21pb.RepDefLayer{allValidItem}, values: values, chunkValues: 64}.build(t)
	cases := []struct {
		name      string
		page      *enc21pb.PageLayout
		bufs      [][]byte
		valueType arrow.DataType
		want      func(i int) string
		entries   int
	}{
		{"constant string", constantPage(&enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}}), [][]byte{word},
			arrow.BinaryTypes.String, func(int) string { return `"hello"` }, 1},
		{"mini-block ints", miniBlockPage(plain), plainBufs,
			arrow.PrimitiveTypes.Int32, func(i int) string { return fmt.Sprint(i % 3) }, 3},
	}
	for _, tc := range cases {
		for _, idx := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int16} {
			t.Run(tc.name+"/"+idx.String(), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				dt := &arrow.DictionaryType{IndexType: idx, ValueType: tc.valueType}
				lp, err := newTestDecoder(mem, 300, dt).Decode(tc.page, tc.bufs)
				if err != nil {
					t.Fatal(err)
				}
				defer lp.Release()
				want := make([]string, 300)
				for i := range want {
					want[i] = tc.want(i)
				}
				if got, want := valuesJSON(t, lp), "["+strings.Join(want, ",")+"]"; got != want {
					t.Errorf("values %.80s…, want %.80s…", got, want)
				}
				if d := lp.values.(*array.Dictionary); idx.ID() != arrow.INT16 && d.Dictionary().Len() != tc.entries {
					t.Errorf("dictionary of %d entries, want %d", d.Dictionary().Len(), tc.entries)
				}
			})
		}
	}
	t.Run("more distinct values than indices", func(t *testing.T) {
		for i := range values {
			values[i] = int32(i)
		}
		l, bufs := testMiniBlock{layers: []enc21pb.RepDefLayer{allValidItem}, values: values, chunkValues: 64}.build(t)
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.PrimitiveTypes.Int32}
		lp, err := newTestDecoder(memory.NewGoAllocator(), 300, dt).Decode(miniBlockPage(l), bufs)
		if !errors.Is(err, lancer.ErrUnsupported) {
			lp.Release()
			t.Fatalf("got %v, want an error wrapping ErrUnsupported", err)
		}
	})
}
