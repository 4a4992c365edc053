package format

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// Tests of the 2.0 writer: every 2.0 fixture file read and written again,
// with Lance's own page layout; random schemas written in random batches
// and pages and read back; odd inputs. Real Lance reading what lancer
// writes is interop/format_writer_test.go's TestV20WriteLanceReads.

// v20wKey is where the tests write their file.
const v20wKey = "data/w.lance"

// v20wWrite writes batches into a 2.0 file of schema in a fresh memory
// store.
func v20wWrite(t testing.TB, sch *schema.Schema, opts WriterOptions, batches ...arrow.RecordBatch) (*blob.MemStore, *WrittenFile) {
	t.Helper()
	store := blob.NewMemStore(t.Name())
	opts.Version = Version2_0
	w, err := NewWriter(context.Background(), store, v20wKey, sch, &opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := w.Write(context.Background(), b); err != nil {
			w.Abort(context.Background())
			t.Fatal(err)
		}
	}
	wf, err := w.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return store, wf
}

// v20wReadLogical reads every row of r as the writer takes them: legacy
// blob columns (top-level) as the bytes their descriptors point at.
func v20wReadLogical(t testing.TB, r *Reader, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	rec := readAllRows(t, r)
	defer rec.Release()
	return formattest.LogicalRecord(t, rec, r.Schema(), mem, BlobDescriptorAt, r.ReadBlob)
}

// v20wOpen opens the file the tests wrote.
func v20wOpen(t testing.TB, store blob.Store, mem memory.Allocator) *Reader {
	t.Helper()
	r, err := Open(context.Background(), store, v20wKey, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if r.Version() != Version2_0 {
		t.Fatalf("wrote a %s file", r.Version())
	}
	if major, minor := r.FooterVersion(); major != 0 || minor != 3 {
		t.Fatalf("footer version %d.%d, want 0.3", major, minor)
	}
	return r
}

// v20wCheckWritten checks what WrittenFile says about a file of schema.
func v20wCheckWritten(t testing.TB, store *blob.MemStore, sch *schema.Schema, wf *WrittenFile, rows uint64) {
	t.Helper()
	var ids []int32
	var walk func(f *schema.Field)
	walk = func(f *schema.Field) {
		ids = append(ids, f.ID)
		if f.StoredWhole() {
			return
		}
		for _, c := range f.Children {
			walk(c)
		}
	}
	for _, f := range sch.Fields {
		walk(f)
	}
	if !slices.Equal(wf.Fields, ids) {
		t.Errorf("WrittenFile.Fields = %v, want %v", wf.Fields, ids)
	}
	for i, c := range wf.ColumnIndices {
		if c != int32(i) {
			t.Errorf("WrittenFile.ColumnIndices = %v, want 0..%d", wf.ColumnIndices, len(ids)-1)
			break
		}
	}
	info, err := store.Stat(context.Background(), v20wKey)
	if err != nil {
		t.Fatal(err)
	}
	if wf.Size != uint64(info.Size) || wf.Rows != rows || wf.Version != Version2_0 || wf.Key != v20wKey {
		t.Errorf("WrittenFile %+v; the file has %d bytes, %d rows", wf, info.Size, rows)
	}
}

// v20wRoundTrip writes batches of schema (in the given options) and checks
// that reading the file back gives want's rows.
func v20wRoundTrip(t *testing.T, sch *schema.Schema, want arrow.RecordBatch, opts WriterOptions, batches ...arrow.RecordBatch) (*blob.MemStore, *Reader) {
	t.Helper()
	return v20wRoundTripRows(t, sch, fixturetest.EncodeRows(t, want), opts, batches...)
}

// v20wRoundTripRows is v20wRoundTrip with the rows wanted printed.
func v20wRoundTripRows(t *testing.T, sch *schema.Schema, want [][]byte, opts WriterOptions, batches ...arrow.RecordBatch) (*blob.MemStore, *Reader) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	opts.Allocator = mem
	store, wf := v20wWrite(t, sch, opts, batches...)
	v20wCheckWritten(t, store, sch, wf, uint64(len(want)))
	r := v20wOpen(t, store, mem)
	got := v20wReadLogical(t, r, mem)
	fixturetest.CompareRows(t, t.Name(), fixturetest.EncodeRows(t, got), want, fixturetest.CompareOptions{})
	got.Release()
	mem.AssertSize(t, 0)
	return store, r
}

