package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

var updateMalformed = flag.Bool("update-malformed", false, "rewrite testdata/malformed from the fixtures")

// readEverything opens the file held in data and reads it the way
// readBounded does.
func readEverything(t testing.TB, name string, data []byte, mem memory.Allocator) error {
	r, err := openBytes(t, name, data, mem)
	if err != nil {
		return err
	}
	return readBounded(r)
}

// readBounded reads every field of r's own schema: its first rows in odd
// batches, its last rows and a few scattered rows, releasing everything. It
// is what fuzz and malformed-input tests need to reach every decoder; the
// cap on rows keeps them fast, since a valid all-null page may stand for
// billions of rows.
func readBounded(r *Reader) error {
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
		fileio.ReleaseAll(arrs)
		if err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	arrs, err := cur.ReadRange(ctx, n-min(n, chunk), n)
	fileio.ReleaseAll(arrs)
	if err != nil {
		return err
	}
	arrs, err = cur.Take(ctx, []uint64{n - 1, 0, n / 2, n / 3, 0})
	fileio.ReleaseAll(arrs)
	return err
}

// fuzzRead runs read on fuzzed input with a checked allocator and fails the
// test if it leaks Arrow memory, fails with an error wrapping none of kinds,
// or allocates far more than the input's size: allocations are bounded by
// the bytes the input points at, and readBounded touches at most a few
// thousand rows.
func fuzzRead(t *testing.T, data []byte, read func(t *testing.T, data []byte, mem memory.Allocator) error, kinds ...error) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := read(t, data, mem)
	runtime.ReadMemStats(&after)
	mem.AssertSize(t, 0)
	if err != nil && !slices.ContainsFunc(kinds, func(k error) bool { return errors.Is(err, k) }) {
		t.Fatalf("error of an unexpected kind: %v", err)
	}
	const slack = 64 << 20
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64*uint64(len(data))+slack {
		t.Fatalf("reading %d bytes allocated %d bytes", len(data), grew)
	}
}

// isCategorized reports whether err wraps one of lancer's categories for bad
// or unsupported input.
func isCategorized(err error) bool {
	return errors.Is(err, lancer.ErrCorrupt) || errors.Is(err, lancer.ErrUnsupported) || errors.Is(err, lancer.ErrInvalidArgument)
}

// smallFixtureFiles returns real data files of every version small enough to
// serve as seeds and as the base of the malformed set.
func smallFixtureFiles(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, name := range []string{"history_vlegacy", "history_v2_0", "history_v2_1", "history_v2_2", "blob_v2_v2_2", "types_v2_2"} {
		paths, _ := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, name), "data", "*.lance"))
		slices.Sort(paths)
		if len(paths) == 0 {
			t.Fatalf("no data files in fixture %s", name)
		}
		b, err := os.ReadFile(paths[0])
		if err != nil {
			t.Fatal(err)
		}
		out[name] = b
	}
	return out
}

