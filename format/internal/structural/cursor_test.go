package structural

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/formattest"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Layer names, short for the tables below.
const (
	avItem = enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM
	nItem  = enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM
	avList = enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST
	nList  = enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST
	eList  = enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST
	neList = enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST
)

// fieldMaker hands out field ids for hand-built schemas.
type fieldMaker struct{ next int32 }

func (m *fieldMaker) id() int32 { m.next++; return m.next }

func (m *fieldMaker) leaf(name string, dt arrow.DataType, nullable bool) *schema.Field {
	return &schema.Field{ID: m.id(), Name: name, Type: dt, Nullable: nullable}
}

func arrowField(f *schema.Field) arrow.Field {
	return arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
}

func (m *fieldMaker) strct(name string, nullable bool, children ...*schema.Field) *schema.Field {
	fs := make([]arrow.Field, len(children))
	for i, c := range children {
		fs[i] = arrowField(c)
	}
	return &schema.Field{ID: m.id(), Name: name, Type: arrow.StructOf(fs...), Nullable: nullable, Children: children}
}

func (m *fieldMaker) list(name string, nullable bool, child *schema.Field) *schema.Field {
	return &schema.Field{ID: m.id(), Name: name, Type: arrow.ListOfField(arrowField(child)), Nullable: nullable, Children: []*schema.Field{child}}
}

func (m *fieldMaker) largeList(name string, nullable bool, child *schema.Field) *schema.Field {
	return &schema.Field{ID: m.id(), Name: name, Type: arrow.LargeListOfField(arrowField(child)), Nullable: nullable, Children: []*schema.Field{child}}
}

func (m *fieldMaker) mapOf(name string, nullable bool, key, value *schema.Field) *schema.Field {
	entries := m.strct("entries", false, key, value)
	return &schema.Field{ID: m.id(), Name: name, Type: arrow.MapOfFields(arrowField(key), arrowField(value)), Nullable: nullable,
		Children: []*schema.Field{entries}}
}

// testPage is a hand-built page: levels plus the visible values as JSON
// (or built by makeValues).
type testPage struct {
	rows       uint64
	layers     []enc21pb.RepDefLayer
	rep, def   []uint16
	values     string
	makeValues func(mem memory.Allocator) arrow.Array
}

// fakeFile serves hand-built pages to a structuralCursor and counts
// decodes.
type fakeFile struct {
	mem     memory.Allocator
	numRows uint64
	columns map[int][]testPage // by column
	leafCol map[int32]int      // leaf field id → column
	decodes atomic.Int64       // the cursor may decode pages in parallel
}

func (f *fakeFile) pageRows(col int) ([]uint64, error) {
	pages, ok := f.columns[col]
	if !ok {
		return nil, fmt.Errorf("no column %d: %w", col, lancer.ErrCorrupt)
	}
	rows := make([]uint64, len(pages))
	for i, p := range pages {
		rows[i] = p.rows
	}
	return rows, nil
}

func (f *fakeFile) decode(_ context.Context, col, p int, leaf *schema.Field) (*leafPage, error) {
	f.decodes.Add(1)
	tp := f.columns[col][p]
	var values arrow.Array
	if tp.makeValues != nil {
		values = tp.makeValues(f.mem)
	} else {
		var err error
		values, _, err = array.FromJSON(f.mem, leaf.ScanType(), strings.NewReader(tp.values))
		if err != nil {
			// Not t.Fatal: the cursor may call decode from other goroutines.
			return nil, fmt.Errorf("test column %d page %d values %s: %v", col, p, tp.values, err)
		}
	}
	n := max(len(tp.rep), len(tp.def))
	if tp.rep == nil && tp.def == nil {
		n = int(tp.rows)
	}
	return &leafPage{numRows: tp.rows, layers: tp.layers, rep: tp.rep, def: tp.def, numItems: n, values: values}, nil
}

func (f *fakeFile) cursor(t testing.TB, fields []*schema.Field) *cursor {
	t.Helper()
	proj := fileio.Projection{Fields: fields, Column: func(id int32) (int, bool) {
		c, ok := f.leafCol[id]
		return c, ok
	}}
	c, err := buildCursor("test.lance", f.numRows, f.mem, proj, f.pageRows, f.decode)
	if err != nil {
		t.Fatalf("buildStructuralCursor: %v", err)
	}
	return c
}

