package format

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// The multi-page file: every kind of 2.0 column, each paged with its own
// sizes, so that no two columns share page boundaries and list items page
// independently of their offsets.
var v20MultiPageFields = []*filepb.Field{
	v20Field(0, -1, "id", "int64"),
	v20Field(1, -1, "name", "string"),
	v20Field(2, -1, "score", "double"),
	v20Field(3, -1, "flag", "bool"),
	v20Field(4, -1, "tags", "list"),
	v20Field(5, 4, "item", "string"),
	v20Field(6, -1, "vec", "fixed_size_list:float:3"),
	v20Field(7, -1, "st", "struct"),
	v20Field(8, 7, "a", "int32"),
	v20Field(9, 7, "b", "string"),
	v20Field(10, 7, "inner", "list"),
	v20Field(11, 10, "item", "int64"),
	v20Field(12, -1, "ll", "list"),
	v20Field(13, 12, "item", "list"),
	v20Field(14, 13, "item", "int32"),
	v20Field(15, -1, "kv", "list.struct"),
	v20Field(16, 15, "item", "struct"),
	v20Field(17, 16, "k", "string"),
	v20Field(18, 16, "v", "int32"),
}

// v20MultiPageSizes are the page sizes of each field's column.
var v20MultiPageSizes = map[int32][]int{
	0: {10}, 1: {7, 30, 1, 9}, 2: {13}, 3: {9}, 4: {6}, 5: {5, 1, 11}, 6: {8},
	7: {100}, 8: {9}, 9: {4}, 10: {11}, 11: {3}, 12: {5}, 13: {7}, 14: {4},
	15: {6, 50}, 16: {1000}, 17: {5}, 18: {8},
}

// v20MultiPage builds the multi-page file of n rows with random values
// (seeded) and returns it with the arrays it holds and the byte spans of
// its pages.
func v20MultiPage(t testing.TB, n int, seed uint64) ([]byte, arrow.RecordBatch, [][]v20Span, *schema.Schema) {
	t.Helper()
	sch, err := schemaproto.Decode(v20MultiPageFields, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := memory.NewGoAllocator()
	arrs := make([]arrow.Array, len(sch.Fields))
	for i, f := range sch.Fields {
		b := array.NewBuilder(mem, f.Type)
		for row := range n {
			if f.Name == "id" {
				b.(*array.Int64Builder).Append(int64(row))
				continue
			}
			v20Fill(rng, b, 0)
		}
		arrs[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(sch.Arrow(), arrs, int64(n))
	fileio.ReleaseAll(arrs)
	f := &v20File{fields: v20MultiPageFields, rows: uint64(n)}
	for i, field := range sch.Fields {
		v20EncodeField(t, f, field, rec.Column(i))
	}
	data, spans := f.build(t)
	return data, rec, spans, sch
}

// v20Fill appends one random value (null sometimes, but never a null
// struct: 2.0 cannot store struct validity).
func v20Fill(rng *rand.Rand, b array.Builder, depth int) {
	if _, isStruct := b.(*array.StructBuilder); !isStruct && rng.IntN(7) == 0 {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(rng.Int64N(1<<40) - 1<<39)
	case *array.Int32Builder:
		b.Append(rng.Int32N(2000) - 1000)
	case *array.Float64Builder:
		b.Append(float64(rng.IntN(1<<20)) / 64)
	case *array.Float32Builder:
		b.Append(float32(rng.IntN(1<<12)) / 8)
	case *array.BooleanBuilder:
		b.Append(rng.IntN(2) == 0)
	case *array.StringBuilder:
		b.Append(fmt.Sprintf("%.*s", rng.IntN(9), "abcdefghijkl"[rng.IntN(4):]))
	case *array.ListBuilder:
		b.Append(true)
		for range rng.IntN(5 - depth) {
			v20Fill(rng, b.ValueBuilder(), depth+1)
		}
	case *array.FixedSizeListBuilder:
		b.Append(true)
		for range int(b.Type().(*arrow.FixedSizeListType).Len()) {
			v20Fill(rng, b.ValueBuilder(), depth+1)
		}
	case *array.StructBuilder:
		b.Append(true)
		for i := range b.NumField() {
			v20Fill(rng, b.FieldBuilder(i), depth+1)
		}
	default:
		panic(fmt.Sprintf("v20Fill: %T", b))
	}
}

// v20EncodeField appends the columns of field f holding arr, in pre-order.
func v20EncodeField(t testing.TB, file *v20File, f *schema.Field, arr arrow.Array) {
	t.Helper()
	sizes := v20MultiPageSizes[f.ID]
	switch arr := arr.(type) {
	case *array.Struct:
		file.columns = append(file.columns, v20FileColumn{pages: v20StructPage(arr.Len())})
		for i, child := range f.Children {
			v20EncodeField(t, file, child, arr.Field(i))
		}
	case *array.List:
		pages, items := v20ListPages(t, arr, sizes...)
		defer items.Release()
		file.columns = append(file.columns, v20FileColumn{pages: pages})
		v20EncodeField(t, file, f.Children[0], items)
	default:
		file.columns = append(file.columns, v20FileColumn{pages: v20LeafPages(t, arr, sizes...)})
	}
}

// TestV20MultiPage reads the multi-page file whole and in pieces.
func TestV20MultiPage(t *testing.T) {
	for _, n := range []int{100, 1, 0} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data, src, _, sch := v20MultiPage(t, n, uint64(n))
			defer src.Release()
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r, err := openBytes(t, "data/f.lance", data, mem)
			if err != nil {
				t.Fatal(err)
			}
			got := v20Record(t, r, r.Schema().Fields, 0, r.NumRows())
			gotCells, wantCells := v20Cells(t, got), v20Cells(t, src)
			got.Release()
			for c := range wantCells {
				for i := range wantCells[c] {
					if gotCells[c][i] != wantCells[c][i] {
						t.Fatalf("field %q row %d: got %s, want %s", sch.Fields[c].Name, i, gotCells[c][i], wantCells[c][i])
					}
				}
			}
			v20CheckRanges(t, r, r.Schema().Fields, rand.New(rand.NewPCG(3, 3)))
		})
	}
}

