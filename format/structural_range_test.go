package format

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// fixtureFile returns the data file of a single-file fixture dataset
// ("types_v2_2", or "encodings/strs_2_2").
func fixtureFile(t testing.TB, fixture string) structuralFile {
	t.Helper()
	for _, f := range structuralFixtureFiles(t) {
		if f.fixture == fixture {
			return f
		}
	}
	t.Fatalf("no fixture %s", fixture)
	return structuralFile{}
}

// encodedRows reads rows [start, end) with c and returns them in the
// fixtures' JSON encoding.
func encodedRows(t testing.TB, r *Reader, arrs []arrow.Array, n int) [][]byte {
	t.Helper()
	rec := structuralRecord(r, arrs, int64(n))
	defer rec.Release()
	return fixturetest.EncodeRows(t, rec)
}

// TestStructuralEveryRange reads every range [a, b) of small files and
// checks it equals the matching rows of a full read, with one cursor per
// start row reading ranges of growing length.
func TestStructuralEveryRange(t *testing.T) {
	for _, fixture := range []string{"types_v2_1", "types_v2_2", "blob_v2_v2_2", "blob_legacy_v2_1"} {
		t.Run(fixture, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, fixtureFile(t, fixture), mem)
			full := readAllStructural(t, r)
			defer fileio.ReleaseAll(full)
			proj := r.FileProjection(r.Schema().Fields)
			n := r.NumRows()
			for a := uint64(0); a <= n; a++ {
				c, err := r.NewCursor(proj)
				if err != nil {
					t.Fatal(err)
				}
				for b := a; b <= n; b++ {
					arrs, err := c.ReadRange(context.Background(), a, b)
					if err != nil {
						t.Fatalf("[%d, %d): %v", a, b, err)
					}
					for i, got := range arrs {
						want := array.NewSlice(full[i], int64(a), int64(b))
						// Equal also compares slots under nulls; fall back
						// to the rows' JSON, which does not, before failing.
						if !array.Equal(got, want) {
							g, w := formattest.RowsJSON(t, got), formattest.RowsJSON(t, want)
							if fmt.Sprint(g) != fmt.Sprint(w) {
								t.Fatalf("[%d, %d) field %q:\n got %v\nwant %v", a, b, r.Schema().Fields[i].Name, g, w)
							}
						}
						want.Release()
					}
					fileio.ReleaseAll(arrs)
				}
				c.Close()
			}
		})
	}
}

// TestStructuralRangesAcrossPages reads ranges of the strs datasets, whose
// list columns have two pages with different boundaries, around and across
// those boundaries and at random, in random order with one cursor.
func TestStructuralRangesAcrossPages(t *testing.T) {
	for _, name := range []string{"strs_2_1", "strs_2_2"} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, fixtureFile(t, "encodings/"+name), mem)
			want := fixturetest.EncodingRows(t, name)
			n := r.NumRows()

			var bounds []uint64
			for _, col := range r.f.Columns {
				var row uint64
				for _, p := range col.GetPages() {
					row += p.GetLength()
					if row < n {
						bounds = append(bounds, row)
					}
				}
			}
			slices.Sort(bounds)
			bounds = slices.Compact(bounds)
			if len(bounds) < 2 {
				t.Fatalf("expected multi-page columns, page boundaries %v", bounds)
			}
			type span struct{ a, b uint64 }
			var spans []span
			for _, x := range bounds {
				for _, d := range []uint64{0, 1, 2, 500} {
					spans = append(spans, span{x - min(x, d), min(n, x+1)}, span{x - 1, min(n, x+d+1)}, span{x, min(n, x+d+1)})
				}
			}
			spans = append(spans, span{bounds[0] - 3, bounds[len(bounds)-1] + 3}, span{0, n})
			rng := rand.New(rand.NewPCG(1, 2))
			for range 40 {
				a := rng.Uint64N(n)
				spans = append(spans, span{a, a + rng.Uint64N(min(n-a, 3000)+1)})
			}
			rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })

			c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			check := fixturetest.NewRowChecker(t, name+" ranges", fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
			total := 0
			for _, s := range spans {
				arrs, err := c.ReadRange(context.Background(), s.a, s.b)
				if err != nil {
					t.Fatalf("[%d, %d): %v", s.a, s.b, err)
				}
				got := encodedRows(t, r, arrs, int(s.b-s.a))
				fileio.ReleaseAll(arrs)
				for i, g := range got {
					check.Check(int(s.a)+i, g, want[int(s.a)+i])
				}
				total += len(got)
			}
			check.Finish(total, total)
		})
	}
}