// structuralCase is one table test: a schema, its pages, and the rows it
// must read as.
type structuralCase struct {
	name    string
	fields  func(m *fieldMaker) []*schema.Field
	numRows uint64
	// columns by leaf, in the order the leaves appear in the schema
	// (pre-order); a nil entry is a leaf without a column.
	columns [][]testPage
	// want holds, per field, the expected rows as JSON in Arrow's JSON
	// array format.
	want []string
	// check inspects the full read further (exact validity, offsets).
	check func(t *testing.T, got []arrow.Array)
}

var structuralCases = []structuralCase{
	{
		name: "list<int32?> spec example",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("l", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true))}
		},
		numRows: 4,
		columns: [][]testPage{{{
			rows: 4, layers: []enc21pb.RepDefLayer{nItem, neList},
			rep: []uint16{1, 0, 1, 1, 1}, def: []uint16{0, 1, 2, 3, 0}, values: `[1, 77, 3]`,
		}}},
		want: []string{`[[1, null], null, [], [3]]`},
		check: func(t *testing.T, got []arrow.Array) {
			l := got[0].(*array.List)
			wantOffsets(t, l.Offsets(), 0, 2, 2, 2, 3)
			wantValidity(t, l, true, false, true, true)
			wantValidity(t, l.ListValues(), true, false, true)
		},
	},
	{
		// Lance's own unraveler would take the first list for one further
		// out (repdef.go, layerInfo.maxLevel); the levels say otherwise.
		name: "all-valid list whose first item is null",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("l", false, m.leaf("item", arrow.PrimitiveTypes.Int32, true))}
		},
		numRows: 3,
		columns: [][]testPage{{{
			rows: 3, layers: []enc21pb.RepDefLayer{nItem, avList},
			rep: []uint16{1, 0, 1, 1}, def: []uint16{1, 0, 0, 1}, values: `[0, 1, 2, 0]`,
		}}},
		want: []string{`[[null, 1], [2], [null]]`},
	},
	{
		name: "nullable struct of nullable ints",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.strct("s", true,
				m.leaf("a", arrow.PrimitiveTypes.Int32, true),
				m.leaf("b", arrow.PrimitiveTypes.Int64, true))}
		},
		numRows: 4,
		columns: [][]testPage{
			{{rows: 4, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0, 2, 1, 0}, values: `[1, 0, 0, 4]`}},
			{{rows: 4, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0, 2, 0, 1}, values: `[2, 0, 3, 0]`}},
		},
		want: []string{`[{"a": 1, "b": 2}, null, {"a": null, "b": 3}, {"a": 4, "b": null}]`},
		check: func(t *testing.T, got []arrow.Array) {
			s := got[0].(*array.Struct)
			wantValidity(t, s, true, false, true, true)
			wantValidity(t, s.Field(0), true, false, false, true)
			wantValidity(t, s.Field(1), true, false, true, false)
		},
	},
	{
		name: "struct<list<int32>>: null struct, null list, empty list",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.strct("s", true, m.list("l", true, m.leaf("item", arrow.PrimitiveTypes.Int32, false)))}
		},
		numRows: 5,
		// item: no levels; list: null 1, empty 2; struct: null 3.
		columns: [][]testPage{{{
			rows: 5, layers: []enc21pb.RepDefLayer{avItem, neList, nItem},
			rep: []uint16{1, 0, 1, 1, 1, 1}, def: []uint16{0, 0, 3, 1, 2, 0}, values: `[1, 2, 3]`,
		}}},
		want: []string{`[{"l": [1, 2]}, null, {"l": null}, {"l": []}, {"l": [3]}]`},
		check: func(t *testing.T, got []arrow.Array) {
			s := got[0].(*array.Struct)
			wantValidity(t, s, true, false, true, true, true)
			l := s.Field(0).(*array.List)
			// The list under the null struct is a null list.
			wantValidity(t, l, true, false, false, true, true)
			wantOffsets(t, l.Offsets(), 0, 2, 2, 2, 2, 3)
		},
	},
	{
		name: "list<struct<k: utf8, v: int32?>>",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("kv", true, m.strct("item", false,
				m.leaf("k", arrow.BinaryTypes.String, false),
				m.leaf("v", arrow.PrimitiveTypes.Int32, true)))}
		},
		numRows: 4,
		columns: [][]testPage{
			// list: null 1, empty 2 (k); v null 1, list null 2, empty 3.
			{{rows: 4, layers: []enc21pb.RepDefLayer{avItem, avItem, neList},
				rep: []uint16{1, 0, 1, 1, 1}, def: []uint16{0, 0, 2, 1, 0}, values: `["a", "b", "c"]`}},
			{{rows: 4, layers: []enc21pb.RepDefLayer{nItem, avItem, neList},
				rep: []uint16{1, 0, 1, 1, 1}, def: []uint16{0, 1, 3, 2, 0}, values: `[1, 0, 3]`}},
		},
		want: []string{`[[{"k": "a", "v": 1}, {"k": "b", "v": null}], [], null, [{"k": "c", "v": 3}]]`},
	},
	{
		name: "list<list<int32>> with empties at both levels",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("ll", false, m.list("item", false, m.leaf("item", arrow.PrimitiveTypes.Int32, false)))}
		},
		numRows: 4,
		// inner empty 1, outer empty 2; rep outer 2, inner 1.
		columns: [][]testPage{{{
			rows: 4, layers: []enc21pb.RepDefLayer{avItem, eList, eList},
			rep: []uint16{2, 0, 1, 2, 2, 2, 1}, def: []uint16{0, 0, 1, 2, 0, 1, 1}, values: `[1, 2, 3]`,
		}}},
		want: []string{`[[[1, 2], []], [], [[3]], [[], []]]`},
		check: func(t *testing.T, got []arrow.Array) {
			outer := got[0].(*array.List)
			wantOffsets(t, outer.Offsets(), 0, 2, 2, 3, 5)
			wantOffsets(t, outer.ListValues().(*array.List).Offsets(), 0, 2, 2, 3, 3, 3)
		},
	},
	{
		name: "list<list<int32?>> with nulls at every level",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("ll", true, m.list("item", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true)))}
		},
		numRows: 4,
		// item null 1; inner null 2, empty 3; outer null 4, empty 5.
		columns: [][]testPage{{{
			rows: 4, layers: []enc21pb.RepDefLayer{nItem, neList, neList},
			rep:    []uint16{2, 0, 1, 1, 2, 2, 2, 1},
			def:    []uint16{0, 1, 2, 3, 4, 5, 0, 0},
			values: `[1, 0, 2, 3]`,
		}}},
		want: []string{`[[[1, null], null, []], null, [], [[2], [3]]]`},
	},
	{
		name: "list<struct?<list<int32>>>: a null struct masks its list",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("o", false, m.strct("item", true, m.list("in", false, m.leaf("item", arrow.PrimitiveTypes.Int32, false))))}
		},
		numRows: 3,
		// inner empty 1; struct null 2; outer empty 3. rep outer 2, inner 1.
		columns: [][]testPage{{{
			rows: 3, layers: []enc21pb.RepDefLayer{avItem, eList, nItem, eList},
			rep:    []uint16{2, 0, 1, 1, 2, 2},
			def:    []uint16{0, 0, 2, 1, 3, 0},
			values: `[1, 2, 4]`,
		}}},
		want: []string{`[[{"in": [1, 2]}, null, {"in": []}], [], [{"in": [4]}]]`},
		check: func(t *testing.T, got []arrow.Array) {
			outer := got[0].(*array.List)
			wantOffsets(t, outer.Offsets(), 0, 3, 3, 4)
			s := outer.ListValues().(*array.Struct)
			wantValidity(t, s, true, false, true, true)
			in := s.Field(0).(*array.List)
			wantValidity(t, in, true, false, true, true)
			wantOffsets(t, in.Offsets(), 0, 2, 2, 2, 3)
		},
	},
	{
		name: "map<utf8, int32?>",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.mapOf("m", true,
				m.leaf("key", arrow.BinaryTypes.String, false),
				m.leaf("value", arrow.PrimitiveTypes.Int32, true))}
		},
		numRows: 4,
		columns: [][]testPage{
			{{rows: 4, layers: []enc21pb.RepDefLayer{avItem, avItem, neList},
				rep: []uint16{1, 0, 1, 1, 1}, def: []uint16{0, 0, 2, 1, 0}, values: `["a", "b", "c"]`}},
			{{rows: 4, layers: []enc21pb.RepDefLayer{nItem, avItem, neList},
				rep: []uint16{1, 0, 1, 1, 1}, def: []uint16{0, 1, 3, 2, 0}, values: `[1, 0, 3]`}},
		},
		want: []string{`[[{"key": "a", "value": 1}, {"key": "b", "value": null}], [], null, [{"key": "c", "value": 3}]]`},
	},
	{
		name: "large_list<utf8?>",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.largeList("l", true, m.leaf("item", arrow.BinaryTypes.String, true))}
		},
		numRows: 3,
		columns: [][]testPage{{{
			rows: 3, layers: []enc21pb.RepDefLayer{nItem, nList},
			rep: []uint16{1, 0, 1, 1}, def: []uint16{0, 1, 2, 0}, values: `["x", "", "z"]`,
		}}},
		want: []string{`[["x", null], null, ["z"]]`},
	},
	{
		name: "nullable fixed-size list leaf",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.leaf("v", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), true)}
		},
		numRows: 3,
		columns: [][]testPage{{{
			rows: 3, layers: []enc21pb.RepDefLayer{nItem}, def: []uint16{0, 1, 0},
			values: `[[1, 2], [0, 0], [3, null]]`,
		}}},
		want: []string{`[[1, 2], null, [3, null]]`},
	},
	{
		name: "leaves with different page boundaries, layers that differ by page",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.strct("s", true,
				m.leaf("a", arrow.PrimitiveTypes.Int32, true),
				m.leaf("b", arrow.BinaryTypes.String, false))}
		},
		numRows: 6,
		columns: [][]testPage{
			{
				{rows: 2, layers: []enc21pb.RepDefLayer{avItem, avItem}, values: `[1, 2]`},
				{rows: 3, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{1, 2, 0}, values: `[0, 0, 5]`},
				{rows: 1, layers: []enc21pb.RepDefLayer{nItem, avItem}, def: []uint16{1}, values: `[0]`},
			},
			{
				{rows: 4, layers: []enc21pb.RepDefLayer{avItem, nItem}, def: []uint16{0, 0, 0, 1}, values: `["a", "b", "c", ""]`},
				{rows: 2, layers: []enc21pb.RepDefLayer{avItem, avItem}, values: `["e", "f"]`},
			},
		},
		want: []string{`[{"a": 1, "b": "a"}, {"a": 2, "b": "b"}, {"a": null, "b": "c"}, null, {"a": 5, "b": "e"}, {"a": null, "b": "f"}]`},
	},
	{
		name: "list leaves with different page boundaries",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("l", true, m.strct("item", false,
				m.leaf("x", arrow.PrimitiveTypes.Int32, false),
				m.leaf("y", arrow.PrimitiveTypes.Int32, false)))}
		},
		numRows: 4,
		columns: [][]testPage{
			{
				{rows: 1, layers: []enc21pb.RepDefLayer{avItem, avItem, nList}, rep: []uint16{1, 0}, def: []uint16{0, 0}, values: `[1, 2]`},
				{rows: 3, layers: []enc21pb.RepDefLayer{avItem, avItem, nList}, rep: []uint16{1, 1, 0, 0, 1}, def: []uint16{1, 0, 0, 0, 0}, values: `[3, 4, 5, 6]`},
			},
			{
				{rows: 3, layers: []enc21pb.RepDefLayer{avItem, avItem, nList}, rep: []uint16{1, 0, 1, 1, 0, 0}, def: []uint16{0, 0, 1, 0, 0, 0}, values: `[10, 20, 30, 40, 50]`},
				{rows: 1, layers: []enc21pb.RepDefLayer{avItem, avItem, avList}, rep: []uint16{1}, values: `[60]`},
			},
		},
		want: []string{`[[{"x": 1, "y": 10}, {"x": 2, "y": 20}], null, [{"x": 3, "y": 30}, {"x": 4, "y": 40}, {"x": 5, "y": 50}], [{"x": 6, "y": 60}]]`},
	},
	{
		name: "pruned struct and a leaf without a column",
		fields: func(m *fieldMaker) []*schema.Field {
			a := m.leaf("a", arrow.PrimitiveTypes.Int32, true)
			m.leaf("b", arrow.PrimitiveTypes.Int32, true) // pruned away
			c := m.leaf("c", arrow.BinaryTypes.String, true)
			added := m.leaf("added", arrow.PrimitiveTypes.Int64, true)
			return []*schema.Field{m.strct("s", true, a, c, added)}
		},
		numRows: 3,
		columns: [][]testPage{
			{{rows: 3, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0, 2, 1}, values: `[1, 0, 0]`}},
			{{rows: 3, layers: []enc21pb.RepDefLayer{avItem, nItem}, def: []uint16{0, 1, 0}, values: `["x", "", "z"]`}},
			nil,
		},
		want: []string{`[{"a": 1, "c": "x", "added": null}, null, {"a": null, "c": "z", "added": null}]`},
	},
	{
		name: "struct whose first leaf has no column",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.strct("s", true,
				m.leaf("added", arrow.PrimitiveTypes.Int64, true),
				m.leaf("b", arrow.PrimitiveTypes.Int32, false))}
		},
		numRows: 2,
		columns: [][]testPage{
			nil,
			{{rows: 2, layers: []enc21pb.RepDefLayer{avItem, nItem}, def: []uint16{1, 0}, values: `[0, 7]`}},
		},
		want: []string{`[null, {"added": null, "b": 7}]`},
	},
	{
		name: "field without any column reads as nulls",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{
				m.leaf("id", arrow.PrimitiveTypes.Int64, false),
				m.list("gone", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true)),
			}
		},
		numRows: 2,
		columns: [][]testPage{
			{{rows: 2, layers: []enc21pb.RepDefLayer{avItem}, values: `[10, 11]`}},
			nil,
		},
		want: []string{`[10, 11]`, `[null, null]`},
	},
	{
		name: "dictionary leaf",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.leaf("d", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, true)}
		},
		numRows: 5,
		columns: [][]testPage{{
			{rows: 3, layers: []enc21pb.RepDefLayer{nItem}, def: []uint16{0, 1, 0}, makeValues: dictValues(`["x", "y"]`, `[1, 0, 0]`)},
			{rows: 2, layers: []enc21pb.RepDefLayer{avItem}, makeValues: dictValues(`["z", "x"]`, `[0, 1]`)},
		}},
		want: []string{`["y", null, "x", "z", "x"]`},
	},
	{
		name: "all-null page with structure, then values",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.list("l", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true))}
		},
		numRows: 5,
		columns: [][]testPage{{
			{rows: 3, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1, 1, 1, 0}, def: []uint16{2, 3, 1, 1}, values: `[0, 0]`},
			{rows: 2, layers: []enc21pb.RepDefLayer{avItem, avList}, rep: []uint16{1, 0, 1}, values: `[7, 8, 9]`},
		}},
		want: []string{`[null, [], [null, null], [7, 8], [9]]`},
	},
	{
		name: "top-level empty struct",
		fields: func(m *fieldMaker) []*schema.Field {
			return []*schema.Field{m.strct("e", true), m.leaf("x", arrow.PrimitiveTypes.Int8, false)}
		},
		numRows: 2,
		columns: [][]testPage{
			{{rows: 2, layers: []enc21pb.RepDefLayer{nItem}, def: []uint16{1, 1}, values: `[]`}},
			{{rows: 2, layers: []enc21pb.RepDefLayer{avItem}, values: `[1, 2]`}},
		},
		want: []string{`[{}, {}]`, `[1, 2]`},
	},
}

