package format

import (
	"os"
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
		fuzzRead(t, data, readLegacyBounded, lancer.ErrCorrupt, lancer.ErrUnsupported)
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
