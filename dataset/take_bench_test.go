package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
)

// The take benchmark's table has the shape of the core bench suite's
// (bench/core.go): id int64, a 128-d float32 vector and 50 bytes of text,
// written as one fragment and appended to, fragment by fragment.
const (
	takeBenchRows  = 200_000
	takeBenchFrags = 20
	takeBenchDim   = 128
	takeBenchTake  = 1000
)

// takeBenchDirs caches the written tables by file version across the
// benchmark's sub-benchmarks (writing one takes seconds).
var (
	takeBenchMu   sync.Mutex
	takeBenchDirs = map[string]string{}
)

// takeBenchTable writes (once per process and version) the table into a
// directory that outlives the benchmark's temporary directories and returns
// its path.
func takeBenchTable(b *testing.B, v format.Version) string {
	b.Helper()
	takeBenchMu.Lock()
	defer takeBenchMu.Unlock()
	if dir, ok := takeBenchDirs[v.String()]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "lancer-take-bench-")
	if err != nil {
		b.Fatal(err)
	}
	store, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
	if err != nil {
		b.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "vector", Type: arrow.FixedSizeListOf(takeBenchDim, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(12345, 1))
	per := takeBenchRows / takeBenchFrags
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	ctx := context.Background()
	for f := range takeBenchFrags {
		mem := memory.DefaultAllocator
		ids := array.NewInt64Builder(mem)
		vecs := array.NewFixedSizeListBuilder(mem, takeBenchDim, arrow.PrimitiveTypes.Float32)
		vals := vecs.ValueBuilder().(*array.Float32Builder)
		texts := array.NewStringBuilder(mem)
		for i := range per {
			row := f*per + i
			ids.Append(int64(row))
			vecs.Append(true)
			for range takeBenchDim {
				vals.Append(float32(rng.NormFloat64()))
			}
			s := fmt.Sprintf("row %d:", row)
			for len(s) < 50 {
				s += " " + words[rng.IntN(len(words))]
			}
			texts.Append(s[:50])
		}
		cols := []arrow.Array{ids.NewArray(), vecs.NewArray(), texts.NewArray()}
		ids.Release()
		vecs.Release()
		texts.Release()
		rec := array.NewRecordBatch(schema, cols, int64(per))
		releaseArrays(cols)
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			b.Fatal(err)
		}
		opts := &WriteOptions{FileVersion: v}
		if f > 0 {
			opts.Mode = WriteAppend
		}
		if _, err := Write(ctx, store, rr, opts); err != nil {
			b.Fatal(err)
		}
		rr.Release()
		rec.Release()
	}
	takeBenchDirs[v.String()] = dir
	return dir
}

// BenchmarkTake takes 1,000 random rows of a 200,000-row table of 20
// fragments by offset and by row id, like the core bench suite, and
// reports the bytes and requests each take reads besides its time.
func BenchmarkTake(b *testing.B) {
	b.Cleanup(func() {
		takeBenchMu.Lock()
		defer takeBenchMu.Unlock()
		for k, dir := range takeBenchDirs {
			os.RemoveAll(dir)
			delete(takeBenchDirs, k)
		}
	})
	for _, v := range []format.Version{format.Version2_1, format.Version2_2} {
		for _, byID := range []bool{false, true} {
			name := "v" + v.String() + "/offsets"
			if byID {
				name = "v" + v.String() + "/rowids"
			}
			b.Run(name, func(b *testing.B) {
				dir := takeBenchTable(b, v)
				local, err := blob.NewLocalStore(filepath.Join(dir, "t.lance"))
				if err != nil {
					b.Fatal(err)
				}
				store := blob.NewCountingStore(local)
				ctx := context.Background()
				d, err := Open(ctx, store, nil)
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(777, 2))
				per := uint64(takeBenchRows / takeBenchFrags)
				seen := map[uint64]bool{}
				var offsets, rowIDs []uint64
				for len(offsets) < takeBenchTake {
					o := rng.Uint64N(takeBenchRows)
					if seen[o] {
						continue
					}
					seen[o] = true
					offsets = append(offsets, o)
					rowIDs = append(rowIDs, o/per<<32|o%per)
				}
				take := func() {
					var rec arrow.RecordBatch
					if byID {
						rec, err = d.TakeRowIDs(ctx, rowIDs, nil)
					} else {
						rec, err = d.Take(ctx, offsets, nil)
					}
					if err != nil {
						b.Fatal(err)
					}
					if rec.NumRows() != takeBenchTake {
						b.Fatalf("took %d rows, want %d", rec.NumRows(), takeBenchTake)
					}
					rec.Release()
				}
				take() // opens the files: later takes reuse the readers
				store.Reset()
				n := 0
				for b.Loop() {
					take()
					n++
				}
				c := store.Snapshot()
				b.ReportMetric(float64(c.BytesRead())/float64(n), "B-read/op")
				b.ReportMetric(float64(c.ReadRequests())/float64(n), "reads/op")
			})
		}
	}
}
