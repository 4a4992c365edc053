package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// goodsFields is the schema of the test table the filter and add-column
// tests write: a key, nullable scalars, a struct and a list.
var goodsFields = []arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "meta", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}

// goods describes row id of the test table; the nil fields are nulls.
type goods struct {
	id     int64
	name   *string
	price  *float64
	meta   bool // false: the struct is null
	a      *int64
	b      string
	tagged bool
}

// goodsRow returns row id; nullStructs makes some "meta" values null (2.0
// files cannot store a null struct).
func goodsRow(id int64, nullStructs bool) goods {
	g := goods{id: id, meta: id%6 != 5 || !nullStructs, tagged: id%4 != 3, b: fmt.Sprintf("b%d", id%3)}
	if id%7 != 3 {
		s := fmt.Sprintf("Item-%d", id)
		g.name = &s
	}
	if id%5 != 2 {
		p := float64(id) * 1.5
		g.price = &p
	}
	if id%9 != 4 {
		a := id * 10
		g.a = &a
	}
	return g
}

// goodsReader returns rows [from, to) of the test table.
func goodsReader(t testing.TB, mem memory.Allocator, from, to int64, nullStructs bool) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema(goodsFields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for id := from; id < to; id++ {
		g := goodsRow(id, nullStructs)
		b.Field(0).(*array.Int64Builder).Append(id)
		if g.name != nil {
			b.Field(1).(*array.StringBuilder).Append(*g.name)
		} else {
			b.Field(1).AppendNull()
		}
		if g.price != nil {
			b.Field(2).(*array.Float64Builder).Append(*g.price)
		} else {
			b.Field(2).AppendNull()
		}
		sb := b.Field(3).(*array.StructBuilder)
		if g.meta {
			sb.Append(true)
			if g.a != nil {
				sb.FieldBuilder(0).(*array.Int64Builder).Append(*g.a)
			} else {
				sb.FieldBuilder(0).AppendNull()
			}
			sb.FieldBuilder(1).(*array.StringBuilder).Append(g.b)
		} else {
			sb.AppendNull()
		}
		lb := b.Field(4).(*array.ListBuilder)
		if g.tagged {
			lb.Append(true)
			lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", id%3))
		} else {
			lb.AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeGoods writes rows [0, n) of the test table in fragments of perFile
// rows, then deletes the rows whose id is 1 modulo 8 (and every row of the
// second fragment when dropFragment), and returns the latest version.
func writeGoods(t testing.TB, store blob.Store, mem memory.Allocator, n int64, opts WriteOptions) *Dataset {
	t.Helper()
	ctx := context.Background()
	opts.Allocator = mem
	r := goodsReader(t, mem, 0, n, opts.FileVersion != format.Version2_0)
	defer r.Release()
	d, err := Write(ctx, store, r, &opts)
	if err != nil {
		t.Fatal(err)
	}
	checkWhenDone(t, store)
	if d, err = d.Delete(ctx, "id % 8 = 1", nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// liveGoods lists the ids writeGoods leaves.
func liveGoods(n int64) []int64 {
	var ids []int64
	for id := range n {
		if id%8 != 1 {
			ids = append(ids, id)
		}
	}
	return ids
}

// filteredIDs runs a scan and returns the "id" column of its rows, checking
// every batch's schema against the scanner's.
func filteredIDs(t *testing.T, d *Dataset, opts *ScanOptions) ([]int64, error) {
	t.Helper()
	s, err := d.Scan(opts)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			return nil, err
		}
		if !rec.Schema().Equal(s.Schema()) {
			t.Fatalf("batch schema %s, scanner's %s", rec.Schema(), s.Schema())
		}
		if opts.BatchSize > 0 && rec.NumRows() > int64(opts.BatchSize) {
			t.Errorf("batch of %d rows for BatchSize %d", rec.NumRows(), opts.BatchSize)
		}
		col := rec.Schema().FieldIndices("id")
		if len(col) != 1 {
			t.Fatalf("no id column in %s", rec.Schema())
		}
		ids = append(ids, rec.Column(col[0]).(*array.Int64).Int64Values()...)
	}
	return ids, nil
}

// TestScanFilter checks filtered scans of a table with deletions, in every
// writable file version, against predicates evaluated in Go: projections
// that leave the filter's columns out, struct members, list functions,
// _rowid and _rowaddr, and Limit and Offset counted after the filter.
func TestScanFilter(t *testing.T) {
	ctx := context.Background()
	const n = 200
	cases := []struct {
		filter string
		want   func(g goods, rowaddr uint64) bool // nil: SQL NULL counts as false
	}{
		{"id % 3 = 0", func(g goods, _ uint64) bool { return g.id%3 == 0 }},
		{"price > 100 AND name IS NOT NULL", func(g goods, _ uint64) bool {
			return g.price != nil && *g.price > 100 && g.name != nil
		}},
		{"price IS NULL OR id < 10", func(g goods, _ uint64) bool { return g.price == nil || g.id < 10 }},
		{"NOT (id BETWEEN 20 AND 180)", func(g goods, _ uint64) bool { return g.id < 20 || g.id > 180 }},
		{"name LIKE 'Item-1%'", func(g goods, _ uint64) bool { return g.name != nil && strings.HasPrefix(*g.name, "Item-1") }},
		{"lower(name) = 'item-42'", func(g goods, _ uint64) bool { return g.name != nil && *g.name == "Item-42" }},
		{"meta.a >= 1000", func(g goods, _ uint64) bool { return g.meta && g.a != nil && *g.a >= 1000 }},
		{"meta.b IN ('b1', 'b2') AND meta IS NOT NULL", func(g goods, _ uint64) bool { return g.meta && g.b != "b0" }},
		{"meta IS NULL", func(g goods, _ uint64) bool { return !g.meta }},
		{"array_has(tags, 't2')", func(g goods, _ uint64) bool { return g.tagged && g.id%3 == 2 }},
		{"id * 2 + 1 > 300", func(g goods, _ uint64) bool { return g.id*2+1 > 300 }},
		{"_rowaddr >= 4294967296", func(_ goods, addr uint64) bool { return addr >= 1<<32 }},
		{"_rowid % 2 = 0", func(_ goods, addr uint64) bool { return addr%2 == 0 }}, // without stable row ids _rowid is the address
		{"TRUE", func(goods, uint64) bool { return true }},
		{"id < 0", func(goods, uint64) bool { return false }},
	}
	for _, v := range []format.Version{format.Version2_0, format.Version2_1, format.Version2_2} {
		t.Run(v.String(), func(t *testing.T) {
			mem := checkedAlloc(t)
			d := writeGoods(t, blob.NewMemStore("f"+v.String()), mem, n, WriteOptions{FileVersion: v, MaxRowsPerFile: 64})
			for _, tc := range cases {
				var want []int64
				for _, id := range liveGoods(n) {
					addr := uint64(id/64)<<32 | uint64(id%64)
					if tc.want(goodsRow(id, v != format.Version2_0), addr) {
						want = append(want, id)
					}
				}
				type window struct{ offset, limit int64 }
				runs := []struct {
					cols []string
					w    window
				}{{nil, window{}}, {[]string{"price", "id"}, window{}}, {[]string{"meta.b", "id"}, window{}}}
				for _, w := range []window{{0, 0}, {0, 3}, {5, 0}, {7, 11}, {int64(len(want)), 1}} {
					runs = append(runs, struct {
						cols []string
						w    window
					}{[]string{"id"}, w})
				}
				for _, run := range runs {
					cols, w := run.cols, run.w
					{
						got, err := filteredIDs(t, d, &ScanOptions{Columns: cols, Filter: tc.filter, Offset: w.offset, Limit: w.limit, BatchSize: 16})
						if err != nil {
							t.Fatalf("%q columns %q: %v", tc.filter, cols, err)
						}
						lo := min(int(w.offset), len(want))
						hi := len(want)
						if w.limit > 0 {
							hi = min(hi, lo+int(w.limit))
						}
						if !slices.Equal(got, want[lo:hi]) {
							t.Errorf("%q columns %q offset %d limit %d: ids %v, want %v", tc.filter, cols, w.offset, w.limit, got, want[lo:hi])
						}
					}
				}
				cnt, err := d.Count(ctx, tc.filter)
				if err != nil || cnt != uint64(len(want)) {
					t.Errorf("Count(%q) = %d, %v; want %d", tc.filter, cnt, err, len(want))
				}
			}
		})
	}
}

// TestScanFilterSchema: the batches hold exactly the projected columns, a
// struct member projected alone stays alone even when the filter reads
// another member, and the virtual columns appear only when asked for.
func TestScanFilterSchema(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := writeGoods(t, blob.NewMemStore("schema"), mem, 40, WriteOptions{MaxRowsPerFile: 16})
	s, err := d.Scan(&ScanOptions{Columns: []string{"meta.b"}, Filter: "meta.a > 100 AND _rowid > 3 AND price > 0", WithRowAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	wantSchema := arrow.NewSchema([]arrow.Field{
		{Name: "meta", Type: arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
		{Name: RowAddressColumn, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	if !s.Schema().Equal(wantSchema) {
		t.Fatalf("schema %s, want %s", s.Schema(), wantSchema)
	}
	var rows [][]byte
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Schema().Equal(wantSchema) {
			t.Fatalf("batch schema %s", rec.Schema())
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	var want [][]byte
	for _, id := range liveGoods(40) {
		g := goodsRow(id, true)
		if g.meta && g.a != nil && *g.a > 100 && id > 3 && g.price != nil {
			want = append(want, fmt.Appendf(nil, `{"meta":{"b":%q},"_rowaddr":%d}`, g.b, uint64(id/16)<<32|uint64(id%16)))
		}
	}
	fixturetest.CompareRows(t, "meta.b filtered on meta.a", rows, want, fixturetest.CompareOptions{})
}

// TestScanFilterErrors: a bad filter fails Scan (and Count) with the filter
// package's positional error, before anything is read.
func TestScanFilterErrors(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := writeGoods(t, blob.NewMemStore("errors"), mem, 10, WriteOptions{})
	for _, tc := range []struct {
		filter string
		want   error
		text   string
	}{
		{"id >> 3", lancer.ErrInvalidArgument, "at column 5"},
		{"nosuch > 3", lancer.ErrNotFound, "no column nosuch"},
		{"meta.zz = 1", lancer.ErrNotFound, "zz"},
		{"id + 1", lancer.ErrInvalidArgument, "boolean"},
		{"name = 3", lancer.ErrInvalidArgument, ""},
	} {
		_, err := d.Scan(&ScanOptions{Columns: []string{"id"}, Filter: tc.filter})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("Scan filter %q: %v, want %v mentioning %q", tc.filter, err, tc.want, tc.text)
		}
		if _, err := d.Count(ctx, tc.filter); !errors.Is(err, tc.want) {
			t.Errorf("Count(%q): %v, want %v", tc.filter, err, tc.want)
		}
	}
	all, err := d.Count(ctx, "")
	if err != nil || all != uint64(len(liveGoods(10))) {
		t.Errorf("Count(\"\") = %d, %v; want %d", all, err, len(liveGoods(10)))
	}
}

// TestScanFilterFixtures filters every fixture dataset real Lance wrote
// (every file version, deletions, stable row ids) on each of its columns
// (IS NULL, the column itself left out of the projection; IS NOT NULL on
// the last) and on _rowid, and compares with the rows Lance read back,
// filtered in Go.
func TestScanFilterFixtures(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		d, _ := openFixture(t, fx.DatasetPath, 0)
		rows := make([]map[string]json.RawMessage, len(exp.Rows))
		for i, r := range exp.Rows {
			dec := json.NewDecoder(bytes.NewReader(r))
			dec.UseNumber()
			if err := dec.Decode(&rows[i]); err != nil {
				t.Fatal(err)
			}
		}
		first := d.Schema().Fields[0].Name
		type check struct {
			filter string
			keep   func(r map[string]json.RawMessage) bool
		}
		var checks []check
		for _, f := range d.Schema().Fields {
			if f.Blob != schema.NotBlob {
				continue
			}
			quoted := "`" + strings.ReplaceAll(f.Name, "`", "``") + "`"
			name := f.Name
			isNull := func(r map[string]json.RawMessage) bool { return string(r[name]) == "null" }
			checks = append(checks, check{quoted + " IS NULL", isNull})
			if f == d.Schema().Fields[len(d.Schema().Fields)-1] {
				checks = append(checks, check{quoted + " IS NOT NULL", func(r map[string]json.RawMessage) bool { return !isNull(r) }})
			}
		}
		checks = append(checks, check{"_rowid % 3 = 1", func(r map[string]json.RawMessage) bool {
			id, err := strconv.ParseUint(string(r[RowIDColumn]), 10, 64)
			return err == nil && id%3 == 1
		}})
		for _, c := range checks {
			var want [][]byte
			for i, r := range rows {
				if c.keep(r) {
					want = append(want, exp.Rows[i])
				}
			}
			got, _, err := scanRows(t, d, &ScanOptions{Columns: []string{first}, WithRowID: true, Filter: c.filter, BatchSize: 1000})
			if err != nil {
				t.Fatalf("filter %q: %v", c.filter, err)
			}
			fixturetest.CompareRows(t, fmt.Sprintf("%s where %s", fx.Name, c.filter), got, want,
				fixturetest.CompareOptions{Columns: []string{first, RowIDColumn}})
		}
	})
}

// TestScanFilterBoundedMemory filters pages_2_2 (1.1 million rows, id = i
// and small = i % 1000) on a column it does not return: every matching
// row comes back, and live memory stays within the unfiltered scan's
// bound, since each batch is filtered as it is read.
func TestScanFilterBoundedMemory(t *testing.T) {
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	d, err := openDir(ctx, fixturetest.EncodingDatasetPath(t, "pages_2_2"), &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := filteredIDs(t, d, &ScanOptions{Columns: []string{"id"}, Filter: "small = 7 AND id % 2 = 1", Offset: 2, Limit: 1000, BatchSize: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1000 {
		t.Fatalf("%d rows, want 1000", len(ids))
	}
	for k, id := range ids {
		if want := int64(k+2)*1000 + 7; id != want {
			t.Fatalf("row %d: id %d, want %d", k, id, want)
		}
	}
	n, err := d.Count(ctx, "small < 10")
	if err != nil || n != 11000 {
		t.Errorf("Count(small < 10) = %d, %v; want 11000", n, err)
	}
	t.Logf("peak live Arrow memory %d bytes", mem.peak)
	if mem.peak > maxScanPeak {
		t.Errorf("peak live Arrow memory %d bytes, want at most %d", mem.peak, maxScanPeak)
	}
}

// A filtered scan probes the filter's columns first and skips the batches
// where nothing passes; what it returns must not change.
func TestFilteredScanSkipsBatches(t *testing.T) {
	ctx := context.Background()
	const dim, n = 4, 1000
	vecs := clustered(rand.New(rand.NewPCG(14, 14)), n, dim)
	d := newVecDataset(t, blob.NewMemStore("f"), vecs, dim, n, 300, false)
	d, err := d.Delete(ctx, "id = 950", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter string
		want   func(int) bool
	}{
		{"id >= 900 OR id < 10", func(i int) bool { return (i >= 900 || i < 10) && i != 950 }},
		{"category = 'c3' AND id > 500", func(i int) bool { return i%7 == 3 && i > 500 && i != 950 }},
		{"id < 0", func(int) bool { return false }},
	} {
		for _, cols := range [][]string{nil, {"vec", "id"}} {
			s, err := d.Scan(&ScanOptions{Filter: tc.filter, Columns: cols, BatchSize: 64, WithRowID: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for rec, err := range s.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				idCol := rec.Column(rec.Schema().FieldIndices("id")[0]).(*array.Int64)
				vecCol := rec.Column(rec.Schema().FieldIndices("vec")[0]).(*array.FixedSizeList)
				for i := range int(rec.NumRows()) {
					id := int(idCol.Value(i))
					got = append(got, id)
					v := vecCol.ListValues().(*array.Float32).Float32Values()[(vecCol.Offset()+i)*dim : (vecCol.Offset()+i+1)*dim]
					if !slices.Equal(v, vecs[id*dim:(id+1)*dim]) {
						t.Fatalf("%s: row %d has another row's vector", tc.filter, id)
					}
				}
			}
			var want []int
			for i := range n {
				if tc.want(i) {
					want = append(want, i)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s %v: %d rows %v, want %d", tc.filter, cols, len(got), got, len(want))
			}
		}
	}
}
