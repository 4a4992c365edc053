package format

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// TestTakeMatchesScan takes random sets of rows (unsorted, with repeats)
// from every data file of the fixtures, of every version, and checks them
// against a full read's rows at those positions: with a new cursor, and
// with a cursor whose pages are cached from a read. Takes with a partial
// read wherever a 2.1+ layout has one are structural's
// TestTakePartialMatchesScan.
func TestTakeMatchesScan(t *testing.T) {
	root := fixturetest.Dir(t)
	files := fixturetest.Glob(t, "lance/*.lance/data/*.lance", "encodings/*.lance/data/*.lance")
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openFixtureFile(t, path, mem)
			checkTakes(t, r, mem)
		})
	}
}

// checkTakes checks takes of random rows of r against a full read, once
// with a new cursor per take and once with one whose pages a read cached.
func checkTakes(t *testing.T, r *Reader, mem memory.Allocator) {
	t.Helper()
	ctx := context.Background()
	proj := r.FileProjection(r.Schema().Fields)
	n := r.NumRows()
	full, err := r.readRange(ctx, proj, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(full)
	for _, cached := range []bool{false, true} {
		for _, rows := range formattest.TakeRowSets(n, uint64(len(full))) {
			c, err := r.NewCursor(proj)
			if err != nil {
				t.Fatal(err)
			}
			if cached {
				// A read first leaves the page of row rows[0] cached for
				// the take.
				arrs, err := c.ReadRange(ctx, rows[0], min(rows[0]+2, n))
				if err != nil {
					t.Fatal(err)
				}
				fileio.ReleaseAll(arrs)
			}
			got, err := c.Take(ctx, rows)
			c.Close()
			if err != nil {
				t.Fatalf("cached %v, take of %d rows: %v", cached, len(rows), err)
			}
			compareTake(t, fmt.Sprintf("cached %v, take of %d rows", cached, len(rows)), r, mem, full, got, rows)
			fileio.ReleaseAll(got)
		}
	}
}

// compareTake checks got, the take of rows, against full.
func compareTake(t *testing.T, what string, r *Reader, mem memory.Allocator, full, got []arrow.Array, rows []uint64) {
	t.Helper()
	names := make([]string, len(r.Schema().Fields))
	for i, f := range r.Schema().Fields {
		names[i] = f.Name
	}
	formattest.CompareTake(t, what, names, mem, full, got, rows)
}

// TestTakeReadsOnlyItsRows: taking a few rows of a multi-page file of
// mini-block and full-zip columns (fixed-width vectors, wide strings,
// lists) reads a small part of the file, and the rows are right. On a
// local disk every partial read is made; elsewhere (a MemStore standing
// for an object store) those that need a round trip for metadata first
// only when they save much (remoteRoundTrip), which this file's small
// pages do not, but its vectors are still read row by row.
func TestTakeReadsOnlyItsRows(t *testing.T) {
	for _, v := range []Version{Version2_1, Version2_2} {
		for _, local := range []bool{true, false} {
			name := v.String() + "/mem"
			if local {
				name = v.String() + "/local"
			}
			t.Run(name, func(t *testing.T) { testTakeReadsOnlyItsRows(t, v, local) })
		}
	}
}

func testTakeReadsOnlyItsRows(t *testing.T, v Version, local bool) {
	ctx := context.Background()
	mstore, key := takeTestFile(t, v, 20_000)
	var store blob.Store = mstore
	limit := int64(2) // the file's bytes over the bytes a take may read
	if local {
		ls, err := blob.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		data, err := mstore.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := ls.Write(ctx, key, data); err != nil {
			t.Fatal(err)
		}
		store, limit = ls, 8
	}
	counting := blob.NewCountingStore(store)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := Open(ctx, counting, key, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	checkTakes(t, r, mem)

	proj := r.FileProjection(r.Schema().Fields)
	full, err := r.readRange(ctx, proj, 0, r.NumRows())
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(full)
	rng := rand.New(rand.NewPCG(1, 1))
	rows := make([]uint64, 20)
	for i := range rows {
		rows[i] = rng.Uint64N(r.NumRows())
	}
	for range 2 { // the second time, mini-block indexes are cached
		read := countedTake(t, r, counting, proj, mem, full, rows)
		t.Logf("take of %d rows of a %d-byte file: %v", len(rows), r.Size(), read)
		if read.BytesRead() > r.Size()/limit {
			t.Errorf("take of %d rows read %d bytes of a %d-byte file", len(rows), read.BytesRead(), r.Size())
		}
	}
}

// countedTake takes rows of r (opened over counting) with a new cursor,
// checks them against full (the whole file read), and returns what the
// take read.
func countedTake(t *testing.T, r *Reader, counting *blob.CountingStore, proj Projection, mem memory.Allocator, full []arrow.Array, rows []uint64) blob.Counts {
	t.Helper()
	c, err := r.NewCursor(proj)
	if err != nil {
		t.Fatal(err)
	}
	before := counting.Snapshot()
	got, err := c.Take(context.Background(), rows)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	read := counting.Snapshot().Sub(before)
	compareTake(t, fmt.Sprintf("take of %d rows", len(rows)), r, mem, full, got, rows)
	fileio.ReleaseAll(got)
	return read
}

// takeTestFile writes a file of n rows with small pages: an int64, a
// 128-d float32 vector (full-zip), a nullable string (mini-block), a
// nullable wide string (full-zip, variable width), and a nullable list of
// nullable int32 (mini-block with repetition levels).
func takeTestFile(t testing.TB, v Version, n int) (*blob.MemStore, string) {
	t.Helper()
	mem := memory.NewGoAllocator()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "vec", Type: arrow.FixedSizeListOf(128, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "wide", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	ids := array.NewInt64Builder(mem)
	vecs := array.NewFixedSizeListBuilder(mem, 128, arrow.PrimitiveTypes.Float32)
	fl := vecs.ValueBuilder().(*array.Float32Builder)
	ss := array.NewStringBuilder(mem)
	ws := array.NewStringBuilder(mem)
	ls := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int32)
	li := ls.ValueBuilder().(*array.Int32Builder)
	for i := range n {
		ids.Append(int64(i))
		vecs.Append(true)
		for range 128 {
			fl.Append(rng.Float32())
		}
		if i%17 == 0 {
			ss.AppendNull()
		} else {
			ss.Append(fmt.Sprintf("row-%d-%x", i, rng.Uint32()))
		}
		switch {
		case i%19 == 0:
			ws.AppendNull()
		default:
			b := make([]byte, 200+rng.IntN(200))
			for j := range b {
				b[j] = 'a' + byte(rng.IntN(26))
			}
			ws.Append(string(b))
		}
		switch i % 23 {
		case 0:
			ls.AppendNull()
		case 1:
			ls.Append(true) // empty
		default:
			ls.Append(true)
			for j := range rng.IntN(40) {
				if j%7 == 3 {
					li.AppendNull()
				} else {
					li.Append(int32(rng.IntN(1000)))
				}
			}
		}
	}
	builders := []array.Builder{ids, vecs, ss, ws, ls}
	cols := make([]arrow.Array, len(builders))
	for i, b := range builders {
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(s.LogicalArrow(), cols, int64(n))
	fileio.ReleaseAll(cols)
	defer rec.Release()
	store := blob.NewMemStore("take")
	ctx := context.Background()
	w, err := NewWriter(ctx, store, "f.lance", s, &WriterOptions{Version: v, PageSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	return store, "f.lance"
}

// TestTakeNarrowsWholeMiniBlockPages: on an object store (a MemStore stands
// for one) a take reads a mini-block page that is not worth a metadata
// round whole, but decodes only the chunks of its rows and keeps the
// page's chunk index, so the next take of the page reads only its chunks.
func TestTakeNarrowsWholeMiniBlockPages(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	as := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	sb := array.NewStringBuilder(mem)
	const n = 6000
	for range n {
		b := make([]byte, 120)
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		sb.Append(string(b))
	}
	col := sb.NewArray()
	sb.Release()
	rec := array.NewRecordBatch(as, []arrow.Array{col}, n)
	col.Release()
	store := blob.NewMemStore("narrow")
	w, err := NewWriter(ctx, store, "f.lance", s, &WriterOptions{Version: Version2_1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if _, err := w.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	counting := blob.NewCountingStore(store)
	r, err := Open(ctx, counting, "f.lance", &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if pages := len(r.f.Columns[0].GetPages()); pages != 1 {
		t.Fatalf("%d pages, want 1", pages)
	}
	proj := r.FileProjection(r.Schema().Fields)
	full, err := r.readRange(ctx, proj, 0, r.NumRows())
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(full)
	rows := []uint64{5990, 10}
	var read [2]int64
	for i := range read {
		read[i] = countedTake(t, r, counting, proj, mem, full, rows).BytesRead()
	}
	t.Logf("bytes read: first take %d, second %d", read[0], read[1])
	if read[0] < 600_000 || read[1] > read[0]/10 {
		t.Errorf("first take read %d bytes (the page whole, ~720 KB), second %d (its chunks only)", read[0], read[1])
	}
}

// TestTakeIndexedZipRunsChecked: a corrupt full-zip row index that moves a
// row from one run of a take to another, keeping the total, is reported as
// corruption rather than returning the wrong rows.
func TestTakeIndexedZipRunsChecked(t *testing.T) {
	ctx := context.Background()
	mstore, key := takeTestFile(t, Version2_1, 2000)
	data, err := mstore.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, mstore, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	const wide = 3 // the full-zip variable-width column
	if r.Schema().Fields[wide].Name != "wide" {
		t.Fatalf("column %d is %q", wide, r.Schema().Fields[wide].Name)
	}
	page := r.f.Columns[wide].GetPages()[0]
	if n := len(page.GetBufferOffsets()); n != 2 {
		t.Fatalf("the wide column's page has %d buffers, want 2 (values, row index)", n)
	}
	w := page.GetBufferSizes()[1] / (page.GetLength() + 1)
	index := data[page.GetBufferOffsets()[1]:][:page.GetBufferSizes()[1]]
	entry := func(i uint64) []byte { return index[i*w : (i+1)*w] }
	// Rows 5 and 10: run one now ends where row 7 starts (rows 5 and 6),
	// run two is empty. Two rows in all, as asked.
	copy(entry(6), entry(7))
	copy(entry(10), entry(11))
	ls, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Write(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	bad, err := Open(ctx, ls, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bad.NewCursor(bad.FileProjection(bad.Schema().Fields[wide : wide+1]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Take(ctx, []uint64{5, 10})
	if err == nil {
		fileio.ReleaseAll(got)
		t.Fatal("a take through a row index that moved a row between runs succeeded")
	}
	if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "row index") {
		t.Fatalf("err %v, want ErrCorrupt about the row index", err)
	}
}

// openFixtureFile opens a data file of the fixtures with allocator mem.
func openFixtureFile(t testing.TB, path string, mem memory.Allocator) *Reader {
	t.Helper()
	store, key := fixturetest.LocalFile(t, path)
	r, err := Open(context.Background(), store, key, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return r
}
