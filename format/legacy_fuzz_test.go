package format

import (
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

// readLegacyBounded opens data and reads it as readBounded does.
func readLegacyBounded(t *testing.T, data []byte, mem memory.Allocator) error {
	r, err := openBytes(t, "data/fuzz.lance", data, mem)
	if err != nil {
		return err
	}
	r.NumColumns()
	return readBounded(r)
}
