package structural

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// testFullZip describes a full-zip page for the test builder.
type testFullZip struct {
	rep, def []uint16
	layers   []enc21pb.RepDefLayer
	// values of the visible items (variable-width: of the valid ones, with
	// nil for null slots).
	values [][]byte
	// width of fixed-width values; 0 for variable-width with 32-bit lengths.
	width int
	enc   *enc21pb.CompressiveEncoding
}

func (z testFullZip) build(t testing.TB) (*enc21pb.FullZipLayout, [][]byte, uint64) {
	t.Helper()
	lay, err := newRepDefLayout(z.layers)
	if err != nil {
		t.Fatal(err)
	}
	maxRep, maxVisible := lay.MaxRep, lay.MaxVisible
	bitsOf := func(levels []uint16) uint32 {
		m := uint16(0)
		for _, l := range levels {
			m = max(m, l)
		}
		b := uint32(0)
		for m>>b != 0 {
			b++
		}
		return b
	}
	bitsRep, bitsDef := bitsOf(z.rep), bitsOf(z.def)
	ctrl := controlWordBytes(bitsRep, bitsDef)
	numItems := len(z.values)
	if z.def != nil {
		numItems = len(z.def)
	} else if z.rep != nil {
		numItems = len(z.rep)
	}
	var data, index []byte
	rows := uint64(0)
	value := 0
	for i := range numItems {
		rep, def := uint16(0), uint16(0)
		if z.rep != nil {
			rep = z.rep[i]
		}
		if z.def != nil {
			def = z.def[i]
		}
		if z.rep == nil || rep == maxRep {
			index = binary.LittleEndian.AppendUint32(index, uint32(len(data)))
			rows++
		}
		word := uint32(rep)<<bitsDef | uint32(def)
		for b := range ctrl {
			data = append(data, byte(word>>(8*b)))
		}
		if def > maxVisible {
			continue
		}
		v := z.values[value]
		value++
		switch {
		case z.width > 0:
			data = append(data, v...)
		case def == 0:
			data = binary.LittleEndian.AppendUint32(data, uint32(len(v)))
			data = append(data, v...)
		}
	}
	index = binary.LittleEndian.AppendUint32(index, uint32(len(data)))
	l := &enc21pb.FullZipLayout{
		BitsRep: bitsRep, BitsDef: bitsDef,
		NumItems: uint32(numItems), NumVisibleItems: uint32(len(z.values)),
		ValueCompression: z.enc, Layers: z.layers,
	}
	bufs := [][]byte{data}
	if z.width > 0 {
		l.Details = &enc21pb.FullZipLayout_BitsPerValue{BitsPerValue: uint32(8 * z.width)}
	} else {
		l.Details = &enc21pb.FullZipLayout_BitsPerOffset{BitsPerOffset: 32}
	}
	if z.width == 0 || z.rep != nil {
		bufs = append(bufs, index)
	}
	return l, bufs, rows
}

func fullZipPage(l *enc21pb.FullZipLayout) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_FullZipLayout{FullZipLayout: l}}
}

func variableEnc(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEnc(bits)}}}
}

func TestFullZipFixed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	def := []uint16{0, 1, 0, 0, 1}
	var values [][]byte
	for i := range def {
		values = append(values, binary.LittleEndian.AppendUint64(nil, uint64(i*1000)))
	}
	l, bufs, rows := testFullZip{def: def, layers: []enc21pb.RepDefLayer{nullableItem}, values: values, width: 8, enc: flatEnc(64)}.build(t)
	lp, err := newTestDecoder(mem, rows, arrow.PrimitiveTypes.Int64).Decode(fullZipPage(l), bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	if !slices.Equal(lp.def, def) || lp.rep != nil {
		t.Errorf("levels rep %v def %v", lp.rep, lp.def)
	}
	if got := lp.values.(*array.Int64).Int64Values(); !slices.Equal(got, []int64{0, 1000, 2000, 3000, 4000}) {
		t.Errorf("values %v", got)
	}
}

