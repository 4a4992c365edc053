package format

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
)

// multiPageFile writes rows of {id int64, n int32?, s utf8?, x float64} as a
// 2.2 file of small pages (pageSize input bytes), so every column has many
// pages, into a MemStore, and returns the store, the key and the rows.
func multiPageFile(t testing.TB, rows, pageSize int) (*blob.MemStore, string, arrow.RecordBatch) {
	t.Helper()
	mem := memory.NewGoAllocator()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ids := array.NewInt64Builder(mem)
	ns := array.NewInt32Builder(mem)
	ss := array.NewStringBuilder(mem)
	xs := array.NewFloat64Builder(mem)
	for i := range rows {
		ids.Append(int64(i))
		if i%13 == 0 {
			ns.AppendNull()
			ss.AppendNull()
		} else {
			ns.Append(int32(rng.IntN(1 << 20)))
			ss.Append(fmt.Sprintf("row-%d-%x", i, rng.Uint32()))
		}
		xs.Append(rng.NormFloat64())
	}
	cols := []arrow.Array{ids.NewArray(), ns.NewArray(), ss.NewArray(), xs.NewArray()}
	for _, b := range []array.Builder{ids, ns, ss, xs} {
		b.Release()
	}
	rec := array.NewRecordBatch(s.LogicalArrow(), cols, int64(rows))
	fileio.ReleaseAll(cols)
	store := blob.NewMemStore("multipage")
	ctx := context.Background()
	w, err := NewWriter(ctx, store, "f.lance", s, &WriterOptions{Version: Version2_2, PageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	return store, "f.lance", rec
}

// readCounts scans the file in batches and takes rows from it through a
// CountingStore over store, checks the values against want, and returns
// the requests of each.
func readCounts(t testing.TB, store blob.Store, key string, want arrow.RecordBatch, batch uint64, take []uint64) (scan, taken blob.Counts) {
	t.Helper()
	ctx := context.Background()
	c := blob.NewCountingStore(store)
	r, err := Open(ctx, c, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	proj := r.FileProjection(r.Schema().Fields)
	cur, err := r.NewCursor(proj)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Snapshot()
	for a := uint64(0); a < r.NumRows(); a += batch {
		b := min(a+batch, r.NumRows())
		arrs, err := cur.ReadRange(ctx, a, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, arr := range arrs {
			exp := array.NewSlice(want.Column(i), int64(a), int64(b))
			if !array.Equal(arr, exp) {
				t.Fatalf("rows [%d, %d) column %d differ", a, b, i)
			}
			exp.Release()
		}
		fileio.ReleaseAll(arrs)
	}
	cur.Close()
	scan = c.Snapshot().Sub(before)

	cur, err = r.NewCursor(proj)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	before = c.Snapshot()
	arrs, err := cur.Take(ctx, take)
	if err != nil {
		t.Fatal(err)
	}
	taken = c.Snapshot().Sub(before)
	defer fileio.ReleaseAll(arrs)
	for i, arr := range arrs {
		for j, row := range take {
			exp := array.NewSlice(want.Column(i), int64(row), int64(row)+1)
			got := array.NewSlice(arr, int64(j), int64(j)+1)
			if !array.Equal(got, exp) {
				t.Fatalf("take row %d (position %d) column %d: got %v, want %v", row, j, i, got, exp)
			}
			got.Release()
			exp.Release()
		}
	}
	return scan, taken
}

// TestCoalescedReads: reading a file of many small pages, a scan batch
// fetches the pages of all its columns with far fewer requests than pages,
// and the values stay right.
func TestCoalescedReads(t *testing.T) {
	const rows = 60_000
	store, key, rec := multiPageFile(t, rows, 32<<10)
	defer rec.Release()
	r, err := Open(context.Background(), store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, c := range r.Columns() {
		pages += len(c.Pages)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	take := make([]uint64, 1000)
	for i := range take {
		take[i] = uint64(rng.IntN(rows))
	}
	scan, taken := readCounts(t, store, key, rec, 8192, take)
	t.Logf("%d columns, %d pages; scan: %v; take of %d rows: %v", len(r.Columns()), pages, scan, len(take), taken)
	// Without coalescing a scan makes one request per page.
	if scan.ReadRange.Requests*2 > int64(pages) {
		t.Errorf("scan made %d requests for %d pages", scan.ReadRange.Requests, pages)
	}
	if taken.ReadRange.Requests >= int64(pages) {
		t.Errorf("take made %d requests for %d pages", taken.ReadRange.Requests, pages)
	}
	// The gaps merged in cost little: the scan reads not much more than
	// the file.
	if scan.BytesRead() > r.Size()*5/4 {
		t.Errorf("scan read %d bytes of a %d-byte file", scan.BytesRead(), r.Size())
	}
}

// TestReadsDetectShortReads: a store that returns a short range (without
// an error) fails the read with an error naming the file, never wrong
// values; through blob.WithRetry the read is tried again and succeeds.
func TestReadsDetectShortReads(t *testing.T) {
	ctx := context.Background()
	store, key, rec := multiPageFile(t, 20_000, 32<<10)
	defer rec.Release()
	for n := 1; n <= 12; n++ {
		f := blob.NewFaultStore(store, 1, blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Nth: n, Action: blob.Truncate, Drop: 1 + n%3})
		err := func() error {
			r, err := Open(ctx, f, key, nil)
			if err != nil {
				return err
			}
			arrs, err := r.readRange(ctx, r.FileProjection(r.Schema().Fields), 0, r.NumRows())
			fileio.ReleaseAll(arrs)
			return err
		}()
		if f.Injected() == 0 {
			break // fewer requests than n
		}
		if err == nil || !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), key) {
			t.Fatalf("short read at request %d: err = %v; want corruption naming %s", n, err, key)
		}
		f.SetFaults(blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Nth: n, Action: blob.Truncate})
		scan, _ := readCounts(t, blob.WithRetry(f, &blob.RetryOptions{Backoff: time.Microsecond}), key, rec, 4096, []uint64{3, 1})
		if scan.ReadRange.Requests == 0 {
			t.Fatal("no requests")
		}
	}
}

// TestPreloadPagesOrder checks preloadPages against reading each page on
// its own, for pages asked in any order, with repeats and bad ids.
func TestPreloadPagesOrder(t *testing.T) {
	ctx := context.Background()
	store, key, rec := multiPageFile(t, 20_000, 16<<10)
	rec.Release()
	r, err := Open(ctx, store, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []fileio.PageID
	for c, col := range r.f.Columns {
		for p := range col.GetPages() {
			ids = append(ids, fileio.PageID{Col: c, Page: p})
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	ids = append(ids[:len(ids)/2], ids[0], fileio.PageID{Col: 99, Page: 0}, fileio.PageID{Col: 0, Page: 9999})
	pctx, err := r.f.PreloadPages(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:len(ids)-2] {
		page := r.f.Columns[id.Col].GetPages()[id.Page]
		got, ok := fileio.PreloadedBuffers(pctx, page)
		if !ok {
			t.Fatalf("page %v not preloaded", id)
		}
		want, err := r.f.PageBuffers(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("page %v: %d buffers, want %d", id, len(got), len(want))
		}
		for i := range got {
			if !slices.Equal(got[i], want[i]) || cap(got[i]) != len(got[i]) {
				t.Fatalf("page %v buffer %d differs", id, i)
			}
		}
	}
}

// BenchmarkCoalescedScan scans and takes from a file of many small pages
// over a store answering each request after 2ms, as an object store might:
// what coalescing and parallel requests save is round trips.
func BenchmarkCoalescedScan(b *testing.B) {
	ctx := context.Background()
	store, key, rec := multiPageFile(b, 60_000, 32<<10)
	defer rec.Release()
	slow := blob.NewFaultStore(store, 1, blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Action: blob.Delay, Delay: 2 * time.Millisecond})
	r, err := Open(ctx, slow, key, nil)
	if err != nil {
		b.Fatal(err)
	}
	proj := r.FileProjection(r.Schema().Fields)
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			cur, err := r.NewCursor(proj)
			if err != nil {
				b.Fatal(err)
			}
			for a := uint64(0); a < r.NumRows(); a += 8192 {
				arrs, err := cur.ReadRange(ctx, a, min(a+8192, r.NumRows()))
				if err != nil {
					b.Fatal(err)
				}
				fileio.ReleaseAll(arrs)
			}
			cur.Close()
		}
	})
	rng := rand.New(rand.NewPCG(7, 8))
	take := make([]uint64, 1000)
	for i := range take {
		take[i] = uint64(rng.IntN(int(r.NumRows())))
	}
	b.Run("take1000", func(b *testing.B) {
		for b.Loop() {
			cur, err := r.NewCursor(proj)
			if err != nil {
				b.Fatal(err)
			}
			arrs, err := cur.Take(ctx, take)
			if err != nil {
				b.Fatal(err)
			}
			fileio.ReleaseAll(arrs)
			cur.Close()
		}
	})
}
