package structural

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// decodeColumnPages decodes every page of a column, failing the test on
// error. The caller releases the pages.
func decodeColumnPages(t testing.TB, r *fixtureFile, col int, leaf *schema.Field) []*leafPage {
	t.Helper()
	var pages []*leafPage
	for p := range r.f.Columns[col].GetPages() {
		lp, err := r.st.decodeLeafPage(context.Background(), col, p, leaf)
		if err != nil {
			for _, q := range pages {
				q.Release()
			}
			t.Fatalf("%s column %d (%s) page %d: %v", r.f.Key, col, leaf.Name, p, err)
		}
		pages = append(pages, lp)
	}
	return pages
}

func releasePages(pages []*leafPage) {
	for _, p := range pages {
		p.Release()
	}
}

// TestDecodeLeafPageAllFixtures decodes every page of every column of every
// 2.1, 2.2 and 2.3 data file of the fixtures. decodeLeafPage itself checks
// that levels, visible items, values and rows agree; this also checks that
// a column's pages add up to the file's rows and that values have the scan
// type.
func TestDecodeLeafPageAllFixtures(t *testing.T) {
	files := structuralDataFiles(t,
		"lance/*.lance/data/*.lance", "lance/*.lance/tree/*/data/*.lance", "encodings/*.lance/data/*.lance")
	decoded := 0
	for _, path := range files {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		r := openFixtureFile(t, path, mem)
		if !r.f.Version.Structural() {
			continue
		}
		rel, _ := filepath.Rel(fixturetest.Dir(t), path)
		t.Run(rel, func(t *testing.T) {
			defer mem.AssertSize(t, 0)
			leaves := leafColumns(r)
			if len(leaves) != len(r.f.Columns) {
				t.Fatalf("%d leaves for %d columns", len(leaves), len(r.f.Columns))
			}
			for col := range r.f.Columns {
				leaf := leaves[col]
				pages := decodeColumnPages(t, r, col, leaf.Field)
				rows := uint64(0)
				for p, lp := range pages {
					rows += lp.numRows
					if !arrow.TypeEqual(lp.values.DataType(), leaf.ScanType()) {
						t.Errorf("column %d (%s) page %d: values are %s, want %s", col, leaf.Name, p, lp.values.DataType(), leaf.ScanType())
					}
					decoded++
				}
				releasePages(pages)
				if rows != r.f.NumRows {
					t.Errorf("column %d (%s): pages hold %d rows, the file %d", col, leaf.Name, rows, r.f.NumRows)
				}
			}
		})
	}
	if decoded == 0 {
		t.Fatal("no 2.1+ pages decoded")
	}
}

// flatColumnJSON renders a leaf column without repetition levels as one JSON
// value per row: value i of row i, null when its def level is not 0.
func flatColumnJSON(t testing.TB, pages []*leafPage) [][]byte {
	t.Helper()
	var out [][]byte
	for p, lp := range pages {
		if lp.rep != nil {
			t.Fatalf("page %d has repetition levels", p)
		}
		for i := range lp.numItems {
			if lp.def != nil && lp.def[i] != 0 {
				out = append(out, []byte("null"))
				continue
			}
			v, err := rowjson.AppendValue(nil, lp.values, i)
			if err != nil {
				t.Fatalf("page %d item %d: %v", p, i, err)
			}
			out = append(out, v)
		}
	}
	return out
}