// dictValues builds a dictionary array from its dictionary and indices.
func dictValues(dict, indices string) func(mem memory.Allocator) arrow.Array {
	return func(mem memory.Allocator) arrow.Array {
		d, _, err := array.FromJSON(mem, arrow.BinaryTypes.String, strings.NewReader(dict))
		if err != nil {
			panic(err)
		}
		defer d.Release()
		idx, _, err := array.FromJSON(mem, arrow.PrimitiveTypes.Int32, strings.NewReader(indices))
		if err != nil {
			panic(err)
		}
		defer idx.Release()
		return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, idx, d)
	}
}

func wantOffsets[T int32 | int64](t *testing.T, got []T, want ...T) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("offsets %v, want %v", got, want)
	}
}

func wantValidity(t *testing.T, a arrow.Array, want ...bool) {
	t.Helper()
	got := make([]bool, a.Len())
	for i := range got {
		got[i] = a.IsValid(i)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s validity %v, want %v", a.DataType(), got, want)
	}
}

// setup builds the fake file of a case.
func (tc *structuralCase) setup(t *testing.T, mem memory.Allocator) (*fakeFile, []*schema.Field) {
	m := &fieldMaker{}
	fields := tc.fields(m)
	ff := &fakeFile{mem: mem, numRows: tc.numRows, columns: map[int][]testPage{}, leafCol: map[int32]int{}}
	var leaves []*schema.Field
	var walk func(f *schema.Field)
	walk = func(f *schema.Field) {
		if f.IsLeaf() {
			leaves = append(leaves, f)
		}
		for _, c := range f.Children {
			walk(c)
		}
	}
	for _, f := range fields {
		walk(f)
	}
	if len(leaves) != len(tc.columns) {
		t.Fatalf("%d leaves but %d columns", len(leaves), len(tc.columns))
	}
	for i, l := range leaves {
		if tc.columns[i] != nil {
			ff.leafCol[l.ID] = i
			ff.columns[i] = tc.columns[i]
		}
	}
	return ff, fields
}