// v20wFixtureFiles lists every data file of the 2.0 fixtures.
func v20wFixtureFiles(t testing.TB) []string {
	var files []string
	for _, name := range v20Fixtures {
		files = append(files, fixturetest.DataFiles(t, name)...)
	}
	return files
}

// TestV20WriteFixtures reads every data file Lance 12 wrote in 2.0 and
// writes it again: in one batch with default pages (which must give Lance's
// columns, page encodings and buffer sizes exactly), and in small batches
// with small pages; both read back as the original.
func TestV20WriteFixtures(t *testing.T) {
	for _, path := range v20wFixtureFiles(t) {
		name := filepath.Base(filepath.Dir(filepath.Dir(path))) + "/" + filepath.Base(path)[:8]
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src := v20OpenPath(t, path, mem)
			want := v20wReadLogical(t, src, mem)
			defer want.Release()

			t.Run("as-lance", func(t *testing.T) {
				_, r := v20wRoundTrip(t, src.Schema(), want, WriterOptions{}, want)
				v20wSameLayout(t, src, r)
			})
			for _, tc := range []struct {
				pageSize int
				batches  []int
			}{
				{1 << 10, []int{7, 1, 30}},
				{64, []int{1}},
				{200, []int{0, 3, 0, 50}},
			} {
				t.Run(fmt.Sprintf("page%d", tc.pageSize), func(t *testing.T) {
					batches := formattest.Slices(want, tc.batches...)
					if tc.batches[0] == 0 {
						// Empty batches are fine too.
						empty := want.NewSlice(0, 0)
						batches = append([]arrow.RecordBatch{empty}, batches...)
						batches = append(batches, want.NewSlice(want.NumRows(), want.NumRows()))
					}
					defer func() {
						for _, b := range batches {
							b.Release()
						}
					}()
					_, r := v20wRoundTrip(t, src.Schema(), want, WriterOptions{PageSize: tc.pageSize}, batches...)
					if tc.pageSize == 64 && want.NumRows() > 8 && !v20wMultiPage(r) {
						t.Errorf("page size %d gave no column more than one page", tc.pageSize)
					}
				})
			}
		})
	}
}

// v20wMultiPage reports whether some column of r has several pages.
func v20wMultiPage(r *Reader) bool {
	for _, c := range r.Columns() {
		if len(c.Pages) > 1 {
			return true
		}
	}
	return false
}

// v20wSameLayout checks that got has want's columns, page encodings, page
// lengths and buffer sizes (Lance's layout, byte for byte but for where
// buffers lie).
func v20wSameLayout(t *testing.T, want, got *Reader) {
	t.Helper()
	wc, gc := want.Columns(), got.Columns()
	if len(wc) != len(gc) {
		t.Fatalf("%d columns, Lance wrote %d", len(gc), len(wc))
	}
	for i := range wc {
		w, g := wc[i], gc[i]
		if w.Encoding != g.Encoding {
			t.Errorf("column %d: column encoding %s, Lance wrote %s", i, g.Encoding, w.Encoding)
		}
		if len(w.Pages) != len(g.Pages) {
			t.Errorf("column %d: %d pages, Lance wrote %d", i, len(g.Pages), len(w.Pages))
			continue
		}
		for p := range w.Pages {
			wp, gp := w.Pages[p], g.Pages[p]
			if wp.Encoding != gp.Encoding || wp.Length != gp.Length {
				t.Errorf("column %d page %d: %d values as %s\nLance wrote %d values as %s", i, p, gp.Length, gp.Encoding, wp.Length, wp.Encoding)
			}
			ws, gs := v20wSizes(wp.Buffers), v20wSizes(gp.Buffers)
			if !slices.Equal(ws, gs) {
				t.Errorf("column %d page %d: buffers of %v bytes, Lance wrote %v", i, p, gs, ws)
			}
		}
	}
}