// jsonAt returns the member at path of a JSON row, or null when it or an
// enclosing object is null.
func jsonAt(t testing.TB, row json.RawMessage, path []string) []byte {
	cur := row
	for _, name := range path {
		if bytes.Equal(bytes.TrimSpace(cur), []byte("null")) {
			return []byte("null")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			t.Fatalf("member %q of %s: %v", name, clip(cur), err)
		}
		v, ok := obj[name]
		if !ok {
			t.Fatalf("no member %q in %s", name, clip(cur))
		}
		cur = v
	}
	return cur
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// wrapValues makes one-member rows {"v": value} for CompareRows.
func wrapValues(values [][]byte) [][]byte {
	out := make([][]byte, len(values))
	for i, v := range values {
		out[i] = append(append([]byte(`{"v":`), v...), '}')
	}
	return out
}

// compareFlatColumns compares every leaf column without repetition levels of
// the file at path with the expected rows (want(i) is row i of the file) and
// returns the number of columns compared. Each row is compared as an object
// of those columns, named by their dotted paths.
func compareFlatColumns(t *testing.T, path string, want func(i int) json.RawMessage, wantRows int) int {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := openFixtureFile(t, path, mem)
	if int(r.f.NumRows) != wantRows {
		t.Fatalf("%s: %d rows, want %d", path, r.f.NumRows, wantRows)
	}
	leaves := leafColumns(r)
	var (
		paths [][]string
		got   [][][]byte
	)
	for col := range len(r.f.Columns) {
		leaf := leaves[col]
		if leaf.underList {
			continue
		}
		pages := decodeColumnPages(t, r, col, leaf.Field)
		values := flatColumnJSON(t, pages)
		releasePages(pages)
		if len(values) != wantRows {
			t.Fatalf("%s: %d values for %d rows", strings.Join(leaf.path, "."), len(values), wantRows)
		}
		paths = append(paths, leaf.path)
		got = append(got, values)
	}
	name := filepath.Base(filepath.Dir(filepath.Dir(path)))
	c := fixturetest.NewRowChecker(t, name+" "+filepath.Base(path), fixturetest.CompareOptions{})
	var gotRow, wantRow []byte
	for i := range wantRows {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(want(i), &top); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		gotRow, wantRow = append(gotRow[:0], '{'), append(wantRow[:0], '{')
		for k, p := range paths {
			if k > 0 {
				gotRow, wantRow = append(gotRow, ','), append(wantRow, ',')
			}
			key := strconv.Quote(strings.Join(p, "."))
			gotRow = append(append(append(gotRow, key...), ':'), got[k][i]...)
			v, ok := top[p[0]]
			if !ok {
				t.Fatalf("row %d has no column %q", i, p[0])
			}
			wantRow = append(append(append(wantRow, key...), ':'), jsonAt(t, v, p[1:])...)
		}
		c.Check(i, append(gotRow, '}'), append(wantRow, '}'))
	}
	c.Finish(wantRows, wantRows)
	return len(paths)
}

// TestDecodeLeafPageValuesLance compares the flat columns of single-file
// fixtures with what real Lance read back.
func TestDecodeLeafPageValuesLance(t *testing.T) {
	for _, name := range []string{"types_v2_1", "types_v2_2", "types_v2_3", "blob_legacy_v2_1", "blob_v2_v2_2", "blob_v2_v2_3"} {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			files := structuralDataFiles(t, "lance/"+name+".lance/data/*.lance")
			if len(files) != 1 {
				t.Fatalf("%d data files, want 1", len(files))
			}
			n := compareFlatColumns(t, files[0], func(i int) json.RawMessage { return exp.Rows[i] }, len(exp.Rows))
			if n < 2 {
				t.Errorf("only %d columns compared", n)
			}
		})
	}
}

// TestDecodeLeafPageValuesEncodings compares the flat columns of the
// encodings fixtures, where Lance used its compressive encodings, with the
// rows Lance read back.
func TestDecodeLeafPageValuesEncodings(t *testing.T) {
	for _, name := range []string{"strs_2_1", "strs_2_2", "wide_2_1", "wide_2_2"} {
		t.Run(name, func(t *testing.T) {
			rows := fixturetest.EncodingRows(t, name)
			files := structuralDataFiles(t, "encodings/"+name+".lance/data/*.lance")
			if len(files) != 1 {
				t.Fatalf("%d data files, want 1", len(files))
			}
			n := compareFlatColumns(t, files[0], func(i int) json.RawMessage { return rows[i] }, len(rows))
			if n < 5 {
				t.Errorf("only %d columns compared", n)
			}
		})
	}
	for _, name := range []string{"pages_2_1", "pages_2_2", "mpage_2_1", "mpage_2_2"} {
		t.Run(name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("large fixture")
			}
			files := structuralDataFiles(t, "encodings/"+name+".lance/data/*.lance")
			total := 0
			for _, path := range files {
				// The formula is by dataset row; a file starts at the row
				// its first id says.
				first := firstID(t, path)
				mem := memory.NewGoAllocator()
				r := openFixtureFile(t, path, mem)
				total += int(r.f.NumRows)
				compareFlatColumns(t, path, func(i int) json.RawMessage {
					return fixturetest.FormulaRow(name, first+i)
				}, int(r.f.NumRows))
			}
			if want, _ := fixturetest.FormulaRowCount(name); total != want {
				t.Errorf("files hold %d rows, want %d", total, want)
			}
		})
	}
}

