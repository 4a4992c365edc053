package format

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
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

// structuralFile is one 2.1+ data file of the fixtures.
type structuralFile struct {
	fixture string // "types_v2_2", or "encodings/strs_2_2"
	dir     string // the data directory
	name    string // file name in dir
}

// structuralFixtureFiles lists every 2.1+ data file of the fixtures.
func structuralFixtureFiles(t testing.TB) []structuralFile {
	t.Helper()
	var out []structuralFile
	for _, f := range fixturetest.StructuralFiles(t) {
		out = append(out, structuralFile{fixture: f.Fixture, dir: f.Dir, name: f.Name})
	}
	return out
}

// openStructural opens a fixture data file with allocator mem.
func openStructural(t testing.TB, f structuralFile, mem memory.Allocator) *Reader {
	t.Helper()
	st, err := blob.NewLocalStore(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), st, f.name, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("%s/%s: %v", f.fixture, f.name, err)
	}
	return r
}

// readAllStructural reads every row of every field of r's schema.
func readAllStructural(t testing.TB, r *Reader) []arrow.Array {
	t.Helper()
	arrs, err := r.readRange(context.Background(), r.FileProjection(r.Schema().Fields), 0, r.NumRows())
	if err != nil {
		t.Fatalf("%s: read all rows: %v", r.Key(), err)
	}
	return arrs
}

// structuralRecord wraps arrays of r's schema as a record batch.
func structuralRecord(r *Reader, arrs []arrow.Array, rows int64) arrow.RecordBatch {
	return array.NewRecordBatch(r.Schema().Arrow(), arrs, rows)
}

// TestStructuralFixturesReadAll reads every 2.1+ fixture data file whole,
// checks the arrays' invariants, and that every field has all rows.
func TestStructuralFixturesReadAll(t *testing.T) {
	for _, f := range structuralFixtureFiles(t) {
		t.Run(f.fixture+"/"+f.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, f, mem)
			if !r.Version().structural() {
				t.Skipf("file version %s", r.Version())
			}
			arrs := readAllStructural(t, r)
			defer fileio.ReleaseAll(arrs)
			for i, a := range arrs {
				fld := r.Schema().Fields[i]
				if a.Len() != int(r.NumRows()) {
					t.Errorf("field %q: %d rows, want %d", fld.Name, a.Len(), r.NumRows())
				}
				if !arrow.TypeEqual(a.DataType(), fld.ScanType()) {
					t.Errorf("field %q: type %s, want %s", fld.Name, a.DataType(), fld.ScanType())
				}
				formattest.CheckArray(t, fld.Name, a)
			}
		})
	}
}

// TestStructuralFixturesRows compares whole data files with the rows real
// Lance read back: the types_* files (each is the single fragment of its
// dataset) and the encodings datasets.
func TestStructuralFixturesRows(t *testing.T) {
	for _, f := range structuralFixtureFiles(t) {
		name := strings.TrimPrefix(f.fixture, "encodings/")
		var want func() ([][]byte, int) // rows, and the first row id of this file
		switch {
		case strings.HasPrefix(f.fixture, "types_"), strings.HasPrefix(f.fixture, "blob_"):
			// Datasets of one data file: the file is the dataset.
			want = func() ([][]byte, int) {
				exp := fixturetest.LoadExpected(t, f.fixture)
				rows := make([][]byte, len(exp.Rows))
				for i, r := range exp.Rows {
					rows[i] = r
				}
				return rows, 0
			}
		case strings.HasPrefix(name, "strs_"), strings.HasPrefix(name, "wide_"):
			want = func() ([][]byte, int) {
				raw := fixturetest.EncodingRows(t, name)
				rows := make([][]byte, len(raw))
				for i, r := range raw {
					rows[i] = r
				}
				return rows, 0
			}
		case strings.HasPrefix(name, "pages_"), strings.HasPrefix(name, "mpage_"):
			want = nil // formula rows, below
		default:
			continue
		}
		t.Run(f.fixture+"/"+f.name, func(t *testing.T) {
			if testing.Short() && strings.HasPrefix(name, "pages_") {
				t.Skip("1.1 million rows")
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openStructural(t, f, mem)
			c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			opts := fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}}
			check := fixturetest.NewRowChecker(t, f.fixture+"/"+f.name, opts)
			var wantRows [][]byte
			if want != nil {
				wantRows, _ = want()
				if len(wantRows) != int(r.NumRows()) {
					t.Fatalf("file has %d rows, the dataset %d: not a single-file dataset", r.NumRows(), len(wantRows))
				}
			}
			const batch = 8192
			base := -1
			for start := uint64(0); start < r.NumRows(); start += batch {
				end := min(start+batch, r.NumRows())
				arrs, err := c.ReadRange(context.Background(), start, end)
				if err != nil {
					t.Fatalf("rows [%d, %d): %v", start, end, err)
				}
				rec := structuralRecord(r, arrs, int64(end-start))
				fileio.ReleaseAll(arrs)
				got := fixturetest.EncodeRows(t, rec)
				if want == nil && base < 0 {
					base = formulaFirstID(t, rec)
				}
				rec.Release()
				for i, g := range got {
					row := int(start) + i
					if want != nil {
						check.Check(row, g, wantRows[row])
					} else {
						check.Check(row, g, fixturetest.FormulaRow(name, base+row))
					}
				}
			}
			check.Finish(int(r.NumRows()), int(r.NumRows()))
		})
	}
}

