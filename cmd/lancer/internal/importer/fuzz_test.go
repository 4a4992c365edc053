package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/jsonvalue"
)

// historySchema is the schema of the history fixtures' first version, the
// shape `lancer import` appends to.
var historySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

// wideSchema has a column of each type appendValue converts to.
var wideSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "t32", Type: arrow.FixedWidthTypes.Time32s, Nullable: true},
	{Name: "t64", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	{Name: "dur", Type: arrow.FixedWidthTypes.Duration_ms, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "sv", Type: arrow.BinaryTypes.StringView, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 3}, Nullable: true},
	{Name: "dec256", Type: &arrow.Decimal256Type{Precision: 40, Scale: 5}, Nullable: true},
	{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	), Nullable: true},
	{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	{Name: "ll", Type: arrow.LargeListOf(arrow.ListOf(arrow.PrimitiveTypes.Float64)), Nullable: true},
	{Name: "nul", Type: arrow.Null, Nullable: true},
	{Name: "req", Type: arrow.BinaryTypes.String},
}, nil)

// jsonSeeds are JSON lines files: the CLI's sample, rows of the Lance
// fixtures (when present) and awkward inputs.
func jsonSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(`{"id": 1, "label": "a", "value": 1.5, "vec": [1, 2, 3, 4], "flag": true, "tags": ["x", "y"]}` + "\n" +
			`{"id": -0, "label": null, "value": 1e400, "vec": null, "flag": false, "tags": []}`),
		[]byte(`{"i8": -128, "u16": "65535", "u64": 18446744073709551615, "f16": 1.5, "f32": -0, "d32": "2024-02-29", "d64": 86400000,` +
			` "ts": "2024-05-06T07:08:09.123Z", "t32": "12:34:56", "t64": 1000, "dur": -5, "bin": "AAEC", "fsb": "AQID", "ls": "\u00e9",` +
			` "sv": "\ud83d\ude00", "dec": "-12.345", "dec256": 1.5e3, "map": [["k", 1], ["l", null]], "st": {"a": 1, "b": ["q"]},` +
			` "dict": "red", "ll": [[1.5], [], null], "nul": null, "req": ""}` + "\n" + `{"map": {"k": 2}, "req": "x"}`),
		[]byte(`{"a": "\ud800"}` + "\n" + `{"a": "\udc00\ud83d"}`),
		[]byte("{\"a\": \"\xff\xfe\"}\n\xef\xbb\xbf{\"b\": 1}"),
		[]byte(`{"a": "unterminated}`),
		[]byte(`{"a": 123456789012345678901234567890, "b": -9223372036854775808, "c": 9223372036854775808}`),
		[]byte(`{"a": 1e400, "b": -1e-400, "c": 1E+2, "d": -0.0}`),
		[]byte(`{"a": 1}` + "\r\n\r\n  \n" + `{"a": "x"}`),
		[]byte(`{"a": 1, "a": 2}`),
		[]byte(`{"a": [1, [2]]}`),
		[]byte(`{"a": {"b": 1}}` + "\n" + `{"a": {"c": [true]}}` + "\n" + `{"a": {"b": null, "c": [null]}}`),
		[]byte(`[1, 2]`),
		[]byte(`{"a":` + strings.Repeat("[", 1200) + strings.Repeat("]", 1200) + "}"),
		[]byte(`{"a":` + strings.Repeat(`{"a":`, 63) + "1" + strings.Repeat("}", 63) + "}"),
		[]byte(`{"a":` + strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64) + "}"),
		[]byte(`{"x": "` + strings.Repeat("long ", 20000) + `"}`),
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "cmd", "lancer", "testdata", "people.jsonl")); err == nil {
		seeds = append(seeds, b)
	}
	paths, _ := filepath.Glob(filepath.Join(fixturesDir(), "lance", "*.expected.json"))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var exp struct{ Rows []json.RawMessage }
		if err := json.Unmarshal(b, &exp); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var lines bytes.Buffer
		for i, r := range exp.Rows {
			if i == 8 {
				break
			}
			var c bytes.Buffer
			if err := json.Compact(&c, r); err != nil {
				t.Fatal(err)
			}
			lines.Write(c.Bytes())
			lines.WriteByte('\n')
		}
		if lines.Len() > 0 {
			seeds = append(seeds, lines.Bytes())
		}
	}
	return seeds
}