// malformations derive broken files from a good one. Each must be refused
// with ErrCorrupt.
var malformations = []struct {
	name  string
	apply func(b []byte) []byte
}{
	{"empty", func(b []byte) []byte { return nil }},
	{"tiny", func(b []byte) []byte { return []byte("LANC") }},
	{"truncated_tail", func(b []byte) []byte { return b[:len(b)-7] }},
	{"truncated_half", func(b []byte) []byte { return b[len(b)/2:] }},
	{"bad_magic", func(b []byte) []byte { b[len(b)-1] = 'X'; return b }},
	{"footer_offsets_past_end", func(b []byte) []byte {
		if isLegacy(b) {
			binary.LittleEndian.PutUint64(b[len(b)-16:], uint64(len(b))*4)
			return b
		}
		f := b[len(b)-40:]
		binary.LittleEndian.PutUint64(f[8:], uint64(len(b))*3)
		binary.LittleEndian.PutUint64(f[16:], uint64(len(b))*3)
		return b
	}},
	{"absurd_counts", func(b []byte) []byte {
		if isLegacy(b) {
			binary.LittleEndian.PutUint64(b[len(b)-16:], 1<<62)
			return b
		}
		f := b[len(b)-40:]
		binary.LittleEndian.PutUint32(f[24:], 0xFFFFFFF0)
		binary.LittleEndian.PutUint32(f[28:], 0xFFFFFFF0)
		return b
	}},
	{"table_entry_past_end", func(b []byte) []byte {
		if isLegacy(b) {
			pos := binary.LittleEndian.Uint64(b[len(b)-16:])
			binary.LittleEndian.PutUint32(b[pos:], 0x7FFFFFFF) // metadata length
			return b
		}
		f := b[len(b)-40:]
		gbo := binary.LittleEndian.Uint64(f[16:])
		binary.LittleEndian.PutUint64(b[gbo+8:], 1<<40) // global buffer 0 size
		return b
	}},
	{"garbage_metadata", func(b []byte) []byte {
		var start uint64
		if isLegacy(b) {
			start = binary.LittleEndian.Uint64(b[len(b)-16:]) + 4
		} else {
			f := b[len(b)-40:]
			gbo := binary.LittleEndian.Uint64(f[16:])
			start = binary.LittleEndian.Uint64(b[gbo:])
		}
		for i := start; i < start+24 && i < uint64(len(b))-40; i++ {
			b[i] = 0xFF
		}
		return b
	}},
	{"zeroed_pages", func(b []byte) []byte {
		// Wipe the data region: every page decoder sees garbage.
		var end uint64
		if isLegacy(b) {
			end = binary.LittleEndian.Uint64(b[len(b)-16:]) / 2
		} else {
			// Pages end where global buffer 0 (the file descriptor) starts.
			gbo := binary.LittleEndian.Uint64(b[len(b)-24:])
			end = binary.LittleEndian.Uint64(b[gbo:])
		}
		for i := range min(end, uint64(len(b))) {
			b[i] = 0xEE
		}
		return b
	}},
}

func isLegacy(b []byte) bool {
	major := binary.LittleEndian.Uint16(b[len(b)-8:])
	minor := binary.LittleEndian.Uint16(b[len(b)-6:])
	return major == 0 && minor < 3
}

// TestMalformedFiles reads every file in testdata/malformed: each must be
// refused with an error wrapping ErrCorrupt that names the file, never a
// panic. Regenerate with -update-malformed.
func TestMalformedFiles(t *testing.T) {
	dir := filepath.Join("testdata", "malformed")
	if *updateMalformed {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for base, good := range smallFixtureFiles(t) {
			for _, m := range malformations {
				bad := m.apply(bytes.Clone(good))
				if err := os.WriteFile(filepath.Join(dir, base+"."+m.name+".lance"), bad, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.lance"))
	if want := 6 * len(malformations); len(paths) != want {
		t.Fatalf("%d malformed files, want %d (run with -update-malformed)", len(paths), want)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			err := readEverything(t, name, b, mem)
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestGoodFilesStillRead guards the malformed set: the files it derives from
// must read cleanly, or the set would test nothing.
func TestGoodFilesStillRead(t *testing.T) {
	for name, b := range smallFixtureFiles(t) {
		if err := readEverything(t, name+".lance", b, memory.NewGoAllocator()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzOpen feeds mutated data files of every version to Open and a full
// read: errors must be categorised, and nothing may panic or allocate
// without bound.
func FuzzOpen(f *testing.F) {
	for _, b := range smallFixtureFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := readEverything(t, "fuzz.lance", data, memory.NewGoAllocator()); err != nil && !isCategorized(err) {
			t.Fatalf("uncategorised error: %v", err)
		}
	})
}

func TestTakeNoRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	store := blob.NewMemStore("t")
	_ = store.Write(ctx, "f.lance", smallFixtureFiles(t)["history_v2_2"])
	r, err := Open(ctx, store, "f.lance", &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	arrs, err := c.Take(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(arrs)
	if len(arrs) != len(r.Schema().Fields) {
		t.Fatalf("%d arrays, want %d", len(arrs), len(r.Schema().Fields))
	}
	for i, a := range arrs {
		if a.Len() != 0 || !arrow.TypeEqual(a.DataType(), r.Schema().Fields[i].ScanType()) {
			t.Errorf("array %d: len %d type %s", i, a.Len(), a.DataType())
		}
	}
}