// TestStructuralTake takes random rows (unsorted, with repeats) and checks
// them against the rows real Lance read.
func TestStructuralTake(t *testing.T) {
	for _, name := range []string{"strs_2_1", "strs_2_2", "wide_2_2"} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, fixtureFile(t, "encodings/"+name), mem)
			want := fixturetest.EncodingRows(t, name)
			c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			check := fixturetest.NewRowChecker(t, name+" takes", fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
			total := 0
			for _, size := range []int{1, 2, 7, 100, 1000} {
				rows := make([]uint64, size)
				for i := range rows {
					rows[i] = rng.Uint64N(r.NumRows())
				}
				if size > 2 {
					rows[size-1] = rows[0] // a repeat
				}
				arrs, err := c.Take(context.Background(), rows)
				if err != nil {
					t.Fatalf("take %v: %v", rows, err)
				}
				got := encodedRows(t, r, arrs, len(rows))
				fileio.ReleaseAll(arrs)
				for i, g := range got {
					check.Check(int(rows[i]), g, want[rows[i]])
				}
				total += len(got)
			}
			check.Finish(total, total)
		})
	}
}

// TestStructuralRangeReadsFewBytes reads a few rows from the second page of
// a two-page list column and checks that only a small part of the file is
// read.
func TestStructuralRangeReadsFewBytes(t *testing.T) {
	f := fixtureFile(t, "encodings/strs_2_2")
	local, err := blob.NewLocalStore(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	st := blob.NewCountingStore(local)
	r, err := Open(context.Background(), st, f.name, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := r.Schema().Project([]string{"lstlst"})
	if err != nil {
		t.Fatal(err)
	}
	col := r.FileProjection(sch.Fields)
	leaf := sch.Fields[0].Children[0].Children[0]
	c, ok := col.Column(leaf.ID)
	if !ok || len(r.f.Columns[c].GetPages()) < 2 {
		t.Fatalf("lstlst is not a multi-page column")
	}
	firstPage := r.f.Columns[c].GetPages()[0].GetLength()
	opened := st.Snapshot().ReadRange.Bytes
	arrs, err := r.readRange(context.Background(), col, firstPage+100, firstPage+105)
	if err != nil {
		t.Fatal(err)
	}
	fileio.ReleaseAll(arrs)
	read := st.Snapshot().ReadRange.Bytes - opened
	var pageBytes uint64
	for _, s := range r.f.Columns[c].GetPages()[1].GetBufferSizes() {
		pageBytes += s
	}
	t.Logf("5 rows of lstlst: read %d bytes (page %d bytes) of a %d-byte file; Open read %d", read, pageBytes, r.Size(), opened)
	if read == 0 || uint64(read) > pageBytes+64<<10 || read > r.Size()/10 {
		t.Errorf("read %d bytes for 5 rows; the page has %d bytes, the file %d", read, pageBytes, r.Size())
	}
}

// peakAllocator tracks the most bytes outstanding at once.
type peakAllocator struct {
	memory.Allocator
	cur, peak int64
}

func (p *peakAllocator) add(n int64) {
	p.cur += n
	p.peak = max(p.peak, p.cur)
}

func (p *peakAllocator) Allocate(size int) []byte {
	p.add(int64(size))
	return p.Allocator.Allocate(size)
}

func (p *peakAllocator) Reallocate(size int, b []byte) []byte {
	p.add(int64(size - len(b)))
	return p.Allocator.Reallocate(size, b)
}

func (p *peakAllocator) Free(b []byte) {
	p.add(-int64(len(b)))
	p.Allocator.Free(b)
}

// TestStructuralScanMemory scans the 1,048,576-row file of pages_2_2 in
// 8192-row batches and checks that what the cursor holds stays near one
// decoded page per column plus one batch: on the allocator (validity and
// offsets, and whatever the page decoders allocate there) and on the Go
// heap (page decoders may use Go memory).
func TestStructuralScanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1 million rows")
	}
	checked := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer checked.AssertSize(t, 0)
	mem := &peakAllocator{Allocator: checked}
	var f structuralFile
	for _, x := range structuralFixtureFiles(t) {
		if x.fixture == "encodings/pages_2_2" && openStructural(t, x, nil).NumRows() > 1_000_000 {
			f = x
		}
	}
	r := openStructural(t, f, mem)
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	liveHeap := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	base := liveHeap()
	var heapPeak int64
	const batch = 8192
	for i, start := 0, uint64(0); start < r.NumRows(); i, start = i+1, start+batch {
		end := min(start+batch, r.NumRows())
		arrs, err := c.ReadRange(context.Background(), start, end)
		if err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			heapPeak = max(heapPeak, liveHeap()-base)
		}
		fileio.ReleaseAll(arrs)
	}
	c.Close()
	// Both columns are one page: id and small, 8 + 4 bytes a row.
	pages := int64(r.NumRows()) * 12
	t.Logf("scan of %d rows in %d-row batches: allocator peak %d bytes, live Go heap peak %d bytes (decoded pages %d bytes, file %d bytes)",
		r.NumRows(), batch, mem.peak, heapPeak, pages, r.Size())
	if mem.peak > 2*pages || heapPeak > 2*pages+4<<20 {
		t.Errorf("allocator peak %d, heap peak %d bytes: more than twice the decoded pages (%d)", mem.peak, heapPeak, pages)
	}
}

