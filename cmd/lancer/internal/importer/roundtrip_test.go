package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// roundTripSchema has a column of every scalar type `lancer scan --format
// jsonl` prints and the importer reads, and nested columns of the lossy
// ones (floats, 64-bit integers).
var roundTripSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "lbin", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}, Nullable: true},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "d64", Type: arrow.FixedWidthTypes.Date64, Nullable: true},
	{Name: "ts_s", Type: arrow.FixedWidthTypes.Timestamp_s, Nullable: true},
	{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true},
	{Name: "t64", Type: arrow.FixedWidthTypes.Time64ns, Nullable: true},
	{Name: "dur", Type: arrow.FixedWidthTypes.Duration_us, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 38, Scale: 4}, Nullable: true},
	{Name: "dec256", Type: &arrow.Decimal256Type{Precision: 76, Scale: 2}, Nullable: true},
	{Name: "lf64", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "llf32", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		arrow.Field{Name: "l", Type: arrow.ListOf(arrow.FixedWidthTypes.Float16), Nullable: true},
	), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// roundTripRows are the rows of roundTripSchema, in arrow-go's JSON
// spelling (an encoder independent of rowjson): the extremes of each type,
// NaN, ±Inf, -0, float32 and float16 values whose float64 text is long,
// and nulls at every level. arrow-go's JSON reader flushes float16
// subnormals to zero, so they are left to TestFloatBitsRoundTrip.
const roundTripRows = `[
{"i8": -128, "i16": -32768, "i32": -2147483648, "i64": -9223372036854775808, "u8": 255, "u16": 65535, "u32": 4294967295,
 "u64": 18446744073709551615, "f16": 65504, "f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308,
 "b": true, "s": "NaN", "ls": "\u00e9\"\n", "bin": "AP8=", "lbin": "", "fsb": "AAE=", "d32": -719162, "d64": -62135596800000,
 "ts_s": -9223372036854775808, "ts_ns": 9223372036854775807, "t32": 86399999, "t64": 86399999999999, "dur": -9223372036854775808,
 "dec": "-9999999999999999999999999999999999.9999", "dec256": "12345678901234567890123456789012345678901234567890123456789012345678901234.56",
 "lf64": ["NaN", "+Inf", "-Inf", -0.0, 0, 5e-324, 9007199254740993, 1e21, 1e-7, null],
 "llf32": [1.401298464324817e-45, 1.1754943508222875e-38, 16777217, 0.1, "NaN", "-Inf", -0.0],
 "vec": [0.7, "+Inf", null],
 "st": {"f": "NaN", "u": 9223372036854775808, "l": [1.0009765625, 6.103515625e-5, 0.0999755859375, "-Inf", -0.0, "NaN"]},
 "m": [{"key": "nan", "value": "NaN"}, {"key": "neg0", "value": -0.0}]},
{"i8": 127, "i16": 32767, "i32": 2147483647, "i64": 9223372036854775807, "u8": 0, "u16": 0, "u32": 0,
 "u64": 0, "f16": -0.0, "f32": -0.0, "f64": -0.0,
 "b": false, "s": "", "ls": "", "bin": "", "lbin": "AQID", "fsb": "//8=", "d32": 2932896, "d64": 253402300799999,
 "ts_s": 0, "ts_ns": -1, "t32": 0, "t64": 0, "dur": 9223372036854775807, "dec": "0.0001", "dec256": "-0.01",
 "lf64": [], "llf32": [null], "vec": null, "st": {"f": -0.0, "u": 18446744073709551615, "l": null}, "m": []},
{"f16": "NaN", "f32": "NaN", "f64": "NaN", "st": {"f": null, "u": null, "l": []}},
{"f16": "+Inf", "f32": "+Inf", "f64": "+Inf", "lf64": [null]},
{"f16": "-Inf", "f32": "-Inf", "f64": "-Inf", "vec": [-0.0, 1e-45, -3.4028234663852886e38]},
{"f16": -6.103515625e-5, "f32": 1.401298464324817e-45, "f64": 5e-324},
{"f16": 0.0999755859375, "f32": 0.1, "f64": 0.1},
{"f16": 2048, "f32": 16777216, "f64": 9007199254740992},
{"f64": 1e300, "f32": 1e-30},
{"f64": -1e-300, "f32": -1e30}
]`

