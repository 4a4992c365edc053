package formattest

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/schema"
)

// Slices cuts rec into batches of the given sizes (repeating the last).
func Slices(rec arrow.RecordBatch, sizes ...int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	n := int(rec.NumRows())
	for start, i := 0, 0; start < n; i++ {
		size := sizes[min(i, len(sizes)-1)]
		end := min(start+size, n)
		out = append(out, rec.NewSlice(int64(start), int64(end)))
		start = end
	}
	return out
}

// V20TextRecord returns n rows of compressible, distinct strings in one
// field per compression request: zstd, lz4 (large utf8), fsst (utf8 and
// binary); every seventh row is null.
func V20TextRecord(t testing.TB, n int, mem memory.Allocator) (*schema.Schema, arrow.RecordBatch) {
	t.Helper()
	md := func(scheme string) arrow.Metadata {
		return arrow.NewMetadata([]string{MetaCompression}, []string{scheme})
	}
	sch := SchemaOf(t,
		arrow.Field{Name: "zstd", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md("zstd")},
		arrow.Field{Name: "lz4", Type: arrow.BinaryTypes.LargeString, Nullable: true, Metadata: md("lz4")},
		arrow.Field{Name: "fsst", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md("fsst")},
		arrow.Field{Name: "fsst_bin", Type: arrow.BinaryTypes.Binary, Nullable: true, Metadata: md("fsst")},
	)
	as := sch.LogicalArrow()
	cols := make([]arrow.Array, len(as.Fields()))
	for c, f := range as.Fields() {
		b := array.NewBuilder(mem, f.Type)
		for i := range n {
			v := fmt.Sprintf("user-%06d@example.com wrote %d words about column %s", i*7919%1000003, i%97, f.Name)
			if i%7 == 3 {
				b.AppendNull()
				continue
			}
			switch b := b.(type) {
			case *array.StringBuilder:
				b.Append(v)
			case *array.LargeStringBuilder:
				b.Append(v)
			case *array.BinaryBuilder:
				b.Append([]byte(v))
			}
		}
		cols[c] = b.NewArray()
		b.Release()
	}
	return sch, record(t, as, cols, int64(n))
}

// V20DictBatches returns 5 batches of 100 rows of two dictionary
// columns, each batch with dictionaries of its own: int8 indices into
// distinct8 distinct strings in all, uint16 indices into 7 int64s; every
// thirteenth row is null.
func V20DictBatches(t testing.TB, mem memory.Allocator, distinct8 int) (*schema.Schema, []arrow.RecordBatch) {
	t.Helper()
	sch := SchemaOf(t,
		arrow.Field{Name: "d8", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		arrow.Field{Name: "du16", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.PrimitiveTypes.Int64}, Nullable: true},
	)
	as := sch.LogicalArrow()
	var batches []arrow.RecordBatch
	for k := range 5 {
		b8 := array.NewDictionaryBuilder(mem, as.Field(0).Type.(*arrow.DictionaryType)).(*array.BinaryDictionaryBuilder)
		b16 := array.NewDictionaryBuilder(mem, as.Field(1).Type.(*arrow.DictionaryType)).(*array.Int64DictionaryBuilder)
		for i := range 100 {
			if i%13 == 5 {
				b8.AppendNull()
				b16.AppendNull()
				continue
			}
			if err := b8.AppendString(fmt.Sprintf("v%d", (k*30+i)%distinct8)); err != nil {
				t.Fatal(err)
			}
			if err := b16.Append(int64(i % 7)); err != nil {
				t.Fatal(err)
			}
		}
		a8, a16 := b8.NewArray(), b16.NewArray()
		b8.Release()
		b16.Release()
		batches = append(batches, record(t, as, []arrow.Array{a8, a16}, 100))
	}
	return sch, batches
}

// V20NestedBlobs returns a schema with legacy blobs inside a struct and a
// list, and 60 random rows of it.
func V20NestedBlobs(t testing.TB, mem memory.Allocator) (*schema.Schema, arrow.RecordBatch) {
	blobMeta := arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})
	sch := SchemaOf(t,
		arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: blobMeta})},
		arrow.Field{Name: "l", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: blobMeta}), Nullable: true},
	)
	g := NewV20Rand(77)
	g.specs["l"] = &v20Spec{nulls: 0.2, items: 3}
	g.specs["l.item"] = &v20Spec{nulls: 0.2}
	g.specs["s.b"] = &v20Spec{nulls: 0.2}
	return sch, V20RandomRecord(g, sch, 60, mem)
}
