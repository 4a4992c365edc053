package formattest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/schema"
)

// BlobPayloads are payloads of the sizes the blob fixtures use, around
// every threshold, then a null.
func BlobPayloads() [][]byte {
	sizes := []int{0, 1, 10, 63, 64, 65, 1000, 4096, 10000, 70000, 150000}
	out := make([][]byte, 0, len(sizes)+1)
	for i, s := range sizes {
		b := make([]byte, s)
		for j := range b {
			b[j] = byte(j*7 + i*13)
		}
		out = append(out, b)
	}
	return append(out, nil)
}

// LegacyBlobBatch is {id, blob} with blob a legacy blob large_binary.
func LegacyBlobBatch(t testing.TB, mem memory.Allocator, payloads [][]byte) (*schema.Schema, arrow.RecordBatch) {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: arrow.BinaryTypes.LargeBinary, Nullable: true, Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
	defer bb.Release()
	for i, p := range payloads {
		ids.Append(int64(i))
		if p == nil {
			bb.AppendNull()
		} else {
			bb.Append(p)
		}
	}
	cols := []arrow.Array{ids.NewArray(), bb.NewArray()}
	defer releaseAll(cols)
	return s, array.NewRecordBatch(s.LogicalArrow(), cols, int64(len(payloads)))
}

// BlobV2Batch is {id, blob} with blob a blob v2 column; uris[i], when
// set, makes row i an external blob.
func BlobV2Batch(t testing.TB, mem memory.Allocator, payloads [][]byte, uris map[int]string) (*schema.Schema, arrow.RecordBatch) {
	t.Helper()
	st := arrow.StructOf(
		arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	md := arrow.NewMetadata(
		[]string{schema.MetaExtensionName, MetaBlobDedicatedThreshold, MetaBlobInlineThreshold},
		[]string{schema.BlobV2Extension, "65536", "64"},
	)
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: st, Nullable: true, Metadata: md},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := array.NewInt64Builder(mem)
	defer ids.Release()
	sb := array.NewStructBuilder(mem, s.Fields[1].Type.(*arrow.StructType))
	defer sb.Release()
	data := sb.FieldBuilder(0).(*array.BinaryBuilder)
	uri := sb.FieldBuilder(1).(*array.StringBuilder)
	for i, p := range payloads {
		ids.Append(int64(i))
		switch u, external := uris[i]; {
		case external:
			sb.Append(true)
			data.AppendNull()
			uri.Append(u)
		case p == nil:
			sb.AppendNull()
		default:
			sb.Append(true)
			data.Append(p)
			uri.AppendNull()
		}
	}
	cols := []arrow.Array{ids.NewArray(), sb.NewArray()}
	defer releaseAll(cols)
	return s, array.NewRecordBatch(s.LogicalArrow(), cols, int64(len(payloads)))
}

// StructListBatch is n rows of c: struct<a: list<int32>, b: int64> where,
// by kind, every third row has a null struct, a null list, an empty list,
// a null list item or a null b ("none": no nulls at all).
func StructListBatch(mem memory.Allocator, s *arrow.Schema, n int, kind string) arrow.RecordBatch {
	dt := s.Field(0).Type.(*arrow.StructType)
	b := array.NewStructBuilder(mem, dt)
	defer b.Release()
	lb := b.FieldBuilder(0).(*array.ListBuilder)
	ib := lb.ValueBuilder().(*array.Int32Builder)
	bb := b.FieldBuilder(1).(*array.Int64Builder)
	for i := range n {
		third := i%3 == 0
		if kind == "struct" && third {
			b.AppendNull()
			continue
		}
		b.Append(true)
		switch {
		case kind == "list-null" && third:
			lb.AppendNull()
		case kind == "list-empty" && third:
			lb.Append(true)
		default:
			lb.Append(true)
			ib.Append(int32(i))
			if kind == "item-null" && third {
				ib.AppendNull()
			} else {
				ib.Append(int32(i + 1))
			}
		}
		if kind == "b-null" && third {
			bb.AppendNull()
		} else {
			bb.Append(int64(i))
		}
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(s, []arrow.Array{col}, int64(n))
}

// ReleaseRecords releases every batch of recs.
func ReleaseRecords(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// record wraps arrays (taking over their references) as a record batch.
func record(t testing.TB, sch *arrow.Schema, arrs []arrow.Array, n int64) arrow.RecordBatch {
	t.Helper()
	defer releaseAll(arrs)
	for i, a := range arrs {
		if a.Len() != int(n) {
			t.Fatalf("column %q has %d rows, want %d", sch.Field(i).Name, a.Len(), n)
		}
	}
	return array.NewRecordBatch(sch, arrs, n)
}