// TestScanImportRoundTrip writes rows with rowjson (what `lancer scan
// --format jsonl` prints) and imports them into the same schema (`lancer
// import --mode append`): every value must come back identical, floats to
// the bit, NaN, ±Inf and -0 included.
func TestScanImportRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	want, _, err := array.RecordFromJSON(mem, roundTripSchema, strings.NewReader(roundTripRows))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	// The fixture's own reader must have built what the test means.
	if f := want.Column(10).(*array.Float64); !math.Signbit(f.Value(1)) || !math.IsNaN(f.Value(2)) || !math.IsInf(f.Value(3), 1) {
		t.Fatalf("f64 column built as %v", f)
	}
	if u := want.Column(7).(*array.Uint64); u.Value(0) != math.MaxUint64 {
		t.Fatalf("u64 column built as %v", u)
	}

	var jsonl bytes.Buffer
	if err := rowjson.WriteJSONL(&jsonl, want); err != nil {
		t.Fatal(err)
	}
	got := importAll(t, mem, jsonl.Bytes(), Options{Name: "scan.jsonl", Schema: roundTripSchema, BatchSize: 3})
	defer got.Release()
	compareRecords(t, want, got, jsonl.String())
}

// TestScanImportRoundTripInferred is TestScanImportRoundTrip without a
// schema, for the columns whose type inference recovers: int64, uint64
// (integers beyond int64), float64 (NaN, ±Inf, -0 among numbers), bool,
// utf8 (a string "NaN" among strings stays one), lists and structs of them.
func TestScanImportRoundTripInferred(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "st", Type: arrow.StructOf(
			arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			arrow.Field{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		), Nullable: true},
	}, nil)
	want, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(`[
		{"i64": -9223372036854775808, "u64": 18446744073709551615, "f64": "NaN", "b": true, "s": "NaN",
		 "l": ["+Inf", 1.5, -0.0, "NaN"], "st": {"f": "-Inf", "u": 9223372036854775808}},
		{"i64": 9223372036854775807, "u64": 0, "f64": -0.0, "b": false, "s": "Infinity", "l": [], "st": {"f": 0.1, "u": 1}},
		{"i64": 9007199254740993, "u64": 9223372036854775808, "f64": "+Inf", "s": "x", "l": [-0.0], "st": null},
		{"f64": "-Inf"},
		{"f64": 5e-324, "l": [null]},
		{"f64": 2.5}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	var jsonl bytes.Buffer
	if err := rowjson.WriteJSONL(&jsonl, want); err != nil {
		t.Fatal(err)
	}
	got := importAll(t, mem, jsonl.Bytes(), Options{Name: "scan.jsonl", BatchSize: 4})
	defer got.Release()
	if !got.Schema().Equal(schema) {
		t.Fatalf("inferred schema:\n%s\nwant:\n%s", got.Schema(), schema)
	}
	compareRecords(t, want, got, jsonl.String())
}

// TestFloatBitsRoundTrip sends every float16, and a seeded sample of
// float32 and float64 bit patterns (with their edges), through rowjson and
// the importer: each must come back with the same bits, or, for a NaN, as
// a NaN (rowjson prints every NaN as "NaN", so payloads are not kept).
func TestFloatBitsRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(22, 6))
	const n = 1 << 16
	b16 := array.NewFloat16Builder(mem)
	b32 := array.NewFloat32Builder(mem)
	b64 := array.NewFloat64Builder(mem)
	edges32 := []uint32{0, 1, 0x7fffff, 0x800000, 0x7f7fffff, 0x7f800000, 0x3f800001, 0x4b800001}
	edges64 := []uint64{0, 1, 0xfffffffffffff, 0x10000000000000, 0x7fefffffffffffff, 0x7ff0000000000000, 0x3ff0000000000001, 0x4340000000000001}
	for i := range n {
		b16.Append(float16.FromBits(uint16(i)))
		x32, x64 := rng.Uint32(), rng.Uint64()
		if e := i / 2; e < len(edges32) {
			x32, x64 = edges32[e]|uint32(i%2)<<31, edges64[e]|uint64(i%2)<<63
		}
		b32.Append(math.Float32frombits(x32))
		b64.Append(math.Float64frombits(x64))
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "h", Type: arrow.FixedWidthTypes.Float16},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	cols := []arrow.Array{b16.NewArray(), b32.NewArray(), b64.NewArray()}
	b16.Release()
	b32.Release()
	b64.Release()
	want := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	defer want.Release()
	var jsonl bytes.Buffer
	if err := rowjson.WriteJSONL(&jsonl, want); err != nil {
		t.Fatal(err)
	}
	got := importAll(t, mem, jsonl.Bytes(), Options{Name: "floats.jsonl", Schema: schema})
	defer got.Release()
	lines := strings.Split(jsonl.String(), "\n")
	bad := 0
	for r := range n {
		w16, g16 := want.Column(0).(*array.Float16).Value(r), got.Column(0).(*array.Float16).Value(r)
		w32, g32 := want.Column(1).(*array.Float32).Value(r), got.Column(1).(*array.Float32).Value(r)
		w64, g64 := want.Column(2).(*array.Float64).Value(r), got.Column(2).(*array.Float64).Value(r)
		same := (w16.Uint16() == g16.Uint16() || w16.IsNaN() && g16.IsNaN()) &&
			(math.Float32bits(w32) == math.Float32bits(g32) || w32 != w32 && g32 != g32) &&
			(math.Float64bits(w64) == math.Float64bits(g64) || math.IsNaN(w64) && math.IsNaN(g64))
		if !same {
			if bad++; bad <= 10 {
				t.Errorf("row %d %s: got %#04x %#08x %#016x, want %#04x %#08x %#016x", r, lines[r],
					g16.Uint16(), math.Float32bits(g32), math.Float64bits(g64), w16.Uint16(), math.Float32bits(w32), math.Float64bits(w64))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d rows differ", bad, n)
	}
}

// importAll imports data and concatenates its batches into one record.
func importAll(t *testing.T, mem memory.Allocator, data []byte, o Options) arrow.RecordBatch {
	t.Helper()
	o.Allocator = mem
	rr, err := Open(context.Background(), bytes.NewReader(data), o)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	if err := rr.Err(); err != nil {
		t.Fatalf("import: %v", err)
	}
	tbl := array.NewTableFromRecords(rr.Schema(), recs)
	defer tbl.Release()
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		cols[i] = c
	}
	return array.NewRecordBatch(rr.Schema(), cols, tbl.NumRows())
}

// compareRecords fails t for every value of got that is not identical to
// the one in want: floats by their bits (every NaN here is strconv's), the
// rest with array.SliceEqual.
func compareRecords(t *testing.T, want, got arrow.RecordBatch, jsonl string) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Fatalf("got %d rows × %d columns, want %d × %d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	bad := 0
	for c := range int(want.NumCols()) {
		name := want.Schema().Field(c).Name
		for r := range int(want.NumRows()) {
			if d := diffValue(want.Column(c), got.Column(c), r, r); d != "" {
				bad++
				t.Errorf("row %d column %s%s", r, name, d)
			}
		}
	}
	if bad > 0 {
		t.Logf("the JSON lines:\n%s", jsonl)
	}
}

// diffValue describes how element j of got differs from element i of want,
// or returns "".
func diffValue(want, got arrow.Array, i, j int) string {
	if !arrow.TypeEqual(want.DataType(), got.DataType()) {
		return fmt.Sprintf(": type %s, want %s", got.DataType(), want.DataType())
	}
	if want.IsNull(i) || got.IsNull(j) {
		if want.IsNull(i) != got.IsNull(j) {
			return fmt.Sprintf(": null %v, want null %v", got.IsNull(j), want.IsNull(i))
		}
		return ""
	}
	bits := func(w, g uint64) string {
		if w != g {
			return fmt.Sprintf(": bits %#x, want %#x", g, w)
		}
		return ""
	}
	switch w := want.(type) {
	case *array.Float16:
		return bits(uint64(w.Value(i).Uint16()), uint64(got.(*array.Float16).Value(j).Uint16()))
	case *array.Float32:
		return bits(uint64(math.Float32bits(w.Value(i))), uint64(math.Float32bits(got.(*array.Float32).Value(j))))
	case *array.Float64:
		return bits(math.Float64bits(w.Value(i)), math.Float64bits(got.(*array.Float64).Value(j)))
	case *array.Struct:
		g := got.(*array.Struct)
		for k := range w.NumField() {
			if d := diffValue(w.Field(k), g.Field(k), i, j); d != "" {
				return "." + w.DataType().(*arrow.StructType).Field(k).Name + d
			}
		}
		return ""
	case array.ListLike: // lists, fixed-size lists and maps
		g := got.(array.ListLike)
		ws, we := w.ValueOffsets(i)
		gs, ge := g.ValueOffsets(j)
		if we-ws != ge-gs {
			return fmt.Sprintf(": %d items, want %d", ge-gs, we-ws)
		}
		for k := range int(we - ws) {
			if d := diffValue(w.ListValues(), g.ListValues(), int(ws)+k, int(gs)+k); d != "" {
				return fmt.Sprintf("[%d]%s", k, d)
			}
		}
		return ""
	}
	if !array.SliceEqual(want, int64(i), int64(i+1), got, int64(j), int64(j+1)) {
		return fmt.Sprintf(": %v, want %v", got.GetOneForMarshal(j), want.GetOneForMarshal(i))
	}
	return ""
}

// TestLossyNumbersRefused checks that a number no column of its type can
// hold is an error naming the file, the line and the field, never an
// infinity, a wrapped integer or a rounded float64.
func TestLossyNumbersRefused(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "lf32", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true}), Nullable: true},
	}, nil)
	ok := "{\"f64\": 1}\n"
	cases := []struct {
		name, in string
		schema   *arrow.Schema
		want     string
	}{
		{"x.jsonl", ok + `{"f64": 1e400}`, schema, `x.jsonl line 2, column "f64": number 1e400 is out of range for float64`},
		{"x.jsonl", ok + `{"f64": -1e400}`, schema, `x.jsonl line 2, column "f64": number -1e400 is out of range for float64`},
		{"x.jsonl", ok + `{"f64": "1e400"}`, schema, `x.jsonl line 2, column "f64": string "1e400" is out of range for float64`},
		{"x.jsonl", ok + `{"f32": 1e39}`, schema, `x.jsonl line 2, column "f32": number 1e39 is out of range for float32`},
		{"x.jsonl", ok + `{"f32": -3.5e38}`, schema, `x.jsonl line 2, column "f32": number -3.5e38 is out of range for float32`},
		{"x.jsonl", ok + `{"f16": 65520}`, schema, `x.jsonl line 2, column "f16": number 65520 is out of range for float16`},
		{"x.jsonl", ok + `{"f16": -1e5}`, schema, `x.jsonl line 2, column "f16": number -1e5 is out of range for float16`},
		{"x.jsonl", ok + `{"i64": 9223372036854775808}`, schema, `x.jsonl line 2, column "i64": number 9223372036854775808 is out of range for int64`},
		{"x.jsonl", ok + `{"i64": -9223372036854775809}`, schema, `x.jsonl line 2, column "i64": number -9223372036854775809 is out of range for int64`},
		{"x.jsonl", ok + `{"u64": 18446744073709551616}`, schema, `x.jsonl line 2, column "u64": number 18446744073709551616 is out of range for uint64`},
		{"x.jsonl", ok + `{"u64": -1}`, schema, `x.jsonl line 2, column "u64": number -1 is out of range for uint64`},
		{"x.jsonl", ok + `{"i8": 128}`, schema, `x.jsonl line 2, column "i8": number 128 is out of range for int8`},
		{"x.jsonl", ok + `{"i64": NaN}`, schema, `x.jsonl line 2, column "i64": want an int64, got number NaN`},
		{"x.jsonl", ok + `{"u64": -Infinity}`, schema, `x.jsonl line 2, column "u64": want a uint64, got number -Infinity`},
		{"x.jsonl", ok + `{"lf32": [1, 1e39]}`, schema, `x.jsonl line 2, column "lf32": at [1]: number 1e39 is out of range for float32`},
		{"x.jsonl", ok + `{"st": {"f": 1e400}}`, schema, `x.jsonl line 2, column "st": at .f: number 1e400 is out of range for float64`},
		// Inferred schemas.
		{"x.jsonl", `{"a": 1.5}` + "\n" + `{"a": 1e400}`, nil, `x.jsonl line 2, column "a": number 1e400 is out of range for float64`},
		{"x.jsonl", `{"a": 1}` + "\n" + `{"a": 18446744073709551616}`, nil,
			`x.jsonl line 2, column "a": integer 18446744073709551616 fits neither int64 nor uint64`},
		{"x.jsonl", `{"a": -1}` + "\n" + `{"a": 9223372036854775808}`, nil,
			`x.jsonl line 2, column "a": integer 9223372036854775808 exceeds int64, and the negative -1 on line 1 rules out uint64`},
		{"x.jsonl", `{"a": 9223372036854775808}` + "\n" + `{"a": -9223372036854775808}`, nil,
			`x.jsonl line 1, column "a": integer 9223372036854775808 exceeds int64, and the negative -9223372036854775808 on line 2 rules out uint64`},
		{"x.jsonl", `{"s": {"v": [1]}}` + "\n" + `{"s": {"v": [-99999999999999999999]}}`, nil,
			`x.jsonl line 2, column "s": at .v[]: integer -99999999999999999999 fits neither int64 nor uint64`},
		{"x.csv", "a\n1.5\n1e400\n", nil, `x.csv line 3, column "a": string "1e400" is out of range for float64`},
		{"x.csv", "f32,f64\n1e39,\n", schema, `x.csv line 2, column "f32": string "1e39" is out of range for float32`},
	}
	for _, c := range cases {
		_, _, err := readAll(t, []byte(c.in), Options{Name: c.name, Schema: c.schema})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s %q: error %v, want one containing %q", c.name, c.in, err, c.want)
		}
	}
}

// TestExactNumbersAccepted is the other side of TestLossyNumbersRefused:
// what a column's type holds is accepted, including the spellings of NaN
// and ±Inf, and inference picks the type that holds every value.
func TestExactNumbersAccepted(t *testing.T) {
	cases := []struct {
		name, in string
		schema   *arrow.Schema
		types    string // the columns' types
		rows     string // as rowjson prints them
	}{
		{"x.jsonl", `{"a": 9223372036854775808}` + "\n" + `{"a": 1}` + "\n" + `{"a": -0}`, nil,
			"uint64", `{"a":9223372036854775808}` + "\n" + `{"a":1}` + "\n" + `{"a":0}`},
		{"x.jsonl", `{"a": 1}` + "\n" + `{"a": "NaN"}` + "\n" + `{"a": "-Infinity"}` + "\n" + `{"a": "Infinity"}` + "\n" + `{"a": -0.0}`, nil,
			"float64", `{"a":1}` + "\n" + `{"a":"NaN"}` + "\n" + `{"a":"-Infinity"}` + "\n" + `{"a":"Infinity"}` + "\n" + `{"a":-0.0}`},
		{"x.jsonl", `{"a": "NaN"}` + "\n" + `{"a": [2.5, "+Inf"]}`, nil, "", ""}, // a mismatch, checked below
		// The bare tokens of Python's json and DuckDB are numbers even alone.
		{"x.jsonl", `{"a": NaN, "l": [Infinity]}` + "\n" + `{"a": -Infinity, "l": [1, NaN]}`, nil,
			"float64 list<item: float64, nullable>", `{"a":"NaN","l":["Infinity"]}` + "\n" + `{"a":"-Infinity","l":[1,"NaN"]}`},
		// Only strings: a string column, "NaN" and all.
		{"x.jsonl", `{"a": "NaN"}` + "\n" + `{"a": "Infinity"}`, nil, "utf8", `{"a":"NaN"}` + "\n" + `{"a":"Infinity"}`},
		{"x.jsonl", `{"a": "NaN"}` + "\n" + `{"a": "x"}`, nil, "utf8", `{"a":"NaN"}` + "\n" + `{"a":"x"}`},
		// A float column converts integers of any size (rounding them).
		{"x.jsonl", `{"a": 1.5}` + "\n" + `{"a": 18446744073709551616}`, nil, "float64", `{"a":1.5}` + "\n" + `{"a":18446744073709552000}`},
		{"x.jsonl", `{"l": [1, "NaN"]}` + "\n" + `{"l": [-1e-400]}`, nil, "list<item: float64, nullable>", `{"l":[1,"NaN"]}` + "\n" + `{"l":[-0.0]}`},
		// CSV cells are text: integers no integer type holds stay text,
		// exactly (ids, barcodes), as any other cell no type holds.
		{"x.csv", "a,b\n-1,1\n9223372036854775808,18446744073709551616\n", nil,
			"utf8 utf8", `{"a":"-1","b":"1"}` + "\n" + `{"a":"9223372036854775808","b":"18446744073709551616"}`},
		{"x.csv", "a,b,c\n18446744073709551615,NaN,1\n1,-Infinity,inf\n", nil,
			"uint64 float64 float64", `{"a":18446744073709551615,"b":"NaN","c":1}` + "\n" + `{"a":1,"b":"-Infinity","c":"Infinity"}`},
		{"x.jsonl", `{"f32": "NaN", "f16": "-Infinity", "u": 18446744073709551615}` + "\n" + `{"f32": 3.4028235e38, "f16": 65519, "u": "18446744073709551615"}`,
			arrow.NewSchema([]arrow.Field{
				{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
				{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true},
				{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
			}, nil),
			"float32 float16 uint64", `{"f32":"NaN","f16":"-Infinity","u":18446744073709551615}` + "\n" + `{"f32":3.4028234663852886e+38,"f16":65504,"u":18446744073709551615}`},
	}
	for _, c := range cases {
		schema, rows, err := readAll(t, []byte(c.in), Options{Name: c.name, Schema: c.schema})
		if c.types == "" {
			if err == nil || !strings.Contains(err.Error(), `x.jsonl line 2, column "a": an array here but a string on line 1`) {
				t.Errorf("%q: error %v", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", c.name, c.in, err)
			continue
		}
		var types []string
		for _, f := range schema.Fields() {
			types = append(types, f.Type.String())
		}
		if got := strings.Join(types, " "); got != c.types {
			t.Errorf("%s %q: types %s, want %s", c.name, c.in, got, c.types)
		}
		if rows != c.rows+"\n" {
			t.Errorf("%s %q: rows\n%s\nwant\n%s", c.name, c.in, rows, c.rows)
		}
	}
}
