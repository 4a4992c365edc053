package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// readAll reads every batch of the file and returns the reader's schema and
// the rows in the fixtures' JSON encoding. It checks that nothing leaks.
func readAll(t *testing.T, data []byte, o Options) (*arrow.Schema, string, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator = mem
	rr, err := Open(context.Background(), bytes.NewReader(data), o)
	if err != nil {
		return nil, "", err
	}
	defer rr.Release()
	var out bytes.Buffer
	for rr.Next() {
		if err := rowjson.WriteJSONL(&out, rr.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	return rr.Schema(), out.String(), rr.Err()
}

func TestJSONLInference(t *testing.T) {
	in := `{"id": 1, "name": "a", "score": 1, "tags": ["x"], "meta": {"k": 1}, "nothing": null}
{"id": 9007199254740993, "name": null, "score": 2.5, "tags": [], "meta": {"k": 2, "ok": true}}

{"id": -3, "tags": null, "vec": [[1, 2.5], []]}
`
	schema, rows, err := readAll(t, []byte(in), Options{Name: "x.jsonl", BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `schema:
  fields: 7
    - id: type=int64, nullable
    - name: type=utf8, nullable
    - score: type=float64, nullable
    - tags: type=list<item: utf8, nullable>, nullable
    - meta: type=struct<k: int64 nullable, ok: bool nullable>, nullable
    - nothing: type=utf8, nullable
    - vec: type=list<item: list<item: float64, nullable>, nullable>, nullable`
	if schema.String() != want {
		t.Errorf("schema:\n%s\nwant:\n%s", schema, want)
	}
	wantRows := `{"id":1,"name":"a","score":1,"tags":["x"],"meta":{"k":1,"ok":null},"nothing":null,"vec":null}
{"id":9007199254740993,"name":null,"score":2.5,"tags":[],"meta":{"k":2,"ok":true},"nothing":null,"vec":null}
{"id":-3,"name":null,"score":null,"tags":null,"meta":null,"nothing":null,"vec":[[1,2.5],[]]}
`
	if rows != wantRows {
		t.Errorf("rows:\n%s\nwant:\n%s", rows, wantRows)
	}
}

func TestJSONLWithSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "vec", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
	}, nil)
	in := `{"id": 18446744073709551615, "vec": [1, 0.5], "bin": "AAE=", "ts": 1700000000000, "day": 3, "dec": "-12.34", "m": [["a", 1], ["b", null]], "f16": 0.5}
{"id": "7", "vec": null, "ts": "2024-01-02T03:04:05.5Z", "day": "1970-01-11", "dec": 5, "m": {"z": 2}}
`
	_, rows, err := readAll(t, []byte(in), Options{Name: "x.jsonl", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":18446744073709551615,"vec":[1,0.5],"bin":"AAE=","ts":1700000000000,"day":3,"dec":"-12.34","m":[["a",1],["b",null]],"f16":0.5}
{"id":7,"vec":null,"bin":null,"ts":1704164645500,"day":10,"dec":"5.00","m":[["z",2]],"f16":null}
`
	if rows != want {
		t.Errorf("rows:\n%s\nwant:\n%s", rows, want)
	}
}

func TestCSVInference(t *testing.T) {
	in := "\ufeffi,f,b,d,ts,tsz,s,empty,nested\n" +
		"1,1.5,true,2024-01-02,2024-01-02 03:04:05,2024-01-02T03:04:05Z,x,,\"[1,2]\"\n" +
		",2,FALSE,,2024-01-02T03:04:05.25,2024-01-02T04:04:05+01:00,\"a,b\",,\n"
	schema, rows, err := readAll(t, []byte(in), Options{Name: "x.csv"})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range schema.Fields() {
		types = append(types, f.Name+":"+f.Type.String())
	}
	wantTypes := "i:int64 f:float64 b:bool d:date32 ts:timestamp[us] tsz:timestamp[us, tz=UTC] s:utf8 empty:utf8 nested:utf8"
	if got := strings.Join(types, " "); got != wantTypes {
		t.Errorf("types: %s\nwant:  %s", got, wantTypes)
	}
	want := `{"i":1,"f":1.5,"b":true,"d":19724,"ts":1704164645000000,"tsz":1704164645000000,"s":"x","empty":null,"nested":"[1,2]"}
{"i":null,"f":2,"b":false,"d":null,"ts":1704164645250000,"tsz":1704164645000000,"s":"a,b","empty":null,"nested":null}
`
	if rows != want {
		t.Errorf("rows:\n%s\nwant:\n%s", rows, want)
	}
}

func TestCSVWithSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "missing", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	}, nil)
	in := "tags,id,name\n\"[\"\"a\"\"]\",1,\n,2,bob\n"
	_, rows, err := readAll(t, []byte(in), Options{Name: "x.csv", Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"name":"","tags":["a"],"missing":null}
{"id":2,"name":"bob","tags":null,"missing":null}
`
	if rows != want {
		t.Errorf("rows:\n%s\nwant:\n%s", rows, want)
	}
}

func TestErrors(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "v", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true}), Nullable: true},
	}, nil)
	cases := []struct {
		name, in string
		schema   *arrow.Schema
		want     string
	}{
		{"x.jsonl", "{\"a\": 1}\n{\"a\": 2,}\n", nil, `x.jsonl line 2: invalid JSON`},
		{"x.jsonl", "{\"a\": 1}\n\n[1]\n", nil, `x.jsonl line 3: want a JSON object, got an array`},
		{"x.jsonl", "{\"a\": 1}\n{\"a\": \"x\"}\n", nil, `x.jsonl line 2, column "a": a string here but an integer on line 1`},
		{"x.jsonl", "{\"a\": {\"b\": [1]}}\n{\"a\": {\"b\": [true]}}\n", nil, `x.jsonl line 2, column "a": at .b[]: a bool here but an integer on line 1`},
		{"x.jsonl", "{\"a\": 1, \"a\": 2}\n", nil, `x.jsonl line 1: invalid JSON: member "a" appears twice`},
		{"x.jsonl", "", nil, `x.jsonl holds no JSON objects`},
		{"x.jsonl", "{\"id\": 1}\n{\"id\": 1.5}\n", schema, `x.jsonl line 2, column "id": want an int64, got number 1.5`},
		{"x.jsonl", "{\"id\": 1, \"s\": {\"v\": [1, \"z\"]}}\n", schema, `x.jsonl line 1, column "s": at .v[1]: want an int32, got string "z"`},
		{"x.jsonl", "{\"id\": 1, \"s\": {\"w\": 1}}\n", schema, `x.jsonl line 1, column "s": at .w: no such member`},
		{"x.jsonl", "{\"id\": 1, \"t\": 1}\n", schema, `x.jsonl line 1, column "t": no such column in the schema`},
		{"x.jsonl", "{\"s\": null}\n", schema, `x.jsonl line 1, column "id": null (or missing) value in a non-nullable column`},
		{"x.jsonl", "{\"a\": 1}\f\n", nil, `x.jsonl line 1: invalid JSON at byte 9: unexpected '\f'`},
		{"x.jsonl", "{\"a\": 1}\n\n{\"a\": \"" + strings.Repeat("x", 70000) + "\"}\n", nil, `x.jsonl line 3: line too long: longer than 65536 bytes`},
		{"x.jsonl", "{\"a\":" + strings.Repeat("[", 65) + strings.Repeat("]", 65) + "}", nil, `x.jsonl line 1: invalid JSON at byte 70: nested deeper than 64`},
		{"x.jsonl", `{"req": "", "dec": 1e999999999}`, wideSchema, `x.jsonl line 1, column "dec": number 1e999999999 is out of range for a decimal`},
		{"x.jsonl", `{"req": "", "dec256": "Inf"}`, wideSchema, `x.jsonl line 1, column "dec256": string "Inf" is out of range for a decimal`},
		{"x.jsonl", `{"req": "", "dec": ` + strings.Repeat("7", 300) + `}`, wideSchema, `x.jsonl line 1, column "dec": number 7777777777777777777777777777777777777... is longer than the 256 bytes a decimal may take`},
		{"x.jsonl", manyDictValues(129), wideSchema, `x.jsonl line 129, column "dict": more than 128 distinct values for a dictionary with int8 indices`},
		{"x.csv", "", nil, `x.csv is empty`},
		{"x.csv", "req,dec\n,-1e999999999\n", wideSchema, `x.csv line 2, column "dec": string "-1e999999999" is out of range for a decimal`},
		{"x.csv", "a,a\n", nil, `x.csv line 1, column "a": the header names the column twice`},
		{"x.csv", "a,b\n1,2\n3\n", nil, `x.csv line 3: wrong number of fields`},
		{"x.csv", "id\n1\nx\n", schema, `x.csv line 3, column "id": want an int64, got string "x"`},
		{"x.csv", "id,s\n1,\"{\"\"v\"\": [1,]}\"\n", schema, `x.csv line 2, column "s": invalid JSON`},
		{"x.csv", "s\n\n", schema, `x.csv line 1, column "id": the file lacks this non-nullable column`},
		{"x.parquet", "not parquet at all", nil, `x.parquet is not a Parquet file`},
		{"x.arrow", "not arrow", nil, `x.arrow is not an Arrow IPC file or stream`},
		{"x.txt", "", nil, `cannot tell the format of x.txt`},
	}
	defer func(n int) { maxLineBytes = n }(maxLineBytes)
	maxLineBytes = 1 << 16
	for _, c := range cases {
		_, _, err := readAll(t, []byte(c.in), Options{Name: c.name, Schema: c.schema})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s %q: error %v, want one containing %q", c.name, c.in, err, c.want)
		}
	}
}