// firstID returns the id of the first row of a data file.
func firstID(t *testing.T, path string) int {
	t.Helper()
	r := openFixtureFile(t, path, memory.NewGoAllocator())
	for col, leaf := range leafColumns(r) {
		if leaf.Name != "id" {
			continue
		}
		lp, err := r.st.decodeLeafPage(context.Background(), col, 0, leaf.Field)
		if err != nil {
			t.Fatal(err)
		}
		defer lp.Release()
		v, err := rowjson.AppendValue(nil, lp.values, 0)
		if err != nil {
			t.Fatal(err)
		}
		var id int
		if err := json.Unmarshal(v, &id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	t.Fatalf("%s has no id column", path)
	return 0
}

// listColumnJSON rebuilds a leaf column under exactly one list layer
// (layers [item, list]) as one JSON list per row, from its levels: the
// test's own small version of the structural assembly.
func listColumnJSON(t testing.TB, pages []*leafPage) [][]byte {
	t.Helper()
	var out [][]byte
	for p, lp := range pages {
		if len(lp.layers) != 2 || lp.rep == nil {
			t.Fatalf("page %d: layers %v, rep %v: not a single list", p, lp.layers, lp.rep != nil)
		}
		itemNull := uint16(0)
		if lp.layers[0] == enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM {
			itemNull = 1
		}
		// The list layer's levels follow the item's.
		nullList, emptyList := uint16(0), uint16(0)
		next := itemNull + 1
		switch lp.layers[1] {
		case enc21pb.RepDefLayer_REPDEF_NULLABLE_LIST:
			nullList = next
		case enc21pb.RepDefLayer_REPDEF_EMPTYABLE_LIST:
			emptyList = next
		case enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST:
			nullList, emptyList = next, next+1
		}
		var row []byte
		nullRow := false
		value := 0
		flush := func() {
			if row != nil {
				if !nullRow {
					row = append(row, ']')
				}
				out = append(out, row)
			}
		}
		for i := range lp.numItems {
			def := uint16(0)
			if lp.def != nil {
				def = lp.def[i]
			}
			if lp.rep[i] == 1 {
				flush()
				nullRow = false
				switch {
				case nullList != 0 && def == nullList:
					row, nullRow = []byte("null"), true
					continue
				case emptyList != 0 && def == emptyList:
					row = []byte("[")
					continue
				}
				row = []byte("[")
			} else {
				row = append(row, ',')
			}
			if itemNull != 0 && def == itemNull {
				row = append(row, "null"...)
			} else {
				v, err := rowjson.AppendValue(nil, lp.values, value)
				if err != nil {
					t.Fatalf("page %d value %d: %v", p, value, err)
				}
				row = append(row, v...)
			}
			value++
		}
		flush()
		if value != lp.values.Len() {
			t.Fatalf("page %d: %d values used of %d", p, value, lp.values.Len())
		}
	}
	return out
}

// TestDecodeLeafPageListLevels checks the repetition and definition levels
// of list columns by rebuilding the lists from them and comparing with the
// rows Lance read back (null lists, empty lists, null items; mini-block,
// full-zip and constant pages).
func TestDecodeLeafPageListLevels(t *testing.T) {
	cases := []struct {
		fixture string // "lance/<name>" or "encodings/<name>"
		columns []string
	}{
		{"lance/types_v2_1", []string{"list_utf8", "list_i32"}},
		{"lance/types_v2_2", []string{"list_utf8", "list_i32"}},
		{"encodings/strs_2_1", []string{"lst", "lst_allnull", "lst_const"}},
		{"encodings/strs_2_2", []string{"lst", "lst_allnull", "lst_const"}},
		{"encodings/wide_2_1", []string{"lbin"}},
		{"encodings/wide_2_2", []string{"lbin"}},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			dir, name := filepath.Split(tc.fixture)
			var rows []json.RawMessage
			if dir == "lance/" {
				rows = fixturetest.LoadExpected(t, name).Rows
			} else {
				rows = fixturetest.EncodingRows(t, name)
			}
			files := structuralDataFiles(t, tc.fixture+".lance/data/*.lance")
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openFixtureFile(t, files[0], mem)
			found := 0
			for col, leaf := range leafColumns(r) {
				if !slices.Contains(tc.columns, leaf.path[0]) {
					continue
				}
				found++
				pages := decodeColumnPages(t, r, col, leaf.Field)
				got := listColumnJSON(t, pages)
				releasePages(pages)
				want := make([][]byte, len(rows))
				for i := range rows {
					want[i] = jsonAt(t, rows[i], leaf.path[:1])
				}
				fixturetest.CompareRows(t, name+" "+leaf.path[0], wrapValues(got), wrapValues(want), fixturetest.CompareOptions{})
			}
			if found != len(tc.columns) {
				t.Errorf("found %d of the columns %v", found, tc.columns)
			}
		})
	}
}

