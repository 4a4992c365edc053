package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/table"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// mustRun runs a command line that must succeed and returns its stdout.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runLancer(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestImportInferred imports JSON lines and CSV with inferred schemas and
// compares the schema and rows with golden files.
func TestImportInferred(t *testing.T) {
	for _, src := range []string{"people.jsonl", "people.csv"} {
		t.Run(src, func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "ds")
			out := mustRun(t, "import", filepath.Join("testdata", src), ds)
			if want := "imported 4 rows from testdata/" + src + " into " + ds + " (new dataset); version 1\n"; out != want {
				t.Errorf("import printed %q, want %q", out, want)
			}
			golden(t, src+".schema", mustRun(t, "schema", ds))
			golden(t, src+".scan", mustRun(t, "scan", ds, "--format", "jsonl"))
		})
	}
}

// TestImportRoundTrip: what `lancer scan` prints of a fixture imports back,
// with the fixture's schema, into a dataset that scans to the rows real
// Lance reported; appending the same rows doubles them.
func TestImportRoundTrip(t *testing.T) {
	for _, name := range []string{"types_v2_2", "history_v2_2"} {
		t.Run(name, func(t *testing.T) {
			path := fixturetest.DatasetPath(t, name)
			exp := fixturetest.LoadExpected(t, name)
			dir := t.TempDir()
			for _, f := range []string{"jsonl", "csv"} {
				rows := mustRun(t, "scan", path, "--format", f)
				src := filepath.Join(dir, "rows."+f)
				if err := os.WriteFile(src, []byte(rows), 0o644); err != nil {
					t.Fatal(err)
				}
				ds := filepath.Join(dir, f)
				mustRun(t, "import", src, ds, "--schema-from", path)
				out := mustRun(t, "import", src, ds, "--mode", "append")
				if want := "(appended); version 2\n"; !strings.HasSuffix(out, want) {
					t.Errorf("append printed %q", out)
				}
				if f == "csv" {
					// CSV cannot tell an empty string from a null: compare
					// the text.
					_, body, _ := strings.Cut(rows, "\n")
					if got := mustRun(t, "scan", ds, "--format", "csv"); got != rows+body {
						t.Errorf("csv round trip differs:\n%s", got)
					}
					continue
				}
				got := jsonLines(mustRun(t, "scan", ds, "--format", "jsonl"))
				want := slices.Concat(exp.Rows, exp.Rows)
				fixturetest.CompareRows(t, name+" via "+f, got, want, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
			}
		})
	}
}

// TestScanImportNonFinite: NaN, ±Inf, -0 and integers beyond int64 go
// through `lancer scan` and `lancer import` (inferred, appended, and from
// CSV) unchanged, where JSON.stringify's encoding would turn them into
// nulls, +0 and float64s.
func TestScanImportNonFinite(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.jsonl")
	in := `{"id": 1, "f": 1.5, "u": 18446744073709551615, "l": [1.5, "NaN"]}
{"id": 2, "f": "NaN", "u": 9223372036854775808, "l": ["-Infinity", -0.0]}
{"id": 3, "f": "Infinity", "u": 0, "l": []}
{"id": 4, "f": "-Infinity", "u": null, "l": null}
{"id": 5, "f": -0.0, "u": 1, "l": [5e-324, 1e400]}
`
	if err := os.WriteFile(src, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	// 1e400 is no float64: refused, naming where it is.
	if code, _, errOut := runLancer(t, "import", src, ds); code == 0 || !strings.Contains(errOut, `src.jsonl line 5, column "l": at [1]: number 1e400 is out of range for float64`) {
		t.Fatalf("import of 1e400: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(src, []byte(strings.Replace(in, ", 1e400]", "]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", src, ds)
	want := `{"id":1,"f":1.5,"u":18446744073709551615,"l":[1.5,"NaN"]}
{"id":2,"f":"NaN","u":9223372036854775808,"l":["-Infinity",-0.0]}
{"id":3,"f":"Infinity","u":0,"l":[]}
{"id":4,"f":"-Infinity","u":null,"l":null}
{"id":5,"f":-0.0,"u":1,"l":[5e-324]}
`
	rows := mustRun(t, "scan", ds, "--format", "jsonl")
	if rows != want {
		t.Fatalf("scan:\n%s\nwant:\n%s", rows, want)
	}
	schema := mustRun(t, "schema", ds)
	scanned := filepath.Join(dir, "scanned.jsonl")
	if err := os.WriteFile(scanned, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again")
	mustRun(t, "import", scanned, again)
	if got := mustRun(t, "schema", again); got != schema {
		t.Errorf("re-imported schema:\n%s\nwant:\n%s", got, schema)
	}
	mustRun(t, "import", scanned, again, "--mode", "append")
	csv := filepath.Join(dir, "scanned.csv")
	if err := os.WriteFile(csv, []byte(mustRun(t, "scan", ds, "--format", "csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", csv, again, "--mode", "append")
	if got := mustRun(t, "scan", again, "--format", "jsonl"); got != want+want+want {
		t.Errorf("after appending the scan as JSON lines and CSV:\n%s\nwant 3 × \n%s", got, want)
	}
}

// testBatch is a small batch of every column kind the columnar imports
// exercise, with types JSON inference would not pick.
func testBatch(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	vec := b.Field(2).(*array.FixedSizeListBuilder)
	vec.AppendValues([]bool{true, true, false})
	vec.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{1, 2, 3, 4, 0, 0}, nil)
	return b.NewRecordBatch()
}

// writeColumnar writes rec to dir as Parquet (two row groups), an Arrow
// IPC file and an Arrow IPC stream, each holding rec twice, and returns
// their paths.
func writeColumnar(t *testing.T, dir string, mem memory.Allocator, rec arrow.RecordBatch) []string {
	t.Helper()
	var pq, file, stream bytes.Buffer
	pw, err := pqarrow.NewFileWriter(rec.Schema(), &pq, parquet.NewWriterProperties(parquet.WithAllocator(mem)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	fw, err := ipc.NewFileWriter(&file, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	sw := ipc.NewWriter(&stream, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	for _, w := range []interface {
		Write(arrow.RecordBatch) error
		Close() error
	}{pw, fw, sw} {
		for range 2 {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	for name, data := range map[string][]byte{"rows.parquet": pq.Bytes(), "rows.arrow": file.Bytes(), "rows.arrows": stream.Bytes()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

func TestImportColumnar(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testBatch(mem)
	defer rec.Release()
	dir := t.TempDir()
	rows := `{"id":1,"name":"a","vec":[1,2]}
{"id":2,"name":null,"vec":[3,4]}
{"id":3,"name":"c","vec":null}
`
	for _, src := range writeColumnar(t, dir, mem, rec) {
		ds := filepath.Join(dir, filepath.Base(src)+".lance")
		mustRun(t, "import", src, ds)
		if got := mustRun(t, "scan", ds, "--format", "jsonl"); got != rows+rows {
			t.Errorf("%s: rows\n%s", src, got)
		}
		if got := mustRun(t, "schema", ds); !strings.Contains(got, "int32") || strings.Contains(got, "PARQUET") ||
			!strings.Contains(got, "fixed_size_list<item: float32, nullable>[2]") {
			t.Errorf("%s: schema\n%s", src, got)
		}
	}

	// Appending casts to the dataset's types: id is int64 there.
	ds := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), ds)
	narrow := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:2], nil), rec.Columns()[:2], rec.NumRows())
	defer narrow.Release()
	sub := filepath.Join(dir, "narrow")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeColumnar(t, sub, mem, narrow)
	out := mustRun(t, "import", filepath.Join(sub, "rows.parquet"), ds, "--mode", "append")
	if !strings.HasPrefix(out, "imported 6 rows") || !strings.HasSuffix(out, "(appended); version 2\n") {
		t.Errorf("append printed %q", out)
	}
	// ... and a column the dataset lacks is an error naming it.
	code, _, errOut := runLancer(t, "import", filepath.Join(dir, "rows.arrow"), ds, "--mode", "append")
	if code != 1 || !strings.Contains(errOut, `rows.arrow, column "vec": no such column in the schema`) {
		t.Errorf("append of an unknown column: exit %d: %s", code, errOut)
	}
}

func TestImportModesAndOptions(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("testdata", "people.jsonl")
	ds := filepath.Join(dir, "ds")
	mustRun(t, "import", filepath.Join("testdata", "people.csv"), ds, "--storage-version", "2.0", "--stable-row-ids")
	tbl, err := table.Open(context.Background(), ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	d := tbl.Dataset()
	if d.Manifest().DataFormat != format.Version2_0 || !d.Manifest().StableRowIDs() {
		t.Errorf("data format %s, stable row ids %t", d.Manifest().DataFormat, d.Manifest().StableRowIDs())
	}

	code, _, errOut := runLancer(t, "import", src, ds)
	if code != 1 || !strings.Contains(errOut, "a dataset exists at "+ds+" (use --mode append or overwrite)") {
		t.Errorf("create over a dataset: exit %d: %s", code, errOut)
	}
	out := mustRun(t, "import", src, ds, "--mode", "overwrite", "--storage-version", "2.1")
	if out != "imported 4 rows from testdata/people.jsonl into "+ds+" (overwritten); version 2\n" {
		t.Errorf("overwrite printed %q", out)
	}
	if got := mustRun(t, "schema", ds); !strings.Contains(got, "address") {
		t.Errorf("overwrite kept the old schema:\n%s", got)
	}
	// --format overrides the extension; append creates a dataset.
	txt := filepath.Join(dir, "rows.txt")
	if err := os.WriteFile(txt, []byte("{\"a\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "import", txt, filepath.Join(dir, "new"), "--format", "jsonl", "--mode", "append")
	if !strings.HasSuffix(out, "(new dataset); version 1\n") {
		t.Errorf("append to nothing printed %q", out)
	}

	// The progress bar, forced on (stderr is no terminal here).
	code, _, errOut = runLancer(t, "import", src, filepath.Join(dir, "p"), "--progress")
	if code != 0 || !regexp.MustCompile(`people\.jsonl \[=+\] 100% \d+ B/\d+ B\n$`).MatchString(errOut) {
		t.Errorf("progress: exit %d, stderr %q", code, errOut)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bad := write("bad.jsonl", "{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": \"b\"\n")
	mixed := write("mixed.jsonl", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": \"three\"}\n")
	badCSV := write("bad.csv", "id,n\n1,2\n3,4,5\n")
	people := filepath.Join(dir, "people")
	mustRun(t, "import", filepath.Join("testdata", "people.jsonl"), people)
	wrongType := write("wrong.jsonl", "{\"id\": 5, \"age\": \"old\"}\n")
	wrongCSV := write("wrong.csv", "id,age\n5,41\n6,old\n")
	unknown := write("unknown.jsonl", "{\"id\": 5, \"height\": 1.8}\n")

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"import", bad, filepath.Join(dir, "a")}, "bad.jsonl line 2: invalid JSON"},
		{[]string{"import", mixed, filepath.Join(dir, "b")}, `mixed.jsonl line 3, column "id": a string here but an integer on line 1`},
		{[]string{"import", badCSV, filepath.Join(dir, "c")}, "bad.csv line 3: wrong number of fields"},
		{[]string{"import", wrongType, people, "--mode", "append"}, `wrong.jsonl line 1, column "age": want an int64, got string "old"`},
		{[]string{"import", wrongCSV, people, "--mode", "append"}, `wrong.csv line 3, column "age": want an int64, got string "old"`},
		{[]string{"import", unknown, people, "--mode", "append"}, `unknown.jsonl line 1, column "height": no such column in the schema`},
		{[]string{"import", filepath.Join(dir, "missing.jsonl"), filepath.Join(dir, "d")}, "missing.jsonl: no such file"},
		{[]string{"import", write("x.txt", ""), filepath.Join(dir, "e")}, "cannot tell the format of"},
		{[]string{"import", bad, filepath.Join(dir, "f"), "--format", "xml"}, `unknown format "xml"`},
		{[]string{"import", bad, filepath.Join(dir, "g"), "--mode", "merge"}, `unknown --mode "merge"`},
		{[]string{"import", bad, filepath.Join(dir, "h"), "--storage-version", "2.3"}, `--storage-version "2.3"`},
		{[]string{"import", bad, people, "--mode", "append", "--schema-from", people}, "--schema-from cannot be combined"},
		{[]string{"import", write("bad.parquet", "PAR1 nope"), filepath.Join(dir, "i")}, "bad.parquet is not a Parquet file"},
	}
	for _, c := range cases {
		code, _, errOut := runLancer(t, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want it to contain %q", c.args[1:], code, errOut, c.want)
		}
	}
	// A failed import leaves no version behind.
	if got := mustRun(t, "count", people); got != "4\n" {
		t.Errorf("count after failed appends = %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(dir, "a", "_versions"))
		if len(entries) != 0 {
			t.Errorf("failed import committed %d versions", len(entries))
		}
	}
}
