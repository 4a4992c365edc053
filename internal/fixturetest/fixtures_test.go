package fixturetest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/internal/rowjson"
)

func TestFindDir(t *testing.T) {
	// Walking up: a checkout at <top>/repo finds <top>/shared/fixtures.
	top := t.TempDir()
	want := filepath.Join(top, "shared", "fixtures")
	if err := os.MkdirAll(filepath.Join(want, "lance"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(want, "lance", "MANIFEST.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(top, "repo", "internal", "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findDirFrom(pkg); err != nil || got != want {
		t.Fatalf("findDirFrom = %q, %v; want %q", got, err, want)
	}
	if _, err := findDirFrom(t.TempDir()); err == nil || !strings.Contains(err.Error(), EnvDir) {
		t.Fatalf("findDirFrom without fixtures: err = %v, want one naming %s", err, EnvDir)
	}

	dir := Dir(t)

	t.Run("env", func(t *testing.T) {
		t.Setenv(EnvDir, dir)
		if got, err := findDir(); err != nil || got != dir {
			t.Errorf("findDir = %q, %v; want %q", got, err, dir)
		}
	})
	t.Run("env without fixtures", func(t *testing.T) {
		t.Setenv(EnvDir, t.TempDir())
		if _, err := findDir(); err == nil || !strings.Contains(err.Error(), EnvDir) {
			t.Errorf("err = %v, want one naming %s", err, EnvDir)
		}
	})
	t.Run("no env, no fixtures above the working directory", func(t *testing.T) {
		t.Setenv(EnvDir, "")
		t.Chdir(t.TempDir())
		if _, err := findDir(); err == nil || !strings.Contains(err.Error(), EnvDir) {
			t.Errorf("err = %v, want one telling to set %s", err, EnvDir)
		}
	})
}

// Every expected.json listed in MANIFEST.json decodes, strictly: a member the
// Expected type does not model fails here, so the types stay complete.
func TestLoadEveryExpected(t *testing.T) {
	m := LoadManifest(t)
	if len(m.Fixtures) < 20 || m.Generator.LanceCore == "" {
		t.Fatalf("manifest: %d fixtures, generator %+v", len(m.Fixtures), m.Generator)
	}
	var strictManifest Manifest
	decodeFile(t, filepath.Join(Dir(t), "lance", "MANIFEST.json"), &strictManifest, true)

	for _, fx := range m.Fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			var exp Expected
			decodeFile(t, fx.ExpectedPath, &exp, true)
			if st, err := os.Stat(fx.DatasetPath); err != nil || !st.IsDir() {
				t.Errorf("dataset %s: %v", fx.DatasetPath, err)
			}
			if exp.Fixture != fx.Name || len(exp.Rows) != fx.Rows || int64(fx.Rows) != exp.NumRows || len(exp.Versions) != fx.Versions {
				t.Errorf("expected.json disagrees with MANIFEST.json: fixture %q rows %d num_rows %d versions %d; manifest %+v",
					exp.Fixture, len(exp.Rows), exp.NumRows, len(exp.Versions), fx)
			}
			if len(exp.Schema.Fields) == 0 || len(exp.ScanSchemaWithRowID.Fields) != len(exp.Schema.Fields)+1 {
				t.Errorf("schema %d fields, scan schema %d", len(exp.Schema.Fields), len(exp.ScanSchemaWithRowID.Fields))
			}
			// Every row anywhere is an object carrying _rowid.
			check := func(where string, rows []json.RawMessage) {
				for i, r := range rows {
					v, err := parseJSON(r)
					if err != nil || v.Kind != jObject || !contains(v.Keys, "_rowid") {
						t.Fatalf("%s row %d: %v: %s", where, i, err, clip(string(r)))
					}
				}
			}
			check("rows", exp.Rows)
			for _, tt := range exp.TimeTravel {
				check("time_travel", tt.Rows)
			}
			if exp.Branch != nil {
				check("branch", exp.Branch.Rows)
			}
			if exp.Takes != nil && exp.Takes.Error == "" {
				check("takes.offset_rows", exp.Takes.OffsetRows)
				check("takes.row_id_rows", exp.Takes.RowIDRows)
				if len(exp.Takes.RowIDs) != len(exp.Takes.RowIDRows) {
					t.Errorf("%d row ids, %d rows", len(exp.Takes.RowIDs), len(exp.Takes.RowIDRows))
				}
			}
		})
	}
}