// v20Reads returns the byte ranges store was asked to read since the last
// call, and forgets them.
func v20Reads(store *blob.CountingStore) []v20Span {
	var reads []v20Span
	for _, r := range store.Log() {
		if r.Op == blob.OpReadRange {
			reads = append(reads, v20Span{r.Offset, r.Offset + r.Length})
		}
	}
	store.Reset()
	return reads
}

// v20OpenCounting opens data through a counting store, forgetting the reads
// of Open itself.
func v20OpenCounting(t testing.TB, data []byte) (*Reader, *blob.CountingStore) {
	t.Helper()
	mem := blob.NewMemStore("v20count")
	if err := mem.Write(context.Background(), "data/f.lance", data); err != nil {
		t.Fatal(err)
	}
	store := blob.NewCountingStore(mem)
	store.StartLog()
	r, err := Open(context.Background(), store, "data/f.lance", nil)
	if err != nil {
		t.Fatal(err)
	}
	store.Reset()
	return r, store
}

// v20NeededPages lists, per column, the pages that reading rows [a, b) of
// the multi-page file must touch, computed from the source arrays.
func v20NeededPages(fileSchema *schema.Schema, src arrow.RecordBatch, a, b int) map[[2]int]bool {
	needed := map[[2]int]bool{}
	col := 0
	var visit func(f *schema.Field, arr arrow.Array, a, b int)
	visit = func(f *schema.Field, arr arrow.Array, a, b int) {
		c := col
		col++
		mark := func() {
			if a >= b {
				return
			}
			for p, r := range v20PageRanges(arr.Len(), v20MultiPageSizes[f.ID]...) {
				if r[0] < b && a < r[1] {
					needed[[2]int{c, p}] = true
				}
			}
		}
		switch arr := arr.(type) {
		case *array.Struct:
			for i, child := range f.Children {
				visit(child, arr.Field(i), a, b)
			}
		case *array.List:
			mark()
			base := v20ListOffset(arr, 0)
			items := array.NewSlice(arr.ListValues(), base, v20ListOffset(arr, arr.Len()))
			visit(f.Children[0], items, int(v20ListOffset(arr, a)-base), int(v20ListOffset(arr, b)-base))
			items.Release()
		default:
			mark()
		}
	}
	for i, f := range fileSchema.Fields {
		visit(f, src.Column(i), a, b)
	}
	return needed
}

// TestV20ReadsOnlyNeededPages checks that a ranged read fetches the pages
// holding the rows asked for (and the list items they cover) and no others.
func TestV20ReadsOnlyNeededPages(t *testing.T) {
	data, src, spans, sch := v20MultiPage(t, 100, 100)
	defer src.Release()
	r, store := v20OpenCounting(t, data)
	for _, rg := range [][2]int{{0, 1}, {5, 17}, {33, 34}, {99, 100}, {40, 80}, {0, 100}, {60, 60}} {
		a, b := rg[0], rg[1]
		arrs, err := r.readRange(context.Background(), r.FileProjection(r.Schema().Fields), uint64(a), uint64(b))
		if err != nil {
			t.Fatal(err)
		}
		fileio.ReleaseAll(arrs)
		reads := v20Reads(store)
		needed := v20NeededPages(sch, src, a, b)
		for key := range needed {
			span := spans[key[0]][key[1]]
			if span.start == span.end {
				continue
			}
			hit := false
			for _, rd := range reads {
				hit = hit || rd.start < span.end && span.start < rd.end
			}
			if !hit {
				t.Errorf("rows [%d, %d): column %d page %d was not read", a, b, key[0], key[1])
			}
		}
		for _, rd := range reads {
			inside := false
			for key := range needed {
				span := spans[key[0]][key[1]]
				inside = inside || span.start <= rd.start && rd.end <= span.end
			}
			if !inside {
				t.Errorf("rows [%d, %d): read [%d, %d) is not inside a needed page", a, b, rd.start, rd.end)
			}
		}
	}
}

// TestV20ScanReadsEachPageOnce scans the multi-page file in batches with
// one cursor: each page is fetched (and decoded) exactly once.
func TestV20ScanReadsEachPageOnce(t *testing.T) {
	data, src, spans, _ := v20MultiPage(t, 100, 101)
	defer src.Release()
	r, store := v20OpenCounting(t, data)
	for _, batch := range []uint64{7, 1, 33} {
		cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
		if err != nil {
			t.Fatal(err)
		}
		for a := uint64(0); a < r.NumRows(); a += batch {
			arrs, err := cur.ReadRange(context.Background(), a, min(a+batch, r.NumRows()))
			if err != nil {
				t.Fatal(err)
			}
			fileio.ReleaseAll(arrs)
		}
		cur.Close()
		reads := v20Reads(store)
		for c, pages := range spans {
			for p, span := range pages {
				if span.start == span.end {
					continue
				}
				n := 0
				for _, rd := range reads {
					if rd.start < span.end && span.start < rd.end {
						n++
					}
				}
				if n != 1 {
					t.Errorf("batches of %d: column %d page %d read %d times, want once", batch, c, p, n)
				}
			}
		}
	}
}