func v20wSizes(bufs []BufferInfo) []uint64 {
	out := make([]uint64, len(bufs))
	for i, b := range bufs {
		out[i] = b.Size
	}
	return out
}

// TestV20WriteSizes compares the size of each rewritten fixture file with
// Lance's own: within 10%.
func TestV20WriteSizes(t *testing.T) {
	var table []string
	for _, path := range v20wFixtureFiles(t) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		src := v20OpenPath(t, path, mem)
		want := v20wReadLogical(t, src, mem)
		_, wf := v20wWrite(t, src.Schema(), WriterOptions{Allocator: mem}, want)
		want.Release()
		mem.AssertSize(t, 0)
		ratio := float64(wf.Size) / float64(src.Size())
		rel, _ := filepath.Rel(filepath.Dir(filepath.Dir(filepath.Dir(path))), path)
		table = append(table, fmt.Sprintf("%-80s lance %7d  lancer %7d  %+.2f%%", rel, src.Size(), wf.Size, 100*(ratio-1)))
		if ratio < 0.9 || ratio > 1.1 {
			t.Errorf("%s: lancer wrote %d bytes, Lance %d", rel, wf.Size, src.Size())
		}
	}
	for _, line := range table {
		t.Log(line)
	}
}

// TestV20WriteZeroRows: a file without rows, and files of empty batches,
// read back empty (struct headers included).
func TestV20WriteZeroRows(t *testing.T) {
	sch := formattest.SchemaOf(t,
		arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true})},
		arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	empty := formattest.V20RandomRecord(formattest.NewV20Rand(1), sch, 0, mem)
	defer empty.Release()
	for _, batches := range [][]arrow.RecordBatch{nil, {empty}, {empty, empty}} {
		_, r := v20wRoundTrip(t, sch, empty, WriterOptions{}, batches...)
		if r.NumRows() != 0 || r.NumColumns() != 5 {
			t.Fatalf("%d rows, %d columns", r.NumRows(), r.NumColumns())
		}
	}
}

// TestV20WriteRefuses: what Lance cannot write to 2.0 files is refused
// with ErrUnsupported naming the field.
func TestV20WriteRefuses(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		field arrow.Field
	}{
		{"map", arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true}},
		{"map in a struct", arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)})}},
		{"blob v2", arrow.Field{Name: "b", Type: arrow.StructOf(arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary}, arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String}),
			Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})}},
		{"packed struct of strings", arrow.Field{Name: "p", Type: arrow.StructOf(arrow.Field{Name: "s", Type: arrow.BinaryTypes.String}),
			Metadata: arrow.NewMetadata([]string{schema.MetaPacked}, []string{"true"})}},
		{"fixed-size list of strings", arrow.Field{Name: "f", Type: arrow.FixedSizeListOf(2, arrow.BinaryTypes.String)}},
		{"blob of binary", arrow.Field{Name: "b", Type: arrow.BinaryTypes.Binary, Metadata: arrow.NewMetadata([]string{schema.MetaBlob}, []string{"true"})}},
		{"dictionary of fixed-size lists", arrow.Field{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int32)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sch := formattest.SchemaOf(t, tc.field)
			_, err := NewWriter(ctx, blob.NewMemStore(t.Name()), v20wKey, sch, &WriterOptions{Version: Version2_0})
			if !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
		})
	}

	// A struct with null rows, at the top and inside a list.
	for _, dt := range []arrow.DataType{
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true})),
	} {
		sch := formattest.SchemaOf(t, arrow.Field{Name: "st", Type: dt, Nullable: true})
		b := array.NewBuilder(mem, dt)
		b.AppendNull()
		b.AppendNull()
		if lb, ok := b.(*array.ListBuilder); ok {
			lb.Append(true)
			lb.ValueBuilder().AppendNull()
		}
		arr := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(sch.LogicalArrow(), []arrow.Array{arr}, int64(arr.Len()))
		arr.Release()
		w, err := NewWriter(ctx, blob.NewMemStore(t.Name()), v20wKey, sch, &WriterOptions{Version: Version2_0, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(ctx, rec)
		rec.Release()
		if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), `"st"`) {
			t.Errorf("%s: got %v, want ErrUnsupported naming the field", dt, err)
		}
		if _, err := w.Finish(ctx); err == nil {
			t.Errorf("%s: Finish after a failed Write succeeded", dt)
		}
	}
}