// fixturesDir is where the Lance fixtures are (see internal/fixturetest);
// seeds from them are skipped when they are absent.
func fixturesDir() string {
	if d := os.Getenv("LANCER_FIXTURES"); d != "" {
		return d
	}
	for _, d := range []string{filepath.Join("..", "..", "testdata"), "/work/shared/fixtures"} {
		if _, err := os.Stat(filepath.Join(d, "lance", "MANIFEST.json")); err == nil {
			return d
		}
	}
	return ""
}

// FuzzParseJSON checks the hand-written JSON parser against encoding/json:
// what it accepts, encoding/json accepts with the same value (numbers
// compared by their text), except for the bare NaN, Infinity and
// -Infinity it takes as numbers; what it refuses, encoding/json refuses
// too, except duplicate members and nesting deeper than maxJSONDepth.
func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		for line := range bytes.Lines(s) {
			f.Add(bytes.TrimSpace(line))
		}
	}
	for _, s := range []string{`[NaN, -Infinity, {"a": Infinity}]`, `NaN`, `-Infinityx`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, `"a\/b\\"`, `-0`, `0.5e-07`, `1E400`, `"\x7f"`, "\"\xed\xa0\x80\"", ` [ {} , [ ] ] `} {
		f.Add([]byte(s))
	}
	strict := jsonOptions
	strict.NonFiniteNumbers = false
	f.Fuzz(func(t *testing.T, data []byte) {
		all, allErr := parseJSON(data)
		v, err := jsonvalue.ParseWith[any](data, strict, plainBuilder{})
		if e, ok := err.(*jsonvalue.Error); ok {
			err = jsonError(e)
		}
		switch {
		case err == nil && (allErr != nil || !reflect.DeepEqual(toPlain(all), toPlain(v))):
			t.Fatalf("NonFiniteNumbers changes what %q parses to: %#v, %v", data, toPlain(all), allErr)
		case err != nil && allErr == nil && !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")):
			t.Fatalf("NonFiniteNumbers makes %q JSON", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		werr := dec.Decode(&want)
		if werr == nil && dec.More() || werr == nil && !json.Valid(data) {
			werr = errors.New("trailing data")
		}
		switch {
		case err == nil && werr != nil:
			t.Fatalf("parseJSON accepts %q, encoding/json does not: %v", data, werr)
		case err == nil:
			if got := toPlain(v); !reflect.DeepEqual(got, want) {
				t.Fatalf("parseJSON(%q) = %#v, encoding/json %#v", data, got, want)
			}
		case !strings.HasPrefix(err.Error(), "invalid JSON"):
			t.Fatalf("error %q does not say invalid JSON", err)
		case werr == nil && !strings.Contains(err.Error(), "appears twice") && !strings.Contains(err.Error(), "nested deeper"):
			t.Fatalf("parseJSON refuses %q (%v), encoding/json accepts it", data, err)
		}
	})
}

var lineRef = regexp.MustCompile(`^importer: fuzz\.(jsonl|csv) line [1-9][0-9]*(, column "|: )`)

// readFuzz imports data with o and checks the properties every import
// has: no panic, no leak, allocations in proportion to the input, and an
// error that wraps lancer.ErrInvalidArgument and names the line.
func readFuzz(t *testing.T, data []byte, o Options) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	o.Allocator, o.BatchSize = mem, 3
	before := allocated()
	rows := 0
	r, err := Open(context.Background(), bytes.NewReader(data), o)
	if err == nil {
		for r.Next() {
			rec := r.RecordBatch()
			rows += int(rec.NumRows())
			for i, col := range rec.Columns() {
				if d, ok := col.(*array.Dictionary); ok {
					for j := range d.Len() {
						if idx := d.GetValueIndex(j); d.IsValid(j) && (idx < 0 || idx >= d.Dictionary().Len()) {
							t.Errorf("column %d row %d: dictionary index %d of %d values", i, j, idx, d.Dictionary().Len())
						}
					}
				}
			}
		}
		err = r.Err()
		r.Release()
	}
	if grew := allocated() - before; grew > 32<<20+2048*uint64(len(data)) {
		t.Errorf("importing %d bytes allocated %d bytes", len(data), grew)
	}
	if err == nil {
		if rows > len(data) {
			t.Errorf("%d rows from %d bytes", rows, len(data))
		}
		return
	}
	if !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("error %v does not wrap ErrInvalidArgument", err)
	}
	if msg := err.Error(); !lineRef.MatchString(msg) &&
		!strings.Contains(msg, "holds no JSON objects") && !strings.Contains(msg, "is empty (a CSV file needs a header row)") {
		t.Errorf("error %q names no line", msg)
	}
}

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// FuzzJSONL imports arbitrary JSON lines with an inferred schema, the
// history fixture's and one with every convertible type.
func FuzzJSONL(f *testing.F) {
	for _, s := range jsonSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readFuzz(t, data, Options{Name: "fuzz.jsonl"})
		readFuzz(t, data, Options{Name: "fuzz.jsonl", Schema: historySchema})
		readFuzz(t, data, Options{Name: "fuzz.jsonl", Schema: wideSchema})
	})
}