// manyDictValues is n JSON lines with n distinct "dict" values.
func manyDictValues(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"req\": \"\", \"dict\": \"v%d\"}\n", i)
	}
	return b.String()
}

// testRecord is a small batch of every column kind the columnar tests use.
func testRecord(mem memory.Allocator) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
	return b.NewRecordBatch()
}

func TestColumnar(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem)
	defer rec.Release()

	var pq bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &pq, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var file, stream bytes.Buffer
	fw, err := ipc.NewFileWriter(&file, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	sw := ipc.NewWriter(&stream, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(mem))
	for _, w := range []interface{ Write(arrow.RecordBatch) error }{fw, sw} {
		for range 2 {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}

	rows := "{\"id\":1,\"name\":\"a\"}\n{\"id\":2,\"name\":null}\n{\"id\":3,\"name\":\"c\"}\n"
	wide := arrow.NewSchema([]arrow.Field{
		{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "other", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"x.parquet", pq.Bytes(), rows},
		{"x.arrow", file.Bytes(), rows + rows},
		{"x.arrows", stream.Bytes(), rows + rows},
	} {
		schema, got, err := readAll(t, c.data, Options{Name: c.name})
		if err != nil || got != c.want || schema.Field(0).Type.ID() != arrow.INT32 {
			t.Errorf("%s: %v, schema %s, rows:\n%s", c.name, err, schema, got)
		}
		// Cast to a dataset's types.
		schema, got, err = readAll(t, c.data, Options{Name: c.name, Schema: wide})
		if err != nil || got != c.want || schema.Field(0).Type.ID() != arrow.INT64 || schema.Field(1).Type.ID() != arrow.LARGE_STRING {
			t.Errorf("%s with schema: %v, schema %s, rows:\n%s", c.name, err, schema, got)
		}
	}
	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if _, _, err := readAll(t, pq.Bytes(), Options{Name: "x.parquet", Schema: narrow}); err == nil ||
		!strings.Contains(err.Error(), `x.parquet, column "name": no such column in the schema`) {
		t.Errorf("unknown column: %v", err)
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "name", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if _, _, err := readAll(t, file.Bytes(), Options{Name: "x.arrow", Schema: bad}); err == nil ||
		!strings.Contains(err.Error(), `x.arrow, column "name": cannot convert utf8 to int32`) {
		t.Errorf("bad cast: %v", err)
	}
}

func TestParseJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a": [1, -0, 2.5e-3, true, null, "x\"\u00e9\ud83d\ude00"], "b": {}}`: `{"a":[1,-0,2.5e-3,true,null,"x\"é😀"],"b":{}}`,
		` [ ] `:    `[]`,
		"\"\xff\"": "\"\ufffd\"",
	} {
		v, err := parseJSON([]byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got, _ := json.Marshal(toPlain(v)); string(got) != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`{"a" 1}`:                 "at byte 6: want ':'",
		`[1,]`:                    "at byte 4: unexpected ']'",
		`01`:                      "at byte 1: bad number",
		`1.`:                      "bad number",
		`"abc`:                    "unterminated string",
		`{"a":1} x`:               "unexpected 'x' after the value",
		`"\q"`:                    "bad string escape",
		`[1 2]`:                   "want ',' or ']'",
		`{"a":1,}`:                "want a member name",
		`tru`:                     "unexpected 't'",
		"\"a\tb\"":                "control character",
		strings.Repeat("[", 2000): "nested deeper than 64",
	} {
		if _, err := parseJSON([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20s: error %v, want %q", in, err, want)
		}
	}
}

