package formattest

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/schema"
)

// EdgeCase is hand-built data that the writer must shred right.
type EdgeCase struct {
	Name string
	// Make returns the schema and batches (owned by the caller) for a 2.2
	// file (v22) or a 2.1 one; a nil schema means the case is not one of
	// that version.
	Make func(t testing.TB, mem memory.Allocator, v22 bool) (*schema.Schema, []arrow.RecordBatch)
	// Only22 marks data that 2.1 cannot store.
	Only22 bool
}

// oneColumn wraps arrays of one type as single-column batches.
func oneColumn(t testing.TB, dt arrow.DataType, md arrow.Metadata, arrs ...arrow.Array) (*schema.Schema, []arrow.RecordBatch) {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "c", Type: dt, Nullable: true, Metadata: md}}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for _, a := range arrs {
		recs = append(recs, array.NewRecordBatch(s.LogicalArrow(), []arrow.Array{a}, int64(a.Len())))
		a.Release()
	}
	return s, recs
}

func int32Array(mem memory.Allocator, vals []int32, valid []bool) arrow.Array {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.AppendValues(vals, valid)
	return b.NewArray()
}

var EdgeCases = []EdgeCase{
	{Name: "null buffer without nulls", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		// Builders keep a validity bitmap even when nothing is null.
		valid := make([]bool, 3000)
		vals := make([]int32, 3000)
		for i := range valid {
			valid[i], vals[i] = true, int32(i%7)
		}
		a := int32Array(mem, vals, valid)
		if a.Data().Buffers()[0] == nil {
			t.Fatal("the builder kept no validity bitmap")
		}
		return oneColumn(t, a.DataType(), arrow.Metadata{}, a)
	}},
	{Name: "null lists over child values", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		// Row 1 is null but its offsets span three children; row 3 is
		// null and empty; row 4 empty.
		child := int32Array(mem, []int32{1, 2, 3, 4, 5, 6, 7}, nil)
		defer child.Release()
		offsets := arrow.Int32Traits.CastToBytes([]int32{0, 2, 5, 6, 6, 6, 7})
		validity := []byte{0b00110101}
		dt := arrow.ListOf(arrow.PrimitiveTypes.Int32)
		data := array.NewData(dt, 6, []*memory.Buffer{memory.NewBufferBytes(validity), memory.NewBufferBytes(offsets)},
			[]arrow.ArrayData{child.Data()}, 2, 0)
		defer data.Release()
		return oneColumn(t, dt, arrow.Metadata{}, array.MakeFromData(data))
	}},
	{Name: "dictionaries differ between batches", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
		mk := func(dict []string, dictValid []bool, keys []int32, keyValid []bool) arrow.Array {
			sb := array.NewStringBuilder(mem)
			defer sb.Release()
			sb.AppendValues(dict, dictValid)
			d := sb.NewArray()
			defer d.Release()
			k := int32Array(mem, keys, keyValid)
			defer k.Release()
			return array.NewDictionaryArray(dt, k, d)
		}
		keys := make([]int32, 300)
		for i := range keys {
			keys[i] = int32(i % 3)
		}
		a := mk([]string{"red", "green", "blue"}, nil, keys, nil)
		// A valid index to a null dictionary value is a null.
		b := mk([]string{"blue", "", "cyan"}, []bool{true, false, true}, keys, nil)
		return oneColumn(t, dt, arrow.Metadata{}, a, b)
	}},
	{Name: "packed struct", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float64})
		return oneColumn(t, dt, arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"}), packedColumn(mem, dt, 2000))
	}},
	{Name: "packed struct with a string", Only22: true, Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "s", Type: arrow.BinaryTypes.String})
		return oneColumn(t, dt, arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"}), packedColumn(mem, dt, 2000))
	}},
	{Name: "empty struct", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf()
		data := array.NewData(dt, 5, []*memory.Buffer{nil}, nil, 0, 0)
		defer data.Release()
		return oneColumn(t, dt, arrow.Metadata{}, array.MakeFromData(data))
	}},
	{Name: "null type", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		return oneColumn(t, arrow.Null, arrow.Metadata{}, array.NewNull(17))
	}},
	{Name: "long runs of empty lists", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		// 200 000 empty lists before the first value: one mini-block chunk
		// would need more levels than it can count.
		b := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
		defer b.Release()
		vb := b.ValueBuilder().(*array.Int32Builder)
		for i := range 200_003 {
			b.Append(true)
			if i >= 200_000 {
				vb.Append(int32(i))
			}
		}
		a := b.NewArray()
		return oneColumn(t, a.DataType(), arrow.Metadata{}, a)
	}},
	{Name: "nested fixed-size lists", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.FixedSizeListOf(3, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32))
		g := NewRandGen(5, true)
		a := g.column(mem, dt, 500, 0.1)
		return oneColumn(t, dt, arrow.Metadata{}, a)
	}},
	{Name: "wide fixed-size binary", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := &arrow.FixedSizeBinaryType{ByteWidth: 300}
		g := NewRandGen(6, true)
		a := g.column(mem, dt, 300, 0.2)
		return oneColumn(t, dt, arrow.Metadata{}, a)
	}},
	{Name: "all null struct leaf beside values", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
		b := array.NewStructBuilder(mem, dt)
		defer b.Release()
		for i := range 100 {
			b.Append(i%10 != 0)
			if i%10 != 0 {
				b.FieldBuilder(0).(*array.Int64Builder).AppendNull()
				b.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprint(i))
			}
		}
		return oneColumn(t, dt, arrow.Metadata{}, b.NewArray())
	}},
	{Name: "lists of nulls and empties only", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		b := array.NewListBuilder(mem, arrow.BinaryTypes.String)
		defer b.Release()
		for i := range 3000 {
			switch i % 3 {
			case 0:
				b.AppendNull()
			case 1:
				b.Append(true)
			default:
				b.Append(true)
				b.ValueBuilder().AppendNull()
			}
		}
		a := b.NewArray()
		return oneColumn(t, a.DataType(), arrow.Metadata{}, a)
	}},
	{Name: "constant values", Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		st := arrow.StructOf(
			arrow.Field{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
			arrow.Field{Name: "f", Type: &arrow.FixedSizeBinaryType{ByteWidth: 40}, Nullable: true},
		)
		var arrs []arrow.Array
		for _, n := range []int{1, 50, 3000} {
			b := array.NewStructBuilder(mem, st)
			for i := range n {
				b.Append(true)
				nullRow := n == 50 && i%7 == 0
				appendOrNull := func(fb array.Builder, f func()) {
					if nullRow {
						fb.AppendNull()
					} else {
						f()
					}
				}
				appendOrNull(b.FieldBuilder(0), func() { b.FieldBuilder(0).(*array.Int32Builder).Append(7) })
				appendOrNull(b.FieldBuilder(1), func() { b.FieldBuilder(1).(*array.StringBuilder).Append("") })
				appendOrNull(b.FieldBuilder(2), func() { b.FieldBuilder(2).(*array.BooleanBuilder).Append(true) })
				appendOrNull(b.FieldBuilder(3), func() { b.FieldBuilder(3).(*array.Decimal128Builder).Append(decimal128.FromI64(12345)) })
				appendOrNull(b.FieldBuilder(4), func() { b.FieldBuilder(4).(*array.FixedSizeBinaryBuilder).Append(make([]byte, 40)) })
			}
			arrs = append(arrs, b.NewArray())
			b.Release()
		}
		as := arrow.NewSchema([]arrow.Field{{Name: "c", Type: st, Nullable: false}}, nil)
		s, err := schema.FromArrow(as, 0)
		if err != nil {
			t.Fatal(err)
		}
		var recs []arrow.RecordBatch
		for _, a := range arrs {
			recs = append(recs, array.NewRecordBatch(s.LogicalArrow(), []arrow.Array{a}, int64(a.Len())))
			a.Release()
		}
		return s, recs
	}},
	{Name: "maps", Only22: true, Make: func(t testing.TB, mem memory.Allocator, _ bool) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)
		b := array.NewMapBuilderWithType(mem, dt)
		defer b.Release()
		for i := range 1500 {
			switch i % 4 {
			case 0:
				b.AppendNull()
			case 1:
				b.Append(true)
			default:
				b.Append(true)
				for j := range i % 5 {
					b.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint("k", j))
					if j == 2 {
						b.ItemBuilder().AppendNull()
					} else {
						b.ItemBuilder().(*array.Int32Builder).Append(int32(i * j))
					}
				}
			}
		}
		return oneColumn(t, dt, arrow.Metadata{}, b.NewArray())
	}},
	{Name: "legacy blob in a struct", Make: func(t testing.TB, mem memory.Allocator, v22 bool) (*schema.Schema, []arrow.RecordBatch) {
		if v22 {
			return nil, nil
		}
		dt := arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.LargeBinary, Nullable: true,
			Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})})
		b := array.NewStructBuilder(mem, dt)
		defer b.Release()
		for i := range 40 {
			b.Append(i%5 != 0)
			if i%5 != 0 {
				if i%3 == 0 {
					b.FieldBuilder(0).AppendNull()
				} else {
					b.FieldBuilder(0).(*array.BinaryBuilder).Append(make([]byte, i*10))
				}
			}
		}
		return oneColumn(t, dt, arrow.Metadata{}, b.NewArray())
	}},
}

// packedColumn makes n structs, every tenth null, whose members are never
// null (a packed struct stores no member validity).
func packedColumn(mem memory.Allocator, dt *arrow.StructType, n int) arrow.Array {
	g := NewRandGen(uint64(n), true)
	b := array.NewStructBuilder(mem, dt)
	defer b.Release()
	for i := range n {
		if i%10 == 0 {
			b.AppendNull()
			continue
		}
		b.Append(true)
		for m := range b.NumField() {
			g.append(b.FieldBuilder(m), 0)
		}
	}
	return b.NewArray()
}