// BenchmarkScanVectors scans the 128-d float32 vectors of wide_2_2 (2000
// rows, full-zip, some null).
func BenchmarkScanVectors(b *testing.B) {
	benchmarkScan(b, "encodings/wide_2_2", "vec", 1024)
}

// BenchmarkScanStrings scans every column of strs_2_2 (20,000 rows of FSST,
// zstd, lz4, dictionary strings, lists) in 8192-row batches.
func BenchmarkScanStrings(b *testing.B) {
	benchmarkScan(b, "encodings/strs_2_2", "", 8192)
}

func benchmarkScan(b *testing.B, fixture, column string, batch uint64) {
	f := fixtureFile(b, fixture)
	r := openStructural(b, f, memory.NewGoAllocator())
	fields := r.Schema().Fields
	if column != "" {
		s, err := r.Schema().Project([]string{column})
		if err != nil {
			b.Fatal(err)
		}
		fields = s.Fields
	}
	proj := r.FileProjection(fields)
	var bytes int64
	for _, fl := range fields {
		fl.Walk(func(x *schema.Field) {
			if c, ok := proj.Column(x.ID); ok {
				for _, p := range r.f.Columns[c].GetPages() {
					for _, s := range p.GetBufferSizes() {
						bytes += int64(s)
					}
				}
			}
		})
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := r.NewCursor(proj)
		if err != nil {
			b.Fatal(err)
		}
		for start := uint64(0); start < r.NumRows(); start += batch {
			arrs, err := c.ReadRange(context.Background(), start, min(start+batch, r.NumRows()))
			if err != nil {
				b.Fatal(err)
			}
			fileio.ReleaseAll(arrs)
		}
		c.Close()
	}
	b.ReportMetric(float64(r.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