func TestStructuralCases(t *testing.T) {
	for _, tc := range structuralCases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ff, fields := tc.setup(t, mem)

			want := make([][]string, len(fields))
			for i, f := range fields {
				wt := f.ScanType()
				if dt, ok := wt.(*arrow.DictionaryType); ok {
					wt = dt.ValueType // rowjson prints dictionary values decoded
				}
				w, _, err := array.FromJSON(mem, wt, strings.NewReader(tc.want[i]))
				if err != nil {
					t.Fatalf("want %d: %v", i, err)
				}
				want[i] = formattest.RowsJSON(t, w)
				w.Release()
			}

			c := ff.cursor(t, fields)
			defer c.Release()
			got, err := c.ReadRange(context.Background(), 0, tc.numRows)
			if err != nil {
				t.Fatalf("readRange: %v", err)
			}
			for i, a := range got {
				if !arrow.TypeEqual(a.DataType(), fields[i].ScanType()) {
					t.Errorf("field %d: type %s, want %s", i, a.DataType(), fields[i].ScanType())
				}
				formattest.CheckArray(t, fields[i].Name, a)
				if g := formattest.RowsJSON(t, a); fmt.Sprint(g) != fmt.Sprint(want[i]) {
					t.Errorf("field %d rows\n got %v\nwant %v", i, g, want[i])
				}
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			fileio.ReleaseAll(got)

			// Every range, with a fresh cursor and with one reused in
			// increasing order, reads the matching rows.
			for a := uint64(0); a <= tc.numRows; a++ {
				for b := a; b <= tc.numRows; b++ {
					checkRange(t, ff, fields, nil, a, b, want)
					checkRange(t, ff, fields, c, a, b, want)
				}
			}
		})
	}
}

