package format

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// FuzzLegacyFile mutates real v1 files and reads everything in them: no
// input may panic, leak Arrow memory, fail other than with ErrCorrupt or
// ErrUnsupported, or make the reader allocate far more than the input's size.
//
//	go test ./format -run '^$' -fuzz FuzzLegacyFile -fuzztime 60s -fuzzminimizetime 1x
//
// (Without -fuzzminimizetime the fuzzer spends up to a minute minimizing
// each new interesting input, each run of which reads a whole file, and
// barely fuzzes at all.)
func FuzzLegacyFile(f *testing.F) {
	// Seeds: the small fixture files as they are, the big types file cut to
	// its first rows (the fuzzer minimizes every new input it finds, which
	// takes minutes on 100 KB), and a file of several batches.
	add := func(data []byte) {
		if err := openAndReadAll(f, "data/seed.lance", data, nil); err != nil {
			f.Fatalf("seed does not read: %v", err)
		}
		f.Add(data)
	}
	for _, name := range []string{"history_vlegacy", "overwrite_vlegacy"} {
		for _, path := range legacyDataFiles(f, name) {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			add(data)
			if r, err := openBytes(f, "data/seed.lance", data, nil); err == nil && r.NumRows() == 20 {
				add(splitBatches(f, data, []int32{0, 8, 8, 20}))
			}
		}
	}
	add(shrinkRows(f, typesFile(f), 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := readLegacyBounded(t, data, mem)
		runtime.ReadMemStats(&after)
		mem.AssertSize(t, 0)
		if err != nil && !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
			t.Fatalf("error of an unexpected kind: %v", err)
		}
		// Every allocation the input drives is bounded by the bytes it
		// points at, and the reads below touch at most a few thousand rows.
		const slack = 64 << 20
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64*uint64(len(data))+slack {
			t.Fatalf("reading %d bytes allocated %d bytes", len(data), grew)
		}
	})
}

// readLegacyBounded opens data and reads its first rows in batches, its last
// rows and a few scattered rows, releasing everything.
func readLegacyBounded(t *testing.T, data []byte, mem memory.Allocator) error {
	r, err := openBytes(t, "data/fuzz.lance", data, mem)
	if err != nil {
		return err
	}
	r.NumColumns()
	cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		return err
	}
	defer cur.Close()
	ctx := context.Background()
	n := r.NumRows()
	const chunk, maxRows = 37, 1024 // an odd chunk, to cut batches anywhere
	for start := uint64(0); start < min(n, maxRows); start += chunk {
		arrs, err := cur.ReadRange(ctx, start, min(start+chunk, n))
		releaseAll(arrs)
		if err != nil {
			return err
		}
	}
	if n > 0 {
		arrs, err := cur.ReadRange(ctx, n-min(n, chunk), n)
		releaseAll(arrs)
		if err != nil {
			return err
		}
		arrs, err = cur.Take(ctx, []uint64{n - 1, 0, n / 2, n / 3})
		releaseAll(arrs)
		if err != nil {
			return err
		}
	}
	return nil
}