// TestV20WriteRandom writes random schemas of random rows in random
// batches (slices of one record, so most arrays have offsets) and small
// pages, and reads them back.
func TestV20WriteRandom(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := formattest.NewV20Rand(seed)
			sch := g.Schema(t)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			n := []int{1, 7, 120, 700}[g.IntN(4)]
			rec := formattest.V20RandomRecord(g, sch, n, mem)
			defer rec.Release()
			sizes := []int{1 + g.IntN(n), 1 + g.IntN(50), 1 + g.IntN(300)}
			batches := formattest.Slices(rec, sizes...)
			defer func() {
				for _, b := range batches {
					b.Release()
				}
			}()
			pageSize := []int{1, 100, 2000, DefaultPageSize}[g.IntN(4)]
			v20wRoundTrip(t, sch, rec, WriterOptions{PageSize: pageSize}, batches...)
		})
	}
}

// TestV20WriteCompression: fields asking for zstd, lz4 or fsst are
// compressed so and read back.
func TestV20WriteCompression(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sch, rec := formattest.V20TextRecord(t, 6000, mem)
	defer rec.Release()
	for _, pageSize := range []int{DefaultPageSize, 40 << 10} {
		t.Run(fmt.Sprint(pageSize), func(t *testing.T) {
			_, r := v20wRoundTrip(t, sch, rec, WriterOptions{PageSize: pageSize}, rec)
			for i, want := range []string{`scheme:"zstd"`, `scheme:"lz4"`, "fsst:", "fsst:"} {
				for p, page := range r.Columns()[i].Pages {
					if !strings.Contains(page.Encoding, want) {
						t.Errorf("column %d page %d: %s, want %s", i, p, page.Encoding, want)
					}
				}
			}
		})
	}
}

// TestV20WriteDictionaries: Arrow dictionary columns whose batches bring
// different dictionaries (with unused and null entries) are merged per
// page, and a column whose values outgrow its index type is refused.
func TestV20WriteDictionaries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sch, batches := formattest.V20DictBatches(t, mem, 126)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	// Narrow indices keep the column in one page, whatever the page size.
	_, r := v20wRoundTripRows(t, sch, fixturetest.EncodeRows(t, batches...), WriterOptions{PageSize: 64}, batches...)
	if pages := r.Columns()[0].Pages; len(pages) != 1 || !strings.Contains(pages[0].Encoding, "num_dictionary_items:127") {
		t.Errorf("the int8 dictionary did not merge into one page of 127 items: %v", pages)
	}
	if pages := r.Columns()[1].Pages; len(pages) != 1 || !strings.Contains(pages[0].Encoding, "num_dictionary_items:8") {
		t.Errorf("the uint16 dictionary did not merge into one page of 8 items: %v", pages)
	}

	// 127 strings and a null fill int8 indices.
	sch, over := formattest.V20DictBatches(t, mem, 127)
	defer func() {
		for _, b := range over {
			b.Release()
		}
	}()
	w, err := NewWriter(context.Background(), blob.NewMemStore(t.Name()), v20wKey, sch, &WriterOptions{Version: Version2_0, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range over {
		if err = w.Write(context.Background(), b); err != nil {
			break
		}
	}
	if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), `"d8"`) {
		t.Errorf("got %v, want ErrUnsupported naming the field", err)
	}
	w.Abort(context.Background())
}

