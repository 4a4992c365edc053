package dataset

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// readAheadStore writes a dataset of 12 fragments of 100 rows (id, name,
// a list of floats) with some rows deleted, fragment 5 entirely.
func readAheadStore(t *testing.T, stable bool) *blob.MemStore {
	t.Helper()
	ctx := context.Background()
	store := blob.NewMemStore(t.Name())
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vec", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 1200 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for j := range i % 4 {
			lb.ValueBuilder().(*array.Float32Builder).Append(float32(i*10 + j))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	d, err := Write(ctx, store, rr, &WriteOptions{MaxRowsPerFile: 100, EnableStableRowIDs: stable})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.manifest.Fragments) != 12 {
		t.Fatalf("%d fragments, want 12", len(d.manifest.Fragments))
	}
	if _, err := d.Delete(ctx, "id % 7 = 3 OR (id >= 500 AND id < 600) OR id = 0", nil); err != nil {
		t.Fatal(err)
	}
	return store
}

// raScanRows scans d with opts and returns the rows as JSON, in order, and
// the batch sizes.
func raScanRows(t *testing.T, d *Dataset, opts ScanOptions) ([]string, []int64, error) {
	t.Helper()
	s, err := d.Scan(&opts)
	if err != nil {
		return nil, nil, err
	}
	var rows []string
	var sizes []int64
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			return rows, sizes, err
		}
		sizes = append(sizes, rec.NumRows())
		for _, r := range fixturetest.EncodeRows(t, rec) {
			rows = append(rows, string(r))
		}
	}
	return rows, sizes, nil
}

// TestScanReadAheadSameResults checks that scans return the same batches
// with any read-ahead depth, over projections, row ids, offsets, limits and
// filters (with and without the probe), and leak nothing.
func TestScanReadAheadSameResults(t *testing.T) {
	for _, stable := range []bool{false, true} {
		store := readAheadStore(t, stable)
		mem := checkedAlloc(t)
		d := openStore(t, store, 0, mem)
		cases := []ScanOptions{
			{},
			{WithRowID: true, WithRowAddress: true},
			{Columns: []string{"name"}, WithRowID: true},
			{Columns: []string{}, WithRowAddress: true},
			{BatchSize: 30},
			{BatchSize: 30, Offset: 250, Limit: 333},
			{Offset: 10},
			{Offset: 700, WithRowID: true},
			{Limit: 5},
			{Limit: 150, BatchSize: 64},
			{Filter: "id % 3 = 0", WithRowID: true},
			{Filter: "id > 950 OR id < 20", Columns: []string{"vec"}, BatchSize: 16},
			{Filter: "id BETWEEN 300 AND 420", Columns: []string{"name", "vec"}, Offset: 7, Limit: 40, BatchSize: 25},
			{Filter: "name = 'row-1001'", Columns: []string{"vec"}},
			{Filter: "_rowaddr > 0", Columns: []string{"id"}, Limit: 300},
		}
		for i, o := range cases {
			o.ReadAhead = -1
			want, wantSizes, err := raScanRows(t, d, o)
			if err != nil {
				t.Fatalf("stable %v case %d: %v", stable, i, err)
			}
			for _, n := range []int{1, 2, 5, 20} {
				for _, budget := range []int64{0, 1, -1} {
					o.ReadAhead, o.ReadAheadBytes = n, budget
					got, sizes, err := raScanRows(t, d, o)
					if err != nil {
						t.Fatalf("stable %v case %d read-ahead %d, %d bytes: %v", stable, i, n, budget, err)
					}
					if !slices.Equal(got, want) || !slices.Equal(sizes, wantSizes) {
						t.Fatalf("stable %v case %d %+v: %d rows in batches %v, want %d in %v",
							stable, i, o, len(got), sizes, len(want), wantSizes)
					}
				}
			}
		}
	}
}

// waitGoroutines waits for the number of goroutines to fall back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestScanReadAheadEarlyRelease releases scans after a few batches, and
// cancels their context mid-scan: no goroutine or buffer is left.
func TestScanReadAheadEarlyRelease(t *testing.T) {
	store := readAheadStore(t, false)
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	before := runtime.NumGoroutine()
	for _, filter := range []string{"", "id % 2 = 0"} {
		for stop := range 6 {
			for _, cancelIt := range []bool{false, true} {
				ctx, cancel := context.WithCancel(context.Background())
				s, err := d.Scan(&ScanOptions{ReadAhead: 3, BatchSize: 40, Filter: filter, Columns: []string{"name", "vec"}})
				if err != nil {
					t.Fatal(err)
				}
				next, stopScan := iter.Pull2(s.Batches(ctx))
				for range stop {
					if _, err, ok := next(); !ok || err != nil {
						t.Fatalf("scan ended early: %v", err)
					}
				}
				if cancelIt {
					cancel()
					if stop > 0 {
						rec, err, ok := next()
						if ok && err == nil {
							t.Fatalf("a batch after cancel (%d rows)", rec.NumRows())
						}
						if !errors.Is(err, context.Canceled) {
							t.Fatalf("err %v after cancel", err)
						}
					}
				}
				stopScan()
				cancel()
			}
		}
	}
	waitGoroutines(t, before)
	if n := mem.CurrentAlloc(); n != 0 {
		t.Fatalf("%d bytes left allocated", n)
	}
}