// TestFullZipVectors decodes 10-float vectors whose items may be null
// (FixedSizeList with has_validity: each value is 2 bytes of item validity
// then the 40 bytes of floats).
func TestFullZipVectors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const dim = 10
	var values [][]byte
	for row := range 3 {
		v := []byte{0xFF, 0x03} // all 10 items valid
		if row == 1 {
			v = []byte{0xFE, 0x01} // item 0 and item 9 null
		}
		for i := range dim {
			v = binary.LittleEndian.AppendUint32(v, math.Float32bits(float32(row*dim+i)))
		}
		values = append(values, v)
	}
	enc := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_FixedSizeList{FixedSizeList: &enc21pb.FixedSizeList{
		ItemsPerValue: dim, HasValidity: true, Values: flatEnc(32)}}}
	l, bufs, rows := testFullZip{layers: []enc21pb.RepDefLayer{allValidItem}, values: values, width: 2 + 4*dim, enc: enc}.build(t)
	dt := arrow.FixedSizeListOf(dim, arrow.PrimitiveTypes.Float32)
	lp, err := newTestDecoder(mem, rows, dt).Decode(fullZipPage(l), bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	items := lp.values.(*array.FixedSizeList).ListValues().(*array.Float32)
	if items.Len() != 3*dim || items.NullN() != 2 || !items.IsNull(10) || !items.IsNull(19) || items.Value(25) != 25 {
		t.Errorf("items %v", items)
	}
}

// TestFullZipVariable decodes a list<utf8?> page with null and empty lists
// and null items, plain, per-value zstd and per-value FSST.
func TestFullZipVariable(t *testing.T) {
	rep := []uint16{1, 0, 0, 1, 1, 1}
	def := []uint16{0, 1, 0, 2, 3, 0}
	values := [][]byte{[]byte("alpha"), nil, []byte(""), []byte("delta")}
	want := []string{"alpha", "", "", "delta"}
	compress := func(scheme codec.CompressionScheme) [][]byte {
		out := make([][]byte, len(values))
		for i, v := range values {
			if v != nil {
				c, err := codec.Compress(scheme, 0, v)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = c
			}
		}
		return out
	}
	table := codec.NewPlainFSSTTable()
	cases := []struct {
		name   string
		values [][]byte
		enc    *enc21pb.CompressiveEncoding
	}{
		{"plain", values, variableEnc(32)},
		{"zstd", compress(codec.CompressionZstd), &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
			Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD}, Values: variableEnc(32)}}}},
		{"lz4", compress(codec.CompressionLZ4), &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
			Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_LZ4}, Values: variableEnc(32)}}}},
		{"fsst", values, &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Fsst{Fsst: &enc21pb.Fsst{
			SymbolTable: table.Bytes(), Values: variableEnc(32)}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			l, bufs, rows := testFullZip{rep: rep, def: def, layers: []enc21pb.RepDefLayer{nullableItem, nullAndEmpty}, values: tc.values, enc: tc.enc}.build(t)
			lp, err := newTestDecoder(mem, rows, arrow.BinaryTypes.String).Decode(fullZipPage(l), bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Release()
			if !slices.Equal(lp.rep, rep) || !slices.Equal(lp.def, def) || lp.numRows != 4 {
				t.Errorf("levels rep %v def %v rows %d", lp.rep, lp.def, lp.numRows)
			}
			s := lp.values.(*array.String)
			for i, w := range want {
				if s.Value(i) != w {
					t.Errorf("value %d = %q, want %q", i, s.Value(i), w)
				}
			}
		})
	}
}

