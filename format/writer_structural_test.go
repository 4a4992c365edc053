package format

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// writeStructural writes recs (whose columns are schema's top-level
// fields) to key in store and returns what Finish reported.
func writeStructural(t testing.TB, store blob.Store, key string, sch *schema.Schema, opts *WriterOptions, recs ...arrow.RecordBatch) *WrittenFile {
	t.Helper()
	w, err := NewWriter(context.Background(), store, key, sch, opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, rec := range recs {
		if err := w.Write(context.Background(), rec); err != nil {
			w.Abort(context.Background())
			t.Fatalf("Write: %v", err)
		}
	}
	wf, err := w.Finish(context.Background())
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return wf
}

// readRowsJSON opens key and returns every row of every field as fixture
// JSON, reading in batches of batch rows (whole file when 0).
func readRowsJSON(t testing.TB, store blob.Store, key string, mem memory.Allocator, batch uint64) (*Reader, [][]byte) {
	t.Helper()
	r, err := Open(context.Background(), store, key, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("open what was written: %v", err)
	}
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if batch == 0 {
		batch = max(r.NumRows(), 1)
	}
	var rows [][]byte
	for start := uint64(0); start < r.NumRows(); start += batch {
		end := min(start+batch, r.NumRows())
		arrs, err := c.ReadRange(context.Background(), start, end)
		if err != nil {
			t.Fatalf("read rows [%d, %d): %v", start, end, err)
		}
		rec := array.NewRecordBatch(r.Schema().Arrow(), arrs, int64(end-start))
		fileio.ReleaseAll(arrs)
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
		rec.Release()
	}
	return r, rows
}

// readAllBatches reads a file in batches of batch rows as record batches
// of its logical schema.
func readAllBatches(t testing.TB, r *Reader, batch uint64) []arrow.RecordBatch {
	t.Helper()
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []arrow.RecordBatch
	for start := uint64(0); start < r.NumRows(); start += batch {
		end := min(start+batch, r.NumRows())
		arrs, err := c.ReadRange(context.Background(), start, end)
		if err != nil {
			t.Fatalf("rows [%d, %d): %v", start, end, err)
		}
		out = append(out, array.NewRecordBatch(r.Schema().LogicalArrow(), arrs, int64(end-start)))
		fileio.ReleaseAll(arrs)
	}
	return out
}

func releaseRecords(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// TestStructuralWriterFixtureRoundTrip reads every 2.1+ fixture data file
// and writes it again with the same version and schema, with the default
// page size and with tiny pages, in batches of several sizes: the file
// written must read back as the same rows.
func TestStructuralWriterFixtureRoundTrip(t *testing.T) {
	for _, f := range structuralFixtureFiles(t) {
		if strings.HasPrefix(f.fixture, "blob_") {
			continue // blob columns read as descriptors: TestStructuralWriterBlobs
		}
		t.Run(f.fixture+"/"+f.name, func(t *testing.T) {
			big := strings.Contains(f.fixture, "pages_") || strings.Contains(f.fixture, "mpage_")
			if testing.Short() && big {
				t.Skip("large fixture")
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, f, mem)
			if !r.Version().structural() {
				t.Skipf("file version %s", r.Version())
			}
			wantReader, want := readRowsJSON(t, mustLocal(t, f.dir), f.name, mem, 8192)
			_ = wantReader
			type variant struct {
				batch    uint64
				pageSize int
			}
			variants := []variant{{8192, 0}, {37, 4 << 10}, {1000, 64 << 10}}
			if big {
				variants = []variant{{65536, 0}}
			}
			for _, v := range variants {
				t.Run(fmt.Sprintf("batch%d_page%d", v.batch, v.pageSize), func(t *testing.T) {
					recs := readAllBatches(t, r, v.batch)
					defer releaseRecords(recs)
					store := blob.NewMemStore("rt")
					version := r.Version()
					if version == Version2_3 {
						version = Version2_2 // 2.3 is not written; its data reads like 2.2
					}
					wf := writeStructural(t, store, "data/out.lance", r.Schema(), &WriterOptions{Version: version, PageSize: v.pageSize, Allocator: mem}, recs...)
					if wf.Rows != r.NumRows() {
						t.Fatalf("wrote %d rows, want %d", wf.Rows, r.NumRows())
					}
					_, got := readRowsJSON(t, store, "data/out.lance", mem, 997)
					fixturetest.CompareRows(t, f.fixture, got, want, fixturetest.CompareOptions{})
					if v.pageSize == 0 {
						t.Logf("size: lance %d B, lancer %d B (%.1f%%)", r.Size(), wf.Size, 100*float64(wf.Size)/float64(r.Size()))
					}
				})
			}
		})
	}
}

func mustLocal(t testing.TB, dir string) blob.Store {
	t.Helper()
	st, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// columnBytes sums the page buffer sizes of each column of r.
func columnBytes(r *Reader) []uint64 {
	out := make([]uint64, len(r.f.Columns))
	for i, c := range r.f.Columns {
		for _, p := range c.GetPages() {
			for _, s := range p.GetBufferSizes() {
				out[i] += s
			}
		}
	}
	return out
}

// TestStructuralWriterSizeVsLance writes the data of every 2.1+ fixture
// file again and holds the result to at most 110% of the size real Lance
// wrote, logging the bytes of each column (page buffers) on both sides.
func TestStructuralWriterSizeVsLance(t *testing.T) {
	for _, f := range structuralFixtureFiles(t) {
		if strings.HasPrefix(f.fixture, "blob_") {
			continue
		}
		big := strings.Contains(f.fixture, "pages_") || strings.Contains(f.fixture, "mpage_")
		if testing.Short() && big {
			continue
		}
		t.Run(f.fixture+"/"+f.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, f, mem)
			version := r.Version()
			if version == Version2_3 {
				version = Version2_2
			}
			recs := readAllBatches(t, r, 65536)
			store := blob.NewMemStore("size")
			wf := writeStructural(t, store, "data/s.lance", r.Schema(), &WriterOptions{Version: version, Allocator: mem}, recs...)
			releaseRecords(recs)
			ours, err := Open(context.Background(), store, "data/s.lance", nil)
			if err != nil {
				t.Fatal(err)
			}
			theirs, mine := columnBytes(r), columnBytes(ours)
			var b strings.Builder
			fmt.Fprintf(&b, "file: Lance %d B, lancer %d B (%.1f%%)\n", r.Size(), wf.Size, 100*float64(wf.Size)/float64(r.Size()))
			for i := range theirs {
				fmt.Fprintf(&b, "  column %2d: Lance %9d B, lancer %9d B\n", i, theirs[i], mine[i])
			}
			t.Log(b.String())
			if float64(wf.Size) > 1.10*float64(r.Size()) {
				t.Errorf("lancer wrote %d bytes, more than 110%% of Lance's %d", wf.Size, r.Size())
			}
		})
	}
}
