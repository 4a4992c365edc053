package structural

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
	"github.com/lancerdb/lancer/internal/rowjson"
)

func constantPage(l *enc21pb.ConstantLayout) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_ConstantLayout{ConstantLayout: l}}
}

func rawLevels(levels ...uint16) []byte { return slices.Clone(wordsAsBytes(levels)) }

// valuesJSON renders a page's values, nulls where the def level is not 0
// (items of pages without lists are rows).
func valuesJSON(t *testing.T, lp *leafPage) string {
	t.Helper()
	lay, err := newRepDefLayout(lp.layers)
	if err != nil {
		t.Fatal(err)
	}
	maxVisible := lay.MaxVisible
	out := []byte{'['}
	value := 0
	for i := range lp.numItems {
		def := uint16(0)
		if lp.def != nil {
			def = lp.def[i]
		}
		if def > maxVisible {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		if def != 0 {
			out = append(out, "null"...)
		} else {
			var err error
			if out, err = rowjson.AppendValue(out, lp.values, value); err != nil {
				t.Fatal(err)
			}
		}
		value++
	}
	return string(append(out, ']'))
}

func TestConstantPage(t *testing.T) {
	emptyString, err := codec.EncodeScalarBuffers(nil, [][]byte{rawLevels(0, 0, 0, 0), nil})
	if err != nil {
		t.Fatal(err)
	}
	word, err := codec.EncodeScalarBuffers(nil, [][]byte{rawLevels(0, 0, 5, 0), []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	largeWord, err := codec.EncodeScalarBuffers(nil, [][]byte{rawLevels(0, 0, 0, 0, 2, 0, 0, 0), []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	oolLevels := func(levels []uint16, width int) []byte {
		b, err := codec.EncodeOutOfLineBitpacked(nil, levels, width)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ool := func(width uint64) *enc21pb.CompressiveEncoding {
		return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{
			OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 16, Values: flatEnc(width)}}}
	}
	listLayers := []enc21pb.RepDefLayer{nullableItem, nullAndEmpty}
	cases := []struct {
		name   string
		layout *enc21pb.ConstantLayout
		bufs   [][]byte
		rows   uint64
		dt     arrow.DataType
		rep    []uint16
		want   string
	}{
		{"all null", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, nil, 3,
			arrow.BinaryTypes.String, nil, "[null,null,null]"},
		{"all null dictionary", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, nil, 2,
			&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, nil, "[null,null]"},
		{"all null vectors", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, nil, 2,
			arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), nil, "[null,null]"},
		{"all null blob descriptors", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, nil, 2,
			schema.BlobV2Descriptor, nil, "[null,null]"},
		{"2.1 all-null lists, raw levels", &enc21pb.ConstantLayout{Layers: listLayers},
			[][]byte{rawLevels(1, 1, 1, 0), rawLevels(2, 3, 1, 1)}, 3, arrow.PrimitiveTypes.Int32,
			[]uint16{1, 1, 1, 0}, "[null,null]"},
		{"2.2 all-null lists, bit-packed levels", &enc21pb.ConstantLayout{Layers: listLayers,
			RepCompression: ool(1), DefCompression: ool(2), NumRepValues: 4, NumDefValues: 4},
			[][]byte{oolLevels([]uint16{1, 1, 1, 0}, 1), oolLevels([]uint16{2, 3, 1, 1}, 2)}, 3, arrow.PrimitiveTypes.Int32,
			[]uint16{1, 1, 1, 0}, "[null,null]"},
		{"inline value", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}, InlineValue: []byte{7, 0, 0, 0}},
			nil, 3, arrow.PrimitiveTypes.Int32, nil, "[7,7,7]"},
		{"inline value with nulls", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}, InlineValue: []byte{7, 0, 0, 0}},
			[][]byte{nil, rawLevels(0, 1, 0)}, 3, arrow.PrimitiveTypes.Int32, nil, "[7,null,7]"},
		{"inline value in lists", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem, allValidList}, InlineValue: []byte{5, 0, 0, 0}},
			[][]byte{rawLevels(1, 0, 1, 0), nil}, 2, arrow.PrimitiveTypes.Int32, []uint16{1, 0, 1, 0}, "[5,5,5,5]"},
		{"inline bool", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}, InlineValue: []byte{1}},
			nil, 2, arrow.FixedWidthTypes.Boolean, nil, "[true,true]"},
		{"scalar empty string", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}},
			[][]byte{emptyString}, 2, arrow.BinaryTypes.String, nil, `["",""]`},
		{"scalar string with nulls", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}},
			[][]byte{word, nil, rawLevels(1, 0)}, 2, arrow.BinaryTypes.LargeString, nil, `[null,"hello"]`},
		{"scalar large string read as utf8", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}},
			[][]byte{largeWord}, 1, arrow.BinaryTypes.String, nil, `["hi"]`},
		{"scalar string as dictionary", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}},
			[][]byte{word}, 2, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, nil, `["hello","hello"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			lp, err := newTestDecoder(mem, tc.rows, tc.dt).Decode(constantPage(tc.layout), tc.bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Release()
			if !slices.Equal(lp.rep, tc.rep) {
				t.Errorf("rep %v, want %v", lp.rep, tc.rep)
			}
			if got := valuesJSON(t, lp); got != tc.want {
				t.Errorf("values %s, want %s", got, tc.want)
			}
		})
	}
}

func TestConstantPageCorrupt(t *testing.T) {
	cases := []struct {
		name   string
		layout *enc21pb.ConstantLayout
		bufs   [][]byte
	}{
		{"inline value with one buffer", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}, InlineValue: []byte{1, 0, 0, 0}},
			[][]byte{nil}},
		{"four buffers", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, [][]byte{nil, nil, nil, nil}},
		{"odd level bytes", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, [][]byte{nil, {0, 0, 1}}},
		{"rep and def counts differ", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem, nullAndEmpty}},
			[][]byte{rawLevels(1, 1), rawLevels(0, 0, 0)}},
		{"too few levels for the rows", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem}}, [][]byte{nil, rawLevels(0)}},
		{"empty inline value", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}, InlineValue: []byte{}}, nil},
		{"inline value of the wrong width", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}, InlineValue: []byte{1, 2}}, nil},
		{"scalar buffer garbage", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{allValidItem}}, [][]byte{{9, 9, 9, 9, 9}}},
		{"compressed level count beyond the buffer", &enc21pb.ConstantLayout{Layers: []enc21pb.RepDefLayer{nullableItem},
			DefCompression: flatEnc(16), NumDefValues: 1 << 40}, [][]byte{nil, rawLevels(0, 0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lp, err := newTestDecoder(memory.NewGoAllocator(), 2, arrow.PrimitiveTypes.Int32).Decode(constantPage(tc.layout), tc.bufs)
			if !errors.Is(err, lancer.ErrCorrupt) {
				lp.Release()
				t.Fatalf("got %v, want an error wrapping ErrCorrupt", err)
			}
		})
	}
}