// TestFullZipBlobV2 decodes blob v2 descriptors (VariablePackedStruct), a
// null row included.
func TestFullZipBlobV2(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	row := func(kind uint8, pos, size uint64, id uint32, uri string) []byte {
		b := []byte{kind}
		b = binary.LittleEndian.AppendUint64(b, pos)
		b = binary.LittleEndian.AppendUint64(b, size)
		b = binary.LittleEndian.AppendUint32(b, id)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(uri)))
		return append(b, uri...)
	}
	field := func(bits uint64) *enc21pb.VariablePackedStruct_FieldEncoding {
		return &enc21pb.VariablePackedStruct_FieldEncoding{Value: flatEnc(bits), Layout: &enc21pb.VariablePackedStruct_FieldEncoding_BitsPerValue{BitsPerValue: bits}}
	}
	enc := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_VariablePackedStruct{VariablePackedStruct: &enc21pb.VariablePackedStruct{
		Fields: []*enc21pb.VariablePackedStruct_FieldEncoding{field(8), field(64), field(64), field(32),
			{Value: variableEnc(32), Layout: &enc21pb.VariablePackedStruct_FieldEncoding_BitsPerLength{BitsPerLength: 32}}},
	}}}
	values := [][]byte{row(0, 64, 10, 0, ""), nil, row(2, 0, 70000, 2, "s3://b/k")}
	l, bufs, rows := testFullZip{def: []uint16{0, 1, 0}, layers: []enc21pb.RepDefLayer{nullableItem}, values: values, enc: enc}.build(t)
	lp, err := newTestDecoder(mem, rows, schema.BlobV2Descriptor).Decode(fullZipPage(l), bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	st := lp.values.(*array.Struct)
	if st.Field(2).(*array.Uint64).Value(2) != 70000 || st.Field(4).(*array.String).Value(2) != "s3://b/k" ||
		st.Field(1).(*array.Uint64).Value(0) != 64 || st.Field(0).(*array.Uint8).Value(1) != 0 {
		t.Errorf("descriptors %v", st)
	}
}

func TestFullZipCorrupt(t *testing.T) {
	rep := []uint16{1, 0, 1, 1}
	def := []uint16{0, 0, 2, 0}
	values := [][]byte{[]byte("ab"), []byte("cde"), []byte("f")}
	base := testFullZip{rep: rep, def: def, layers: []enc21pb.RepDefLayer{allValidItem, nullAndEmpty}, values: values, enc: variableEnc(32)}
	cases := []struct {
		name   string
		damage func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte
	}{
		{"truncated", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			bufs[0] = bufs[0][:len(bufs[0])-1]
			return bufs
		}},
		{"trailing bytes", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			bufs[0] = append(bufs[0], 0)
			return bufs
		}},
		{"absurd length", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint32(bufs[0][1:], 1<<31)
			return bufs
		}},
		{"row index of the wrong size", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			bufs[1] = bufs[1][:len(bufs[1])-1]
			return bufs
		}},
		{"row index not ending at the buffer end", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint32(bufs[1][len(bufs[1])-4:], 3)
			return bufs
		}},
		{"missing row index", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			return bufs[:1]
		}},
		{"item count too large", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			l.NumItems = 1 << 30
			return bufs
		}},
		{"visible count disagrees", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			l.NumVisibleItems = 2
			return bufs
		}},
		{"def level beyond the layers", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			l.Layers = []enc21pb.RepDefLayer{allValidItem, allValidList}
			return bufs
		}},
		{"no details", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			l.Details = nil
			return bufs
		}},
		{"levels wider than u16", func(l *enc21pb.FullZipLayout, bufs [][]byte) [][]byte {
			l.BitsDef = 17
			return bufs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, bufs, rows := base.build(t)
			bufs = tc.damage(l, bufs)
			lp, err := newTestDecoder(memory.NewGoAllocator(), rows, arrow.BinaryTypes.String).Decode(fullZipPage(l), bufs)
			if !errors.Is(err, lancer.ErrCorrupt) {
				lp.Release()
				t.Fatalf("got %v, want an error wrapping ErrCorrupt", err)
			}
		})
	}
}