// toPlain turns *object values into maps, for json.Marshal.
func toPlain(v any) any {
	switch v := v.(type) {
	case *object:
		m := map[string]any{}
		for i, k := range v.keys {
			m[k] = toPlain(v.vals[i])
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toPlain(x)
		}
		return out
	}
	return v
}

// A "vector" column of equal-length number arrays becomes a float32
// vector, as LanceDB's makeArrowTable makes it; other arrays stay lists.
func TestJSONLVectorColumns(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		cols     []string
		want     map[string]string
	}{
		{"default", `{"vector": [1, 2.5, 3], "emb": [1, 2]}` + "\n" + `{"vector": null, "emb": [3, 4]}` + "\n", nil,
			map[string]string{"vector": "fixed_size_list<item: float32, nullable>[3]", "emb": "list<item: int64, nullable>"}},
		{"named", `{"vector": [1, 2], "emb": [1, 2]}` + "\n", []string{"emb"},
			map[string]string{"vector": "list<item: int64, nullable>", "emb": "fixed_size_list<item: float32, nullable>[2]"}},
		{"ragged", `{"vector": [1, 2]}` + "\n" + `{"vector": [1]}` + "\n", nil,
			map[string]string{"vector": "list<item: int64, nullable>"}},
		{"empty", `{"vector": []}` + "\n", nil, map[string]string{"vector": "list<item: utf8, nullable>"}},
		{"strings", `{"vector": ["a"]}` + "\n", nil, map[string]string{"vector": "list<item: utf8, nullable>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema, _, err := readAll(t, []byte(tc.in), Options{Name: "x.jsonl", VectorColumns: tc.cols})
			if err != nil {
				t.Fatal(err)
			}
			for col, want := range tc.want {
				f, ok := schema.FieldsByName(col)
				if !ok || f[0].Type.String() != want {
					t.Errorf("%s: %v, want %s", col, f, want)
				}
			}
		})
	}
}