func checkRange(t *testing.T, ff *fakeFile, fields []*schema.Field, c *cursor, a, b uint64, want [][]string) {
	t.Helper()
	if c == nil {
		c = ff.cursor(t, fields)
		defer c.Release()
	}
	got, err := c.ReadRange(context.Background(), a, b)
	if err != nil {
		t.Fatalf("readRange(%d, %d): %v", a, b, err)
	}
	defer fileio.ReleaseAll(got)
	for i, arr := range got {
		formattest.CheckArray(t, fields[i].Name, arr)
		if g := formattest.RowsJSON(t, arr); fmt.Sprint(g) != fmt.Sprint(want[i][a:b]) {
			t.Errorf("field %d rows [%d, %d)\n got %v\nwant %v", i, a, b, g, want[i][a:b])
		}
	}
}

// TestStructuralPageCache checks that a front-to-back scan in batches
// decodes each page once and holds at most one page per leaf between reads.
func TestStructuralPageCache(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := &fieldMaker{}
	f := m.list("l", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true))
	// 10 pages of 10 rows; row r is [r, null] for even r, null for odd.
	var pages []testPage
	for p := 0; p < 10; p++ {
		tp := testPage{rows: 10, layers: []enc21pb.RepDefLayer{nItem, nList}}
		var vals []string
		for r := p * 10; r < p*10+10; r++ {
			if r%2 == 0 {
				tp.rep = append(tp.rep, 1, 0)
				tp.def = append(tp.def, 0, 1)
				vals = append(vals, fmt.Sprint(r), "0")
			} else {
				tp.rep = append(tp.rep, 1)
				tp.def = append(tp.def, 2)
			}
		}
		tp.values = "[" + strings.Join(vals, ",") + "]"
		pages = append(pages, tp)
	}
	ff := &fakeFile{mem: mem, numRows: 100, columns: map[int][]testPage{0: pages}, leafCol: map[int32]int{f.Children[0].ID: 0}}
	c := ff.cursor(t, []*schema.Field{f})
	defer c.Release()
	for start := uint64(0); start < 100; start += 7 {
		end := min(start+7, 100)
		got, err := c.ReadRange(context.Background(), start, end)
		if err != nil {
			t.Fatal(err)
		}
		for i, row := range formattest.RowsJSON(t, got[0]) {
			r := int(start) + i
			want := "null"
			if r%2 == 0 {
				want = fmt.Sprintf("[%d,null]", r)
			}
			if row != want {
				t.Errorf("row %d = %s, want %s", r, row, want)
			}
		}
		fileio.ReleaseAll(got)
		if n := len(c.Leaves[0].Cache); n > 1 {
			t.Errorf("after [%d, %d): %d pages cached", start, end, n)
		}
	}
	if n := ff.decodes.Load(); n != 10 {
		t.Errorf("%d page decodes for 10 pages", n)
	}
}