// FuzzCSV imports arbitrary CSV with an inferred schema and the two of
// FuzzJSONL.
func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"id,label,value,vec,flag,tags\n1,a,1.5,\"[1,2,3,4]\",true,\"[\"\"x\"\"]\"\n-0,,1e400,,false,[]\n",
		"i8,u16,u64,f16,f32,d32,d64,ts,t32,t64,dur,bin,fsb,ls,sv,dec,dec256,map,st,dict,ll,nul,req\n" +
			"-128,65535,18446744073709551615,1.5,-0,2024-02-29,86400000,2024-05-06T07:08:09.123Z,12:34:56,1000,-5,AAEC,AQID,é,x,-12.345,1.5e3," +
			"\"[[\"\"k\"\",1]]\",\"{\"\"a\"\":1,\"\"b\"\":[\"\"q\"\"]}\",red,\"[[1.5],[]]\",,\n",
		"a,b\n1,2\n3\n",
		"a,a\n1,2\n",
		"a,\n1,2\n",
		"\ufeffa,b\n\"x\ny\",2\n",
		"a\n\"unterminated\n",
		"a,b\n1,\"x\"y\n",
		"a\n2024-01-01\n2024-01-01T00:00:00+02:00\n",
		"a\n" + strings.Repeat("[", 1200) + "\n",
		"\xff,b\n\xfe,1\n",
		"",
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "cmd", "lancer", "testdata", "people.csv")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		readFuzz(t, data, Options{Name: "fuzz.csv"})
		readFuzz(t, data, Options{Name: "fuzz.csv", Schema: historySchema})
		readFuzz(t, data, Options{Name: "fuzz.csv", Schema: wideSchema})
	})
}

// TestInferLongNames checks that schema inference does not copy a long
// member name for every value under it: it once built the path of each
// value for error messages, 16 KB per item of an array under a 16 KB name.
func TestInferLongNames(t *testing.T) {
	long := strings.Repeat("k", 16<<10)
	var members, items []string
	for i := range 10000 {
		members = append(members, fmt.Sprintf(`"m%d": 1`, i))
		items = append(items, "1")
	}
	for _, line := range []string{
		`{"a": {"` + long + `": {` + strings.Join(members, ", ") + `}}}`,
		`{"` + long + `": [` + strings.Join(items, ", ") + `]}`,
	} {
		before := allocated()
		if _, err := inferJSONL(strings.NewReader(line), "x.jsonl", []string{"vector"}); err != nil {
			t.Fatal(err)
		}
		if grew := allocated() - before; grew > 8<<20+256*uint64(len(line)) {
			t.Errorf("inferring the schema of %d bytes allocated %d bytes", len(line), grew)
		}
	}
}