func TestExpectedDetails(t *testing.T) {
	h := LoadExpected(t, "history_v2_2")
	if h.Branches.ByName["exp"].ParentVersion != 4 || h.Branch == nil || h.Branch.Name != "exp" {
		t.Errorf("branches %+v, branch %+v", h.Branches, h.Branch)
	}
	if h.Tags["three_fragments"].Version != 3 || len(h.TimeTravel) != 8 || h.TimeTravel[0].Rows == nil {
		t.Errorf("tags %+v, time travel %d", h.Tags, len(h.TimeTravel))
	}
	if h.Takes == nil || len(h.Takes.RowIDs) != 3 || h.Takes.RowIDs[0] != 8589934609 {
		t.Errorf("takes %+v", h.Takes)
	}
	if len(h.Files) == 0 || h.Files[0].Path == "" || h.Files[0].Size == 0 {
		t.Errorf("files %+v", h.Files[:1])
	}

	idx := LoadExpected(t, "indexed_v2_2")
	var vec, fts int
	for _, q := range idx.Queries {
		switch q.Kind {
		case "vector":
			if v, err := q.Query.Vector(); err != nil || len(v) != 32 {
				t.Errorf("vector query: %v, %d dims", err, len(v))
			}
			vec++
		case "fts":
			if q.Query.Text == "" || len(q.Results) == 0 {
				t.Errorf("fts query %+v", q)
			}
			fts++
		}
	}
	if vec != 6 || fts != 2 || len(idx.Indices) != 6 {
		t.Errorf("%d vector, %d fts queries, %d indices", vec, fts, len(idx.Indices))
	}

	types := LoadExpected(t, "types_v2_2")
	var dec *Field
	for i := range types.Schema.Fields {
		if types.Schema.Fields[i].Name == "decimal128_12_3" {
			dec = &types.Schema.Fields[i]
		}
	}
	if dec == nil || dec.Precision != 12 || dec.Scale != 3 {
		t.Errorf("decimal field %+v", dec)
	}
}

func TestEach(t *testing.T) {
	n := 0
	Each(t, func(t *testing.T, fx Fixture, exp *Expected) {
		n++
		if exp.Fixture != fx.Name {
			t.Errorf("Each passed %q with the expected of %q", fx.Name, exp.Fixture)
		}
	})
	if want := len(LoadManifest(t).Fixtures); n != want {
		t.Errorf("Each ran %d subtests, want %d", n, want)
	}
	kinds := 0
	EachKind(t, "history", func(t *testing.T, fx Fixture, exp *Expected) {
		kinds++
		if exp.Branch == nil {
			t.Errorf("history fixture without branch")
		}
	})
	if kinds != 6 {
		t.Errorf("EachKind(history) ran %d subtests, want 6", kinds)
	}
}

// Every non-integer number in the fixtures' rows is printed by JavaScript;
// rowjson.AppendFloat must print the same value identically, or `lancer
// scan` output would differ textually from what Lance's tools print.
func TestFixtureNumbersPrintLikeRowjson(t *testing.T) {
	var numbers int
	var walk func(v *jvalue)
	walk = func(v *jvalue) {
		switch v.Kind {
		case jNumber:
			f, err := strconv.ParseFloat(v.Text, 64)
			if err != nil {
				t.Fatalf("%s: %v", v.Text, err)
			}
			if isInteger(v.Text) && math.Abs(f) >= 1<<53 {
				return // an int64 literal, not a float
			}
			numbers++
			if got := string(rowjson.AppendFloat(nil, f)); got != v.Text {
				t.Errorf("AppendFloat(%s) = %s", v.Text, got)
			}
		case jArray, jObject:
			for i := range v.Elems {
				walk(&v.Elems[i])
			}
		}
	}
	for _, name := range []string{"types_v2_2", "history_v2_2", "indexed_v2_2"} {
		for _, r := range LoadExpected(t, name).Rows {
			v, err := parseJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			walk(&v)
		}
	}
	if numbers < 10000 {
		t.Errorf("only %d numbers checked", numbers)
	}
}