// TestV20WriteNullArrays writes all-null arrays (array.MakeArrayOfNull, whose
// buffers are as thin as Arrow allows) of random schemas: they read back,
// or, for null structs, are refused; nothing panics.
func TestV20WriteNullArrays(t *testing.T) {
	for seed := range uint64(30) {
		g := formattest.NewV20Rand(500 + seed)
		sch := g.Schema(t)
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		as := sch.LogicalArrow()
		cols := make([]arrow.Array, len(as.Fields()))
		nullStruct := false
		for i, f := range as.Fields() {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, 9)
			nullStruct = nullStruct || f.Type.ID() == arrow.STRUCT
		}
		rec := record(t, as, cols, 9)
		store := blob.NewMemStore(t.Name())
		w, err := NewWriter(context.Background(), store, v20wKey, sch, &WriterOptions{Version: Version2_0, PageSize: 16, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(context.Background(), rec)
		switch {
		case nullStruct:
			if !errors.Is(err, lancer.ErrUnsupported) {
				t.Errorf("seed %d: null structs: got %v, want ErrUnsupported", seed, err)
			}
			w.Abort(context.Background())
		case err != nil:
			t.Errorf("seed %d: %v", seed, err)
			w.Abort(context.Background())
		default:
			if _, err := w.Finish(context.Background()); err != nil {
				t.Fatal(err)
			}
			r := v20wOpen(t, store, mem)
			got := v20wReadLogical(t, r, mem)
			fixturetest.CompareRows(t, fmt.Sprint("seed ", seed), fixturetest.EncodeRows(t, got), fixturetest.EncodeRows(t, rec), fixturetest.CompareOptions{})
			got.Release()
		}
		rec.Release()
		mem.AssertSize(t, 0)
	}
}

// TestV20WriteNestedBlobs: legacy blobs inside a struct and a list hold
// the bytes written.
func TestV20WriteNestedBlobs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sch, rec := formattest.V20NestedBlobs(t, mem)
	defer rec.Release()
	batches := formattest.Slices(rec, 7)
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	store, _ := v20wWrite(t, sch, WriterOptions{PageSize: 100, Allocator: mem}, batches...)
	r := v20wOpen(t, store, mem)
	got := readAllRows(t, r)
	defer got.Release()
	// check compares blob descriptors with the values written.
	check := func(what string, desc arrow.Array, want *array.LargeBinary) {
		t.Helper()
		if desc.Len() != want.Len() {
			t.Fatalf("%s: %d blobs, want %d", what, desc.Len(), want.Len())
		}
		for i := range want.Len() {
			d, ok, err := BlobDescriptorAt(desc, i)
			if err != nil {
				t.Fatal(err)
			}
			if ok != want.IsValid(i) {
				t.Fatalf("%s %d: valid %t, want %t", what, i, ok, want.IsValid(i))
			}
			if !ok {
				continue
			}
			v, err := r.ReadBlob(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			if string(v) != string(want.Value(i)) {
				t.Fatalf("%s %d: %d bytes differ from the %d written", what, i, len(v), len(want.Value(i)))
			}
		}
	}
	check("s.b", got.Column(0).(*array.Struct).Field(0), rec.Column(0).(*array.Struct).Field(0).(*array.LargeBinary))
	gotItems, wantItems := got.Column(1).(*array.List).ListValues(), rec.Column(1).(*array.List).ListValues()
	check("l.item", gotItems, wantItems.(*array.LargeBinary))
}