// TestScanReadAheadErrors breaks the data file of fragment 8: the scan
// returns the rows of the fragments before it, then the error, however far
// ahead it reads.
func TestScanReadAheadErrors(t *testing.T) {
	store := readAheadStore(t, false)
	ctx := context.Background()
	d, err := Open(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	broken := d.manifest.Fragments[8].Files[0].Path
	want, _, err := raScanRows(t, d, ScanOptions{ReadAhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The rows before fragment 8: those of the fragments before it.
	var before int
	for _, f := range d.manifest.Fragments[:8] {
		n, err := d.liveRows(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		before += int(n)
	}
	if before == 0 || before >= len(want) {
		t.Fatalf("%d rows before fragment 8 of %d", before, len(want))
	}
	for _, ops := range [][]blob.Op{nil, {blob.OpReadRange}} {
		for _, n := range []int{-1, 1, 4} {
			fs := blob.NewFaultStore(store, 1, blob.Fault{Ops: ops, Key: "data/" + broken, Err: errors.New("boom"), Times: -1})
			mem := checkedAlloc(t)
			d := openStore(t, fs, 0, mem)
			got, _, err := raScanRows(t, d, ScanOptions{ReadAhead: n, BatchSize: 33})
			if err == nil || !strings.Contains(err.Error(), "boom") {
				t.Fatalf("ops %v read-ahead %d: err %v, want boom", ops, n, err)
			}
			if !slices.Equal(got, want[:before]) {
				t.Fatalf("ops %v read-ahead %d: %d rows before the error, want %d", ops, n, len(got), before)
			}
		}
	}
}

// concurrentFiles is a store that notes how many data files are being read
// at once at most; each read takes a few milliseconds so reads that may
// overlap do.
type concurrentFiles struct {
	blob.Store
	mu      sync.Mutex
	reading map[string]int
	most    int
}

func (c *concurrentFiles) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if !strings.HasPrefix(key, "data/") {
		return c.Store.ReadRange(ctx, key, off, n)
	}
	c.mu.Lock()
	c.reading[key]++
	c.most = max(c.most, len(c.reading))
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.reading[key]--; c.reading[key] == 0 {
			delete(c.reading, key)
		}
		c.mu.Unlock()
	}()
	time.Sleep(5 * time.Millisecond)
	return c.Store.ReadRange(ctx, key, off, n)
}

// TestScanReadAheadBytes: the fragments read ahead stay within
// ReadAheadBytes, by the data files' sizes, but one is always read ahead;
// without a byte bound, ReadAhead alone bounds them.
func TestScanReadAheadBytes(t *testing.T) {
	store := readAheadStore(t, false)
	d := openStore(t, store, 0, checkedAlloc(t))
	var fileSize int64
	for _, df := range d.manifest.Fragments[0].Files {
		fileSize += int64(df.SizeBytes)
	}
	if fileSize == 0 {
		t.Fatal("the manifest gives no file sizes")
	}
	for _, tc := range []struct {
		ahead     int
		bytes     int64
		most      int // the most files read at once, at most
		leastMost int // and at least
	}{
		// The consumer's own fragment may be read besides those ahead
		// (its deleted rows make it read ranges other than the first
		// batch read ahead).
		{ahead: 8, bytes: 1, most: 2, leastMost: 1},
		{ahead: 8, bytes: 3 * fileSize, most: 4, leastMost: 3},
		{ahead: 6, bytes: -1, most: 7, leastMost: 5},
		{ahead: 2, bytes: 0, most: 3, leastMost: 2}, // the default budget holds many such files
	} {
		cs := &concurrentFiles{Store: store, reading: map[string]int{}}
		mem := checkedAlloc(t)
		d := openStore(t, cs, 0, mem)
		if _, _, err := raScanRows(t, d, ScanOptions{ReadAhead: tc.ahead, ReadAheadBytes: tc.bytes, Columns: []string{"id", "name", "vec"}}); err != nil {
			t.Fatal(err)
		}
		if cs.most > tc.most || cs.most < tc.leastMost {
			t.Errorf("read-ahead %d, %d bytes (files of %d): %d files read at once, want %d to %d",
				tc.ahead, tc.bytes, fileSize, cs.most, tc.leastMost, tc.most)
		}
	}
}

// BenchmarkScanReadAhead scans 12 fragments from a store that answers
// data file reads after 5ms (an object store's latency) or at once.
func BenchmarkScanReadAhead(b *testing.B) {
	t := &testing.T{}
	store := readAheadStore(t, false)
	for _, delay := range []time.Duration{0, 5 * time.Millisecond} {
		var s blob.Store = store
		if delay > 0 {
			s = blob.NewFaultStore(store, 1, blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Key: "data/*",
				Action: blob.Delay, Delay: delay, Times: -1})
		}
		for _, n := range []int{-1, 1, 2, 4} {
			b.Run(fmt.Sprintf("delay=%v/readahead=%d", delay, n), func(b *testing.B) {
				for b.Loop() {
					d, err := Open(context.Background(), s, nil)
					if err != nil {
						b.Fatal(err)
					}
					sc, err := d.Scan(&ScanOptions{ReadAhead: n})
					if err != nil {
						b.Fatal(err)
					}
					rows := 0
					for rec, err := range sc.Batches(context.Background()) {
						if err != nil {
							b.Fatal(err)
						}
						rows += int(rec.NumRows())
					}
				}
			})
		}
	}
}