// End to end on real reference rows: build Arrow columns from the rows of
// history_v2_2, print them with rowjson, compare with what Lance reported.
func TestEncodeRowsMatchesReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	exp := LoadExpected(t, "history_v2_2")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label2", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "extra", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_rowid", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	var all []byte
	all = append(all, '[')
	for i, r := range exp.Rows {
		if i > 0 {
			all = append(all, ',')
		}
		all = append(all, r...)
	}
	all = append(all, ']')
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(string(all)))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	// Two batches, to check rows keep their order across batches.
	first, second := rec.NewSlice(0, 20), rec.NewSlice(20, rec.NumRows())
	defer first.Release()
	defer second.Release()

	got := EncodeRows(t, first, second)
	CompareRows(t, "history_v2_2 rows", got, exp.Rows, CompareOptions{})
	CompareRows(t, "history_v2_2 rows without _rowid", got, exp.Rows, CompareOptions{IgnoreKeys: []string{"_rowid"}})
}

func TestEncodingRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows int
	}{{"strs_2_1", 20000}, {"strs_2_2", 20000}, {"wide_2_1", 2000}, {"wide_2_2", 2000}} {
		t.Run(tc.name, func(t *testing.T) {
			EncodingDatasetPath(t, tc.name)
			rows := EncodingRows(t, tc.name)
			if len(rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(rows), tc.rows)
			}
			for _, i := range []int{0, 1, tc.rows - 1} {
				var r struct {
					ID    json.Number `json:"id"`
					RowID json.Number `json:"_rowid"`
				}
				if err := json.Unmarshal(rows[i], &r); err != nil {
					t.Fatal(err)
				}
				// One fragment, no stable row ids: row id = offset = id.
				if want := strconv.Itoa(i); r.ID.String() != want || r.RowID.String() != want {
					t.Errorf("row %d: id %s, _rowid %s", i, r.ID, r.RowID)
				}
			}
		})
	}
}

func TestFormulaRow(t *testing.T) {
	for _, name := range []string{"pages_2_1", "pages_2_2", "mpage_2_1", "mpage_2_2"} {
		EncodingDatasetPath(t, name)
		n, ok := FormulaRowCount(name)
		if !ok || n == 0 {
			t.Errorf("FormulaRowCount(%s) = %d, %v", name, n, ok)
		}
		for _, i := range []int{0, 1, n / 2, n - 1} {
			if !json.Valid(FormulaRow(name, i)) {
				t.Errorf("%s row %d: %s is not JSON", name, i, FormulaRow(name, i))
			}
		}
	}
	cases := []struct {
		name string
		i    int
		want string
	}{
		{"pages_2_2", 0, `{"id":0,"small":0,"_rowid":0}`},
		{"pages_2_2", 1048575, `{"id":1048575,"small":575,"_rowid":1048575}`},
		{"pages_2_1", 1048576, `{"id":1048576,"small":576,"_rowid":4294967296}`},
		{"pages_2_1", 1099999, `{"id":1099999,"small":999,"_rowid":4295018719}`},
		{"mpage_2_1", 0, `{"id":0,"s":null,"_rowid":0}`},
		{"mpage_2_2", 17, `{"id":17,"s":"row-17-bravo-padding-padding","_rowid":17}`},
		{"mpage_2_2", 299999, `{"id":299999,"s":"row-299999-papa-padding-padding","_rowid":299999}`},
		{"mpage_2_2", 202, `{"id":202,"s":null,"_rowid":202}`},
	}
	for _, c := range cases {
		if got := string(FormulaRow(c.name, c.i)); got != c.want {
			t.Errorf("FormulaRow(%s, %d) = %s, want %s", c.name, c.i, got, c.want)
		}
	}
	if _, ok := FormulaRowCount("strs_2_1"); ok {
		t.Error("strs_2_1 is not a formula dataset")
	}
	for _, bad := range []struct {
		name string
		i    int
	}{{"strs_2_1", 0}, {"pages_2_2", 1_100_000}, {"mpage_2_1", -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FormulaRow(%s, %d) did not panic", bad.name, bad.i)
				}
			}()
			FormulaRow(bad.name, bad.i)
		}()
	}
}
