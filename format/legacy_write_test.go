package format

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/schema"
)

// Tests of the legacy (v1) writer. Real Lance and old releases reading
// what it writes are interop/releases_test.go's TestReleasesWriteLancerReads.

// legacyWrite writes batches as a v1 file of schema sch with footer version
// 0.minor in a fresh memory store.
func legacyWrite(t testing.TB, sch *schema.Schema, minor uint16, batches ...arrow.RecordBatch) (*blob.MemStore, *WrittenFile) {
	t.Helper()
	ctx := context.Background()
	store := blob.NewMemStore(t.Name())
	w, err := NewWriter(ctx, store, "data/w.lance", sch, &WriterOptions{Version: Version{0, minor}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			w.Abort(ctx)
			t.Fatal(err)
		}
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return store, wf
}

// TestLegacyWriteFixture: every column of Lance's legacy types fixture,
// read, written again by lancer and read back, is the same: the writer
// lays pages out as the reader (and so Lance) reads them. The dictionary
// column's keys point into the values it is given (a dataset's); without
// them, or when a value is missing from them, it is refused.
func TestLegacyWriteFixture(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	data, err := os.ReadFile(legacyDataFiles(t, "types_vlegacy")[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := openBytes(t, "data/types.lance", data, mem)
	if err != nil {
		t.Fatal(err)
	}
	var keep []*schema.Field
	var dict *schema.Field
	for _, f := range r.Schema().Fields {
		hasDict := false
		(&schema.Schema{Fields: []*schema.Field{f}}).Walk(func(g *schema.Field) { hasDict = hasDict || g.Type.ID() == arrow.DICTIONARY })
		if hasDict {
			dict = f
			continue
		}
		keep = append(keep, f)
	}
	if dict == nil || len(keep) < 20 {
		t.Fatalf("the fixture has %d plain columns and dictionary column %v: not what this test expects", len(keep), dict)
	}
	sub := &schema.Schema{Fields: keep, Metadata: r.Schema().Metadata}
	cur, err := r.NewCursor(r.FileProjection(keep))
	if err != nil {
		t.Fatal(err)
	}
	arrs, err := cur.ReadRange(context.Background(), 0, r.NumRows())
	cur.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := record(t, sub.Arrow(), arrs, int64(r.NumRows()))
	defer want.Release()

	for _, minor := range []uint16{1, 2} {
		store, wf := legacyWrite(t, sub, minor, want)
		if wf.Version != (Version{0, minor}) || wf.Rows != r.NumRows() || len(wf.ColumnIndices) != 0 {
			t.Fatalf("written file %+v", wf)
		}
		back, err := Open(context.Background(), store, "data/w.lance", &OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		if major, m := back.FooterVersion(); major != 0 || m != minor {
			t.Errorf("footer version %d.%d, want 0.%d", major, m, minor)
		}
		got := readAllRows(t, back)
		for i := range int(want.NumCols()) {
			if !array.Equal(want.Column(i), got.Column(i)) {
				t.Errorf("footer 0.%d: column %q differs after lancer wrote it:\n got %v\nwant %v", minor, want.ColumnName(i), got.Column(i), want.Column(i))
			}
		}
		got.Release()
	}

	// The dictionary column: keyed into the dataset's values (here the
	// file's own, as a dataset's manifest holds them) it reads back the
	// same; without them, or with a value they lack, it is refused.
	dictSchema := &schema.Schema{Fields: []*schema.Field{dict}}
	dcur, err := r.NewCursor(r.FileProjection([]*schema.Field{dict}))
	if err != nil {
		t.Fatal(err)
	}
	darrs, err := dcur.ReadRange(context.Background(), 0, r.NumRows())
	dcur.Close()
	if err != nil {
		t.Fatal(err)
	}
	dwant := record(t, dictSchema.Arrow(), darrs, int64(r.NumRows()))
	defer dwant.Release()
	values := dwant.Column(0).(*array.Dictionary).Dictionary().(*array.String)
	var raw [][]byte
	for i := range values.Len() {
		raw = append(raw, []byte(values.Value(i)))
	}
	dicts := map[int32]*schema.DictionaryValues{dict.ID: schema.NewDictionaryValues(raw)}
	store := blob.NewMemStore("dict")
	w, err := NewWriter(context.Background(), store, "data/d.lance", dictSchema, &WriterOptions{Version: VersionLegacy, LegacyDictionaries: dicts})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), dwant); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	back, err := Open(context.Background(), store, "data/d.lance", &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	got := readAllRows(t, back)
	if !array.Equal(dwant.Column(0), got.Column(0)) {
		t.Errorf("dictionary column %q differs after lancer wrote it:\n got %v\nwant %v", dict.Name, got.Column(0), dwant.Column(0))
	}
	got.Release()
	_, err = NewWriter(context.Background(), blob.NewMemStore("dict"), "data/d.lance", dictSchema, &WriterOptions{Version: VersionLegacy})
	if !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("a legacy dictionary column without the dataset's values: %v, want ErrUnsupported", err)
	}
	short := map[int32]*schema.DictionaryValues{dict.ID: schema.NewDictionaryValues(raw[:1])}
	w, err = NewWriter(context.Background(), blob.NewMemStore("dict"), "data/d.lance", dictSchema, &WriterOptions{Version: VersionLegacy, LegacyDictionaries: short})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), dwant); !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "not in the dataset's dictionary") {
		t.Errorf("a value the dictionary lacks: %v, want ErrUnsupported naming it", err)
	}
	w.Abort(context.Background())
}