// TestStructuralCorrupt feeds levels that contradict each other or the
// schema; each must fail with ErrCorrupt, never panic.
func TestStructuralCorrupt(t *testing.T) {
	listOfInt := func(m *fieldMaker) []*schema.Field {
		return []*schema.Field{m.list("l", true, m.leaf("item", arrow.PrimitiveTypes.Int32, true))}
	}
	structOfInt := func(m *fieldMaker) []*schema.Field {
		return []*schema.Field{m.strct("s", true, m.leaf("a", arrow.PrimitiveTypes.Int32, true), m.leaf("b", arrow.PrimitiveTypes.Int32, true))}
	}
	cases := []struct {
		name    string
		fields  func(m *fieldMaker) []*schema.Field
		numRows uint64
		columns [][]testPage
	}{
		{"rep above the list layers", listOfInt, 1, [][]testPage{{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{2}, def: []uint16{0}, values: `[1]`}}}},
		{"first item does not start a row", listOfInt, 1, [][]testPage{{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{0, 1}, def: []uint16{0, 0}, values: `[1, 2]`}}}},
		{"def above the layers", listOfInt, 1, [][]testPage{{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1}, def: []uint16{4}, values: `[]`}}}},
		{"continuation of a null list", listOfInt, 1, [][]testPage{{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1, 0}, def: []uint16{2, 2}, values: `[]`}}}},
		{"rows disagree with the page", listOfInt, 2, [][]testPage{{{rows: 2, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1, 0}, def: []uint16{0, 0}, values: `[1, 2]`}}}},
		{"values disagree with visible items", listOfInt, 1, [][]testPage{{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1, 0}, def: []uint16{0, 0}, values: `[1]`}}}},
		{"list layer where the schema has a struct", structOfInt, 1, [][]testPage{
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, neList}, rep: []uint16{1}, def: []uint16{0}, values: `[1]`}},
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0}, values: `[1]`}},
		}},
		{"too few layers", structOfInt, 1, [][]testPage{
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem}, def: []uint16{0}, values: `[1]`}},
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0}, values: `[1]`}},
		}},
		{"unknown layer", structOfInt, 1, [][]testPage{
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, 42}, def: []uint16{0}, values: `[1]`}},
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0}, values: `[1]`}},
		}},
		{"pages hold fewer rows than the file", structOfInt, 3, [][]testPage{
			{{rows: 1, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0}, values: `[1]`}},
			{{rows: 3, layers: []enc21pb.RepDefLayer{nItem, nItem}, def: []uint16{0, 0, 0}, values: `[1, 2, 3]`}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			sc := structuralCase{fields: tc.fields, numRows: tc.numRows, columns: tc.columns}
			ff, fields := sc.setup(t, mem)
			proj := fileio.Projection{Fields: fields, Column: func(id int32) (int, bool) { c, ok := ff.leafCol[id]; return c, ok }}
			c, err := buildCursor("bad.lance", ff.numRows, mem, proj, ff.pageRows, ff.decode)
			if err == nil {
				var got []arrow.Array
				got, err = c.ReadRange(context.Background(), 0, tc.numRows)
				fileio.ReleaseAll(got)
				c.Release()
			}
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), "bad.lance") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}
