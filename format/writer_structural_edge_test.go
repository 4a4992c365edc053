package format

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// edgeCase is hand-built data that the writer must shred right.
type edgeCase struct {
	name string
	// make returns the schema and batches (owned by the caller).
	make func(t testing.TB, mem memory.Allocator, v Version) (*schema.Schema, []arrow.RecordBatch)
	// only2_2 marks data that 2.1 cannot store.
	only2_2 bool
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

var edgeCases = []edgeCase{
	{name: "null buffer without nulls", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "null lists over child values", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "dictionaries differ between batches", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "packed struct", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "y", Type: arrow.PrimitiveTypes.Float64})
		return oneColumn(t, dt, arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"}), packedColumn(mem, dt, 2000))
	}},
	{name: "packed struct with a string", only2_2: true, make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "s", Type: arrow.BinaryTypes.String})
		return oneColumn(t, dt, arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"}), packedColumn(mem, dt, 2000))
	}},
	{name: "empty struct", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.StructOf()
		data := array.NewData(dt, 5, []*memory.Buffer{nil}, nil, 0, 0)
		defer data.Release()
		return oneColumn(t, dt, arrow.Metadata{}, array.MakeFromData(data))
	}},
	{name: "null type", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		return oneColumn(t, arrow.Null, arrow.Metadata{}, array.NewNull(17))
	}},
	{name: "long runs of empty lists", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "nested fixed-size lists", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		dt := arrow.FixedSizeListOf(3, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32))
		g := newRandGen(5, true)
		a := g.column(mem, dt, 500, 0.1)
		return oneColumn(t, dt, arrow.Metadata{}, a)
	}},
	{name: "wide fixed-size binary", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
		dt := &arrow.FixedSizeBinaryType{ByteWidth: 300}
		g := newRandGen(6, true)
		a := g.column(mem, dt, 300, 0.2)
		return oneColumn(t, dt, arrow.Metadata{}, a)
	}},
	{name: "all null struct leaf beside values", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "lists of nulls and empties only", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "constant values", make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "maps", only2_2: true, make: func(t testing.TB, mem memory.Allocator, _ Version) (*schema.Schema, []arrow.RecordBatch) {
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
	{name: "legacy blob in a struct", make: func(t testing.TB, mem memory.Allocator, v Version) (*schema.Schema, []arrow.RecordBatch) {
		if v != Version2_1 {
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
	g := newRandGen(uint64(n), true)
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

// TestStructuralWriterEdgeCases writes each edge case in both versions and
// reads it back.
func TestStructuralWriterEdgeCases(t *testing.T) {
	for _, v := range []Version{Version2_1, Version2_2} {
		for _, c := range edgeCases {
			if c.only2_2 && v == Version2_1 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", v, c.name), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				s, recs := c.make(t, mem, v)
				if s == nil {
					t.Skip("not for this version")
				}
				defer releaseRecords(recs)
				want := fixturetest.EncodeRows(t, recs...)
				for _, pageSize := range []int{0, 4 << 10} {
					store := blob.NewMemStore("edge")
					writeStructural(t, store, "data/e.lance", s, &WriterOptions{Version: v, PageSize: pageSize, Allocator: mem}, recs...)
					r, got := readRowsJSON(t, store, "data/e.lance", mem, 777)
					if hasBlobField(s.Fields[0]) {
						// Blobs read as descriptors: check the bytes.
						checkBlobsInStruct(t, r, recs)
						continue
					}
					fixturetest.CompareRows(t, fmt.Sprintf("%s page %d", c.name, pageSize), got, want, fixturetest.CompareOptions{})
				}
			})
		}
	}
}

// checkBlobsInStruct compares the legacy blob member of a one-column struct
// with what was written.
func checkBlobsInStruct(t testing.TB, r *Reader, recs []arrow.RecordBatch) {
	t.Helper()
	arrs := readAllStructural(t, r)
	defer fileio.ReleaseAll(arrs)
	got := arrs[0].(*array.Struct)
	row := 0
	for _, rec := range recs {
		in := rec.Column(0).(*array.Struct)
		data := in.Field(0).(interface {
			IsValid(int) bool
			Value(int) []byte
		})
		for i := range in.Len() {
			if in.IsNull(i) != got.IsNull(row) {
				t.Fatalf("row %d: struct null %t, wrote %t", row, got.IsNull(row), in.IsNull(i))
			}
			if in.IsValid(i) {
				d, ok, err := BlobDescriptorAt(got.Field(0), row)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case ok != data.IsValid(i):
					t.Fatalf("row %d: blob valid %t, wrote %t", row, ok, data.IsValid(i))
				case ok:
					b, err := r.ReadBlob(context.Background(), d)
					if err != nil || string(b) != string(data.Value(i)) {
						t.Fatalf("row %d: blob of %d bytes (%v), wrote %d", row, len(b), err, len(data.Value(i)))
					}
				}
			}
			row++
		}
	}
}

// TestStructuralWriterLanceReadsEdgeCases has real Lance read the edge
// cases it supports.
func TestStructuralWriterLanceReadsEdgeCases(t *testing.T) {
	lanceReference(t)
	dir := t.TempDir()
	var cases []datasetCase
	for _, v := range []Version{Version2_1, Version2_2} {
		for i, c := range edgeCases {
			if c.only2_2 && v == Version2_1 {
				continue
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			s, recs := c.make(t, mem, v)
			if s == nil {
				continue
			}
			name := fmt.Sprintf("edge%d_%s", i, v)
			uri, _ := writeDataset(t, dir, name, s, &WriterOptions{Version: v, PageSize: 4 << 10, Allocator: mem}, recs...)
			releaseRecords(recs)
			st, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			_, rows := readRowsJSON(t, st, "data/lancer-"+name+".lance", mem, 0)
			cases = append(cases, datasetCase{name: name + " (" + c.name + ")", uri: uri, want: rows})
			mem.AssertSize(t, 0)
		}
	}
	compareWithLance(t, cases)
}

// TestStructuralWriterEmpty: files without rows, and empty batches.
func TestStructuralWriterEmpty(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, v := range []Version{Version2_1, Version2_2} {
		g := newRandGen(9, v == Version2_2)
		s := g.schema(t, 4)
		store := blob.NewMemStore("empty")
		empty := g.batch(mem, s, 0)
		wf := writeStructural(t, store, "data/e.lance", s, &WriterOptions{Version: v, Allocator: mem}, empty, empty)
		empty.Release()
		if wf.Rows != 0 {
			t.Fatalf("%d rows", wf.Rows)
		}
		r, rows := readRowsJSON(t, store, "data/e.lance", mem, 0)
		if len(rows) != 0 || r.NumRows() != 0 {
			t.Fatalf("read %d rows", len(rows))
		}
		if r.NumColumns() != len(wf.ColumnIndices) {
			t.Fatalf("%d columns, wrote %d", r.NumColumns(), len(wf.ColumnIndices))
		}
	}
}

// TestStructuralWriterRefuses: what the writer cannot store is an error,
// never a panic or a bad file.
func TestStructuralWriterRefuses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	store := blob.NewMemStore("refuse")
	mapSchema, err := schema.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true}}, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(context.Background(), store, "data/m.lance", mapSchema, &WriterOptions{Version: Version2_1}); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("a map in 2.1: %v, want ErrUnsupported", err)
	}
	bad, err := schema.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true,
		Metadata: arrow.NewMetadata([]string{fileio.MetaCompression}, []string{"snappy"})}}, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(context.Background(), store, "data/s.lance", bad, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("unknown compression: %v, want ErrInvalidArgument", err)
	}
	// A batch whose type does not match the schema.
	s, err := schema.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(context.Background(), store, "data/i.lance", s, &WriterOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	other := array.NewInt64Builder(mem)
	other.Append(1)
	a := other.NewArray()
	other.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "i", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, 1)
	a.Release()
	if err := w.Write(context.Background(), rec); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("mismatched batch: %v, want ErrInvalidArgument", err)
	}
	rec.Release()
	w.Abort(context.Background())
}

// hasBlobField reports whether f or any member of it stores its bytes out
// of line.
func hasBlobField(f *schema.Field) bool {
	found := false
	f.Walk(func(c *schema.Field) { found = found || c.Blob != schema.NotBlob })
	return found
}