// formulaFirstID returns the id column's first value: where a formula dataset's
// file starts.
func formulaFirstID(t testing.TB, rec arrow.RecordBatch) int {
	idx := slices.IndexFunc(rec.Schema().Fields(), func(f arrow.Field) bool { return f.Name == "id" })
	if idx < 0 || rec.NumRows() == 0 {
		t.Fatal("no id column")
	}
	return int(rec.Column(idx).(*array.Int64).Value(0))
}

// TestStructuralFixturePruned reads pruned structs (some members of nested
// structs) from the types files and checks them against the full read with
// the other members dropped.
func TestStructuralFixturePruned(t *testing.T) {
	projections := [][]string{
		{"nested.inner.ys"},
		{"nested.kv", "struct.b"},
		{"map_utf8_i32", "list_i32", "nested_nn.inner"},
		{"nested.name", "nested.inner.x", "id"},
	}
	for _, fixture := range []string{"types_v2_1", "types_v2_2", "types_v2_3"} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		r := openStructural(t, fixtureFile(t, fixture), mem)
		full := readAllStructural(t, r)
		fullRec := structuralRecord(r, full, int64(r.NumRows()))
		fullRows := fixturetest.EncodeRows(t, fullRec)
		fullRec.Release()
		fileio.ReleaseAll(full)
		for _, paths := range projections {
			t.Run(fixture+"/"+strings.Join(paths, ","), func(t *testing.T) {
				sch, err := r.Schema().Project(paths)
				if errors.Is(err, lancer.ErrNotFound) && fixture == "types_v2_1" {
					t.Skipf("%v (2.1 cannot store maps)", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				arrs, err := r.readRange(context.Background(), r.FileProjection(sch.Fields), 0, r.NumRows())
				if err != nil {
					t.Fatal(err)
				}
				rec := array.NewRecordBatch(sch.Arrow(), arrs, int64(r.NumRows()))
				fileio.ReleaseAll(arrs)
				got := fixturetest.EncodeRows(t, rec)
				rec.Release()
				for i := range got {
					want := pruneJSON(t, fullRows[i], sch.Fields)
					if !bytes.Equal(canonicalJSON(t, got[i]), want) {
						t.Fatalf("row %d:\n got %s\nwant %s", i, got[i], want)
					}
				}
			})
		}
		mem.AssertSize(t, 0)
	}
}

// pruneJSON keeps, of a full row, the members fields select, and returns
// it canonically encoded.
func pruneJSON(t testing.TB, row []byte, fields []*schema.Field) []byte {
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var prune func(v any, fields []*schema.Field) any
	prune = func(v any, fields []*schema.Field) any {
		m, ok := v.(map[string]any)
		if !ok {
			return v // null, or a non-struct value
		}
		out := map[string]any{}
		for _, f := range fields {
			if len(f.Children) > 0 && f.Type.ID() == arrow.STRUCT {
				out[f.Name] = prune(m[f.Name], f.Children)
			} else {
				out[f.Name] = m[f.Name]
			}
		}
		return out
	}
	b, err := json.Marshal(prune(v, fields))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func canonicalJSON(t testing.TB, row []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStructuralBlobV2ManifestShape reads a blob v2 column described the
// way a dataset manifest describes it (struct<data, uri> with children of
// their own) rather than as the data file does: it is still one column,
// read as descriptors.
func TestStructuralBlobV2ManifestShape(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := openStructural(t, fixtureFile(t, "blob_v2_v2_2"), mem)
	fileProj := r.FileProjection(r.Schema().Fields)
	var fields []*schema.Field
	blobs := 0
	for _, f := range r.Schema().Fields {
		if f.Blob != schema.BlobV2 {
			fields = append(fields, f)
			continue
		}
		blobs++
		data := &schema.Field{ID: 1000, ParentID: f.ID, Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true}
		uri := &schema.Field{ID: 1001, ParentID: f.ID, Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true}
		m := *f
		m.Children = []*schema.Field{data, uri}
		m.Type = arrow.StructOf(arrow.Field{Name: "data", Type: data.Type, Nullable: true}, arrow.Field{Name: "uri", Type: uri.Type, Nullable: true})
		m.Metadata = map[string]string{schema.MetaExtensionName: schema.BlobV2Extension}
		fields = append(fields, &m)
	}
	if blobs != 1 {
		t.Fatalf("%d blob v2 fields in the file schema", blobs)
	}
	got, err := r.readRange(context.Background(), Projection{Fields: fields, Column: fileProj.Column}, 0, r.NumRows())
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(got)
	want := readAllStructural(t, r)
	defer fileio.ReleaseAll(want)
	for i := range want {
		if !arrow.TypeEqual(got[i].DataType(), want[i].DataType()) || !array.Equal(got[i], want[i]) {
			t.Errorf("field %q: manifest-shaped read differs:\n got %v\nwant %v", fields[i].Name, got[i], want[i])
		}
	}
}
