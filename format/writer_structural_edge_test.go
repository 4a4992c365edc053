package format

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// TestStructuralWriterEdgeCases writes each edge case in both versions and
// reads it back.
func TestStructuralWriterEdgeCases(t *testing.T) {
	for _, v := range []Version{Version2_1, Version2_2} {
		for _, c := range formattest.EdgeCases {
			if c.Only22 && v == Version2_1 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", v, c.Name), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				s, recs := c.Make(t, mem, v == Version2_2)
				if s == nil {
					t.Skip("not for this version")
				}
				defer formattest.ReleaseRecords(recs)
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
					fixturetest.CompareRows(t, fmt.Sprintf("%s page %d", c.Name, pageSize), got, want, fixturetest.CompareOptions{})
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

// TestStructuralWriterEmpty: files without rows, and empty batches.
func TestStructuralWriterEmpty(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, v := range []Version{Version2_1, Version2_2} {
		g := formattest.NewRandGen(9, v == Version2_2)
		s := g.Schema(t, 4)
		store := blob.NewMemStore("empty")
		empty := g.Batch(mem, s, 0)
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

// TestStructuralWriterBadListOffsets: a list array whose offsets leave its
// child array or run backwards is refused with an error naming the field
// and the list, before the shredder makes entries for the span (an input
// that could otherwise ask for any number of them).
func TestStructuralWriterBadListOffsets(t *testing.T) {
	s, err := schema.FromArrow(arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}}, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		offsets []int32
		want    string
	}{
		{"past the end", []int32{0, 2, 1 << 30}, "list 1 spans values 2 to 1073741824 of 3"},
		{"backwards", []int32{0, 3, 1}, "list 1 spans values 3 to 1 of 3"},
		{"negative", []int32{-2, 1, 3}, "list 0 spans values -2 to 1 of 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			cb := array.NewInt32Builder(mem)
			cb.AppendValues([]int32{1, 2, 3}, nil)
			child := cb.NewArray()
			cb.Release()
			offs := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offsets))
			data := array.NewData(arrow.ListOf(arrow.PrimitiveTypes.Int32), len(c.offsets)-1, []*memory.Buffer{nil, offs}, []arrow.ArrayData{child.Data()}, 0, 0)
			child.Release()
			list := array.NewListData(data)
			data.Release()
			rec := array.NewRecordBatch(s.LogicalArrow(), []arrow.Array{list}, int64(list.Len()))
			list.Release()
			defer rec.Release()
			w, err := NewWriter(context.Background(), blob.NewMemStore("bad"), "data/l.lance", s, &WriterOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort(context.Background())
			err = w.Write(context.Background(), rec)
			if err == nil {
				_, err = w.Finish(context.Background())
			}
			if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), `field "l"`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidArgument naming field \"l\" and %q", err, c.want)
			}
		})
	}
}
