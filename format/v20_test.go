package format

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// The 2.0 fixtures: datasets written by Lance 12 with storage version 2.0.
var v20Fixtures = []string{"types_v2_0", "history_v2_0", "overwrite_v2_0", "blob_legacy_v2_0", "deletions_v2_0"}

// v20OpenPath opens a 2.0 data file on disk.
func v20OpenPath(t testing.TB, path string, mem memory.Allocator) *Reader {
	t.Helper()
	r := openFixtureFile(t, path, mem)
	if r.Version() != Version2_0 {
		t.Fatalf("%s: version %s, want 2.0", path, r.Version())
	}
	return r
}

// v20Record reads rows [a, b) of fields with a new cursor.
func v20Record(t testing.TB, r *Reader, fields []*schema.Field, a, b uint64) arrow.RecordBatch {
	t.Helper()
	cur, err := r.NewCursor(r.FileProjection(fields))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	return v20MakeRecord(t, fields, arrs, int64(b-a))
}

// v20MakeRecord wraps the arrays of one read, checking their types and
// lengths, and releases them.
func v20MakeRecord(t testing.TB, fields []*schema.Field, arrs []arrow.Array, rows int64) arrow.RecordBatch {
	t.Helper()
	defer fileio.ReleaseAll(arrs)
	afs := make([]arrow.Field, len(fields))
	for i, f := range fields {
		afs[i] = f.ArrowField()
		if !arrow.TypeEqual(arrs[i].DataType(), f.ScanType()) {
			t.Fatalf("field %q: read %s, want %s", f.Name, arrs[i].DataType(), f.ScanType())
		}
		if int64(arrs[i].Len()) != rows {
			t.Fatalf("field %q: read %d values, want %d", f.Name, arrs[i].Len(), rows)
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(afs, nil), arrs, rows)
}

// v20Cells prints every value of every column of rec (column-major), for
// comparing reads of the same rows.
func v20Cells(t testing.TB, rec arrow.RecordBatch) [][]string {
	t.Helper()
	out := make([][]string, rec.NumCols())
	for c, col := range rec.Columns() {
		for i := range col.Len() {
			b, err := rowjson.AppendValue(nil, col, i)
			if err != nil {
				t.Fatalf("column %d row %d: %v", c, i, err)
			}
			out[c] = append(out[c], string(b))
		}
	}
	return out
}

// TestV20Ranges reads every 2.0 fixture file in pieces — every [a, b) of
// small files, batches of 7 rows through one cursor, and unsorted takes with
// duplicates — and checks each piece against the same rows of a full read.
func TestV20Ranges(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 0))
	for _, name := range v20Fixtures {
		for _, path := range fixturetest.DataFiles(t, name) {
			t.Run(name+"/"+filepath.Base(path)[:8], func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				r := v20OpenPath(t, path, mem)
				v20CheckRanges(t, r, r.Schema().Fields, rng)
			})
		}
	}
}

// v20CheckRanges compares piecewise reads of r with a full read.
func v20CheckRanges(t *testing.T, r *Reader, fields []*schema.Field, rng *rand.Rand) {
	t.Helper()
	n := r.NumRows()
	full := v20Record(t, r, fields, 0, n)
	want := v20Cells(t, full)
	full.Release()
	check := func(what string, rec arrow.RecordBatch, rows []uint64) {
		t.Helper()
		got := v20Cells(t, rec)
		rec.Release()
		for c := range want {
			for i, row := range rows {
				if got[c][i] != want[c][row] {
					t.Fatalf("%s: field %q row %d: got %s, want %s", what, fields[c].Name, row, got[c][i], want[c][row])
				}
			}
		}
	}
	span := func(a, b uint64) []uint64 {
		var rows []uint64
		for i := a; i < b; i++ {
			rows = append(rows, i)
		}
		return rows
	}
	if n <= 24 {
		for a := uint64(0); a <= n; a++ {
			for b := a; b <= n; b++ {
				check(fmt.Sprintf("[%d, %d)", a, b), v20Record(t, r, fields, a, b), span(a, b))
			}
		}
	} else {
		for range 50 {
			a := rng.Uint64N(n + 1)
			b := a + rng.Uint64N(n-a+1)
			check(fmt.Sprintf("[%d, %d)", a, b), v20Record(t, r, fields, a, b), span(a, b))
		}
	}
	cur, err := r.NewCursor(r.FileProjection(fields))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	ctx := context.Background()
	for a := uint64(0); a < n; a += 7 {
		b := min(a+7, n)
		arrs, err := cur.ReadRange(ctx, a, b)
		if err != nil {
			t.Fatalf("batch [%d, %d): %v", a, b, err)
		}
		check(fmt.Sprintf("batch [%d, %d)", a, b), v20MakeRecord(t, fields, arrs, int64(b-a)), span(a, b))
	}
	if n == 0 {
		return
	}
	for range 5 {
		rows := make([]uint64, 1+rng.IntN(12))
		for i := range rows {
			rows[i] = rng.Uint64N(n)
		}
		rows = append(rows, rows[0]) // a duplicate
		arrs, err := cur.Take(ctx, rows)
		if err != nil {
			t.Fatalf("take %v: %v", rows, err)
		}
		check(fmt.Sprintf("take %v", rows), v20MakeRecord(t, fields, arrs, int64(len(rows))), rows)
	}
}