// TestLegacyWriteBatches: rows written in calls of any size land in batches
// of at most 1024 rows (Lance's row groups) and read back exactly, across
// batch boundaries, for each kind of page: plain values, booleans,
// fixed-size lists, strings with nulls, lists, structs.
func TestLegacyWriteBatches(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.LargeBinary},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
		{Name: "meta", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "t", Type: arrow.BinaryTypes.String})},
	}
	sch, err := schema.FromArrow(arrow.NewSchema(fields, nil), 0)
	if err != nil {
		t.Fatal(err)
	}
	build := func(start, n int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
		defer b.Release()
		for i := start; i < start+n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.BooleanBuilder).Append(i%3 == 0)
			vb := b.Field(2).(*array.FixedSizeListBuilder)
			vb.Append(true)
			for j := range 4 {
				vb.ValueBuilder().(*array.Float32Builder).Append(float32(i*4 + j))
			}
			if i%5 == 0 {
				b.Field(3).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("row %d", i))
			}
			b.Field(4).(*array.BinaryBuilder).Append([]byte(fmt.Sprintf("%x", i)))
			lb := b.Field(5).(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 4 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + j))
			}
			sb := b.Field(6).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(-i))
			sb.FieldBuilder(1).(*array.StringBuilder).Append(fmt.Sprintf("t%d", i))
		}
		return b.NewRecordBatch()
	}
	// 1500 + 1 + 1500 rows: batches of 1024, 476, 1, 1024, 476; the second
	// and later calls slice arrays at non-zero offsets.
	parts := []arrow.RecordBatch{build(0, 1500), build(1500, 1), build(1501, 1500)}
	sliced := parts[2].NewSlice(0, 1500)
	store, wf := legacyWrite(t, sch, 2, parts[0], parts[1], sliced)
	sliced.Release()
	if wf.Rows != 3001 {
		t.Fatalf("%d rows written", wf.Rows)
	}
	back, err := Open(context.Background(), store, "data/w.lance", &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	got := readAllRows(t, back)
	defer got.Release()
	want := build(0, 3001)
	defer want.Release()
	for _, p := range parts {
		p.Release()
	}
	for i := range int(want.NumCols()) {
		if !array.Equal(want.Column(i), got.Column(i)) {
			t.Errorf("column %q differs:\n got %v\nwant %v", want.ColumnName(i), array.NewSlice(got.Column(i), 1020, 1030), array.NewSlice(want.Column(i), 1020, 1030))
		}
	}
	// Reading from inside a batch (a take's path) sees the same rows.
	cur, err := back.NewCursor(back.FileProjection(back.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), 1000, 1100)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arrs {
		w := array.NewSlice(want.Column(i), 1000, 1100)
		if !array.Equal(w, a) {
			t.Errorf("rows [1000, 1100) of %q differ", want.ColumnName(i))
		}
		w.Release()
		a.Release()
	}
}