// TestDecodeLeafPageErrors checks that bad arguments and broken metadata
// give categorised errors naming the file, column and page.
func TestDecodeLeafPageErrors(t *testing.T) {
	files := structuralDataFiles(t, "lance/types_v2_2.lance/data/*.lance")
	r := openFixtureFile(t, files[0], memory.NewGoAllocator())
	leaves := leafColumns(r)
	ctx := context.Background()
	_, err := r.st.decodeLeafPage(ctx, len(r.f.Columns), 0, leaves[0].Field)
	if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), r.f.Key) {
		t.Errorf("column out of range: %v", err)
	}
	_, err = r.st.decodeLeafPage(ctx, 0, 5, leaves[0].Field)
	if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "column 0 page 5") {
		t.Errorf("page out of range: %v", err)
	}
}

// TestDecodeLeafPageCorruptFile damages page bytes inside real data files
// and checks that decoding reports corruption naming the file, column and
// page.
func TestDecodeLeafPageCorruptFile(t *testing.T) {
	cases := []struct {
		name    string
		dataset string
		column  string
		// damage changes the bytes of the page's buffers in the file.
		damage func(file []byte, offsets, sizes []uint64)
	}{
		{"mini-block chunk word past the chunks", "lance/types_v2_2", "i64", func(file []byte, offsets, sizes []uint64) {
			binary.LittleEndian.PutUint32(file[offsets[0]:], 0xFFFFFFF0)
		}},
		{"mini-block chunk header past the chunk", "lance/types_v2_1", "utf8", func(file []byte, offsets, sizes []uint64) {
			binary.LittleEndian.PutUint16(file[offsets[1]+4:], 0xFFFF) // value buffer size
		}},
		{"full-zip length past the buffer", "encodings/wide_2_2", "txt", func(file []byte, offsets, sizes []uint64) {
			// The first row is null (a lone control byte); the second
			// row's length follows its control byte.
			binary.LittleEndian.PutUint32(file[offsets[0]+2:], 0x7FFFFFFF)
		}},
		{"constant page scalar buffer", "encodings/strs_2_2", "const_s", func(file []byte, offsets, sizes []uint64) {
			binary.LittleEndian.PutUint32(file[offsets[0]:], 1000)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := structuralDataFiles(t, tc.dataset+".lance/data/*.lance")[0]
			r := openFixtureFile(t, path, memory.NewGoAllocator())
			col, leaf := -1, leafField{}
			for c, l := range leafColumns(r) {
				if l.Name == tc.column {
					col, leaf = c, l
				}
			}
			if col < 0 {
				t.Fatalf("no column %q", tc.column)
			}
			page := r.f.Columns[col].GetPages()[0]
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(file, page.GetBufferOffsets(), page.GetBufferSizes())
			store := blob.NewMemStore("corrupt")
			if err := store.Write(context.Background(), "bad.lance", file); err != nil {
				t.Fatal(err)
			}
			bad, tail, err := fileio.Open(context.Background(), store, "bad.lance", 0, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			if err := bad.OpenV2(context.Background(), tail); err != nil {
				t.Fatal(err)
			}
			lp, err := (&Reader{File: bad}).decodeLeafPage(context.Background(), col, 0, leaf.Field)
			if !errors.Is(err, lancer.ErrCorrupt) {
				lp.Release()
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if want := fmt.Sprintf("bad.lance: column %d page 0:", col); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		})
	}
}