// TestV20Projection reads pruned structs and single members of the types
// fixture and compares them with the full read.
func TestV20Projection(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := v20OpenPath(t, fixturetest.DataFiles(t, "types_v2_0")[0], mem)
	for _, paths := range [][]string{
		{"nested_nn.inner.ys", "id"},
		{"nested_nn.kv", "struct_nn.b"},
		{"dict_utf8", "list_utf8", "emb8"},
		{"nested_nn.name", "nested_nn.inner.x"},
	} {
		s, err := r.Schema().Project(paths)
		if err != nil {
			t.Fatal(err)
		}
		rec := v20Record(t, r, s.Fields, 0, r.NumRows())
		got := fixturetest.EncodeRows(t, rec)
		rec.Release()
		full := v20Record(t, r, r.Schema().Fields, 0, r.NumRows())
		var want [][]byte
		for i := range int(full.NumRows()) {
			row, err := rowjson.AppendRow(nil, full, i)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, v20ProjectRow(t, row, paths))
		}
		full.Release()
		fixturetest.CompareRows(t, strings.Join(paths, ","), got, want, fixturetest.CompareOptions{})
	}
}

// v20ProjectRow keeps the members of a JSON row that paths select, with
// Schema.Project's ordering: top-level fields in order of first mention.
func v20ProjectRow(t testing.TB, row []byte, paths []string) []byte {
	t.Helper()
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber() // int64 values beyond 2^53 stay exact
	if err := dec.Decode(&obj); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, p := range paths {
		parts := strings.Split(p, ".")
		src, dst := obj, out
		for i, part := range parts {
			if i == len(parts)-1 {
				dst[part] = src[part]
				break
			}
			next, _ := dst[part].(map[string]any)
			if next == nil {
				next = map[string]any{}
				dst[part] = next
			}
			src, _ = src[part].(map[string]any)
			dst = next
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestV20MissingColumns reads fields that have no column in the file (a
// column added to the dataset later): nulls of the field's type.
func TestV20MissingColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := v20OpenPath(t, fixturetest.DataFiles(t, "types_v2_0")[0], mem)
	s, err := r.Schema().Project([]string{"id", "nested_nn", "list_i32", "dict_utf8"})
	if err != nil {
		t.Fatal(err)
	}
	cols := r.defaultColumns()
	proj := Projection{Fields: s.Fields, Column: func(id int32) (int, bool) {
		switch id {
		case 0, 32, 34: // id, nested_nn.name and nested_nn.inner.x keep their columns
			return cols[id], true
		}
		return 0, false
	}}
	cur, err := r.NewCursor(proj)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	rec := v20MakeRecord(t, s.Fields, arrs, 7)
	defer rec.Release()
	if got := rec.Column(2).NullN(); got != 7 {
		t.Errorf("list_i32 without a column: %d nulls, want 7", got)
	}
	if got := rec.Column(3).NullN(); got != 7 {
		t.Errorf("dict_utf8 without a column: %d nulls, want 7", got)
	}
	nested := rec.Column(1).(*array.Struct)
	if nested.NullN() != 0 || nested.Field(0).NullN() == 7 {
		t.Errorf("nested_nn with a member column: %d nulls, name %d nulls; want a valid struct with names", nested.NullN(), nested.Field(0).NullN())
	}
	kv := nested.Field(2)
	if kv.NullN() != 7 {
		t.Errorf("nested_nn.kv without a column: %d nulls, want 7", kv.NullN())
	}
	full := v20Record(t, r, r.Schema().Fields, 3, 10)
	defer full.Release()
	if !array.Equal(rec.Column(0), full.Column(0)) {
		t.Errorf("id: got %v, want %v", rec.Column(0), full.Column(0))
	}
}

// TestV20Errors checks requests outside the file and the error kinds of
// fields the 2.0 reader cannot read.
func TestV20Errors(t *testing.T) {
	r := v20OpenPath(t, fixturetest.DataFiles(t, "types_v2_0")[0], memory.DefaultAllocator)
	cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if _, err := cur.ReadRange(context.Background(), 5, 101); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("range past the end: %v, want ErrInvalidArgument", err)
	}
	bad := Projection{Fields: r.Schema().Fields[:1], Column: func(int32) (int, bool) { return 99, true }}
	if _, err := r.NewCursor(bad); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), r.Key()) {
		t.Errorf("column past the file's columns: %v, want ErrCorrupt naming the file", err)
	}
	wrongSpace := Projection{Fields: r.Schema().Fields[24:25], Column: func(id int32) (int, bool) {
		return map[int32]int{24: 24, 25: 0}[id], true // list items in the id column (100 values, not 191)
	}}
	if _, err := r.NewCursor(wrongSpace); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("list items in a column of the wrong length: %v, want ErrCorrupt", err)
	}
}
