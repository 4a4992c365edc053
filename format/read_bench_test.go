package format

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// BenchmarkReadColumn reads every row of one column of a file lancer wrote
// (benchBatch: 64 Ki rows of int64 ids, nullable int32, short strings and
// 128-d float32 vectors) at each data file version, through a cursor over
// the local file system: the decoders of 2.0 (which the page benchmarks of
// page21_bench_test.go do not cover), 2.1 and 2.2 side by side. The rate
// is of the column's Arrow bytes. Sub-benchmarks are named
// version/column, for benchstat:
//
//	go test ./format -run '^$' -bench ReadColumn -count 10 > new.txt
//	benchstat old.txt new.txt
func BenchmarkReadColumn(b *testing.B) {
	ctx := context.Background()
	for _, v := range []Version{Version2_0, Version2_1, Version2_2} {
		mem := memory.NewGoAllocator()
		s, rec, _ := benchBatch(b, mem, 1<<16)
		store, err := blob.NewLocalStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		w, err := NewWriter(ctx, store, "b.lance", s, &WriterOptions{Version: v})
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Finish(ctx); err != nil {
			b.Fatal(err)
		}
		r, err := Open(ctx, store, "b.lance", &OpenOptions{Allocator: mem})
		if err != nil {
			b.Fatal(err)
		}
		for i, f := range r.Schema().Fields {
			size := arraySize(rec.Column(i).Data())
			b.Run(v.String()+"/"+f.Name, func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					cur, err := r.NewCursor(r.FileProjection([]*schema.Field{f}))
					if err != nil {
						b.Fatal(err)
					}
					arrs, err := cur.ReadRange(ctx, 0, r.NumRows())
					if err != nil {
						b.Fatal(err)
					}
					fileio.ReleaseAll(arrs)
					cur.Close()
				}
			})
		}
		rec.Release()
	}
}
