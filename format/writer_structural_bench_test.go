package format

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// benchBatch is rows of {id int64, n int32, s utf8, vec fixed_size_list<f32,
// 128>} and its size in Arrow buffer bytes.
func benchBatch(b *testing.B, mem memory.Allocator, rows int) (*schema.Schema, arrow.RecordBatch, int64) {
	b.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(128, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := array.NewInt64Builder(mem)
	ns := array.NewInt32Builder(mem)
	ss := array.NewStringBuilder(mem)
	vs := array.NewFixedSizeListBuilder(mem, 128, arrow.PrimitiveTypes.Float32)
	items := vs.ValueBuilder().(*array.Float32Builder)
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	for i := range rows {
		ids.Append(int64(i))
		if i%17 == 0 {
			ns.AppendNull()
		} else {
			ns.Append(int32(rng.IntN(100000)))
		}
		ss.Append(fmt.Sprintf("%s-%d-%s", words[i%6], rng.IntN(1_000_000), words[rng.IntN(6)]))
		vs.Append(true)
		for range 128 {
			items.Append(float32(rng.NormFloat64()))
		}
	}
	cols := []arrow.Array{ids.NewArray(), ns.NewArray(), ss.NewArray(), vs.NewArray()}
	for _, bl := range []array.Builder{ids, ns, ss, vs} {
		bl.Release()
	}
	var size int64
	for _, c := range cols {
		size += arraySize(c.Data())
	}
	rec := array.NewRecordBatch(s.LogicalArrow(), cols, int64(rows))
	fileio.ReleaseAll(cols)
	return s, rec, size
}

// discardStore counts what is written to it and keeps nothing, so the
// benchmark measures the writer, not a store.
type discardStore struct{ blob.Store }

func (discardStore) NewWriter(context.Context, string) (blob.ObjectWriter, error) {
	return &discardWriter{}, nil
}

type discardWriter struct{ n int64 }

func (d *discardWriter) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discardWriter) Close() error                { return nil }
func (d *discardWriter) Abort() error                { return nil }

func arraySize(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += arraySize(c)
	}
	return n
}

// BenchmarkWrite2_2 writes 64 Ki rows of ints, strings and 128-d vectors
// to a 2.2 file in memory; the rate is of Arrow input bytes.
func BenchmarkWrite2_2(b *testing.B) {
	for _, v := range []Version{Version2_2, Version2_1} {
		b.Run(v.String(), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			s, rec, size := benchBatch(b, mem, 1<<16)
			defer rec.Release()
			b.SetBytes(size)
			b.ReportAllocs()
			var written uint64
			for b.Loop() {
				w, err := NewWriter(context.Background(), discardStore{}, "data/b.lance", s, &WriterOptions{Version: v})
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Write(context.Background(), rec); err != nil {
					b.Fatal(err)
				}
				wf, err := w.Finish(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				written = wf.Size
			}
			b.ReportMetric(float64(written)/float64(size), "out/in")
		})
	}
}

// BenchmarkWriteLists writes 120 Ki rows of list<uint32> (an HNSW level's
// neighbour lists: 1 to 32 ids a row, some empty or null) and a nested
// list<list<int32>> with nulls to a 2.2 file in memory; -benchmem gives the
// shredder's allocations (issue #17: per-item slot tables once dominated
// them).
func BenchmarkWriteLists(b *testing.B) {
	mem := memory.NewGoAllocator()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "neighbors", Type: arrow.ListOf(arrow.PrimitiveTypes.Uint32), Nullable: true},
		{Name: "nested", Type: arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int32)), Nullable: true},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		b.Fatal(err)
	}
	const rows = 120 << 10
	rng := rand.New(rand.NewPCG(3, 4))
	rb := array.NewRecordBuilder(mem, as)
	defer rb.Release()
	nb := rb.Field(0).(*array.ListBuilder)
	nbv := nb.ValueBuilder().(*array.Uint32Builder)
	nn := rb.Field(1).(*array.ListBuilder)
	nni := nn.ValueBuilder().(*array.ListBuilder)
	nnv := nni.ValueBuilder().(*array.Int32Builder)
	for range rows {
		switch r := rng.IntN(50); {
		case r == 0:
			nb.AppendNull()
		case r == 1:
			nb.Append(true)
		default:
			nb.Append(true)
			for range rng.IntN(32) + 1 {
				nbv.Append(uint32(rng.IntN(rows)))
			}
		}
		if rng.IntN(20) == 0 {
			nn.AppendNull()
			continue
		}
		nn.Append(true)
		for range rng.IntN(3) {
			nni.Append(true)
			for range rng.IntN(4) {
				nnv.Append(int32(rng.IntN(1000)))
			}
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var size int64
	for _, c := range rec.Columns() {
		size += arraySize(c.Data())
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		w, err := NewWriter(context.Background(), discardStore{}, "data/l.lance", s, &WriterOptions{Version: Version2_2})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Write(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Finish(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
