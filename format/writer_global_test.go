package format

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
)

// TestWriterGlobalBuffers: buffers added while writing are numbered 1, 2,
// ... after the file descriptor (as Lance's add_global_buffer), read back
// whole, and the rows and schema metadata set before Finish survive.
func TestWriterGlobalBuffers(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	as := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	sch, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	store := blob.NewMemStore("g")
	w, err := NewWriter(ctx, store, "f.lance", sch, &WriterOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("first buffer"), bytes.Repeat([]byte{7}, 1000)}
	for i, b := range want {
		bld := array.NewUint64Builder(mem)
		bld.AppendValues([]uint64{uint64(i), uint64(i + 10)}, nil)
		arr := bld.NewArray()
		bld.Release()
		rec := array.NewRecordBatch(as, []arrow.Array{arr}, 2)
		arr.Release()
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		pos, err := w.AddGlobalBuffer(ctx, b)
		if err != nil || pos != i+1 {
			t.Fatalf("buffer %d at position %d: %v", i, pos, err)
		}
	}
	sch.Metadata = map[string]string{"k": "v"}
	if _, err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, store, "f.lance", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRows() != 4 || r.Schema().Metadata["k"] != "v" {
		t.Fatalf("%d rows, metadata %v", r.NumRows(), r.Schema().Metadata)
	}
	bufs := r.GlobalBuffers()
	if len(bufs) != 3 {
		t.Fatalf("%d global buffers", len(bufs))
	}
	for i, b := range want {
		got, err := store.ReadRange(ctx, "f.lance", int64(bufs[i+1].Offset), int64(bufs[i+1].Size))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("buffer %d: %q, %v", i+1, got, err)
		}
	}
}
