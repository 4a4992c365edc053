package rowjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// fromJSON builds an array with arrow-go's JSON reader, which is independent
// of the encoder under test.
func fromJSON(t *testing.T, mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	if err != nil {
		t.Fatalf("FromJSON(%s, %s): %v", dt, js, err)
	}
	return arr
}

// encodeAll prints every element of arr.
func encodeAll(t *testing.T, arr arrow.Array) []string {
	t.Helper()
	out := make([]string, arr.Len())
	for i := range out {
		b, err := AppendValue(nil, arr, i)
		if err != nil {
			t.Fatalf("AppendValue(%s, %d): %v", arr.DataType(), i, err)
		}
		out[i] = string(b)
	}
	return out
}

func checkElems(t *testing.T, name string, arr arrow.Array, want []string) {
	t.Helper()
	got := encodeAll(t, arr)
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d: %q", name, len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s[%d] = %s, want %s", name, i, got[i], want[i])
		}
		if !json.Valid([]byte(got[i])) {
			t.Errorf("%s[%d] = %s is not valid JSON", name, i, got[i])
		}
	}
}

func TestFromJSONTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	kv := arrow.StructOf(arrow.Field{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	nested := arrow.StructOf(
		arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "inner", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			arrow.Field{Name: "ys", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		), Nullable: true},
		arrow.Field{Name: "kv", Type: arrow.ListOf(kv), Nullable: true},
	)

	tests := []struct {
		name string
		dt   arrow.DataType
		in   string
		want []string
	}{
		{"int8", arrow.PrimitiveTypes.Int8, `[-128, 127, 0, null]`, []string{"-128", "127", "0", "null"}},
		{"int16", arrow.PrimitiveTypes.Int16, `[-32768, 32767, null]`, []string{"-32768", "32767", "null"}},
		{"int32", arrow.PrimitiveTypes.Int32, `[-2147483648, 2147483647, null]`, []string{"-2147483648", "2147483647", "null"}},
		{"int64", arrow.PrimitiveTypes.Int64, `[-9223372036854775808, 9223372036854775807, 9007199254740993, null]`,
			[]string{"-9223372036854775808", "9223372036854775807", "9007199254740993", "null"}},
		{"uint8", arrow.PrimitiveTypes.Uint8, `[0, 255, null]`, []string{"0", "255", "null"}},
		{"uint16", arrow.PrimitiveTypes.Uint16, `[65535, null]`, []string{"65535", "null"}},
		{"uint32", arrow.PrimitiveTypes.Uint32, `[4294967295, null]`, []string{"4294967295", "null"}},
		{"uint64", arrow.PrimitiveTypes.Uint64, `[18446744073709551615, 0, null]`, []string{"18446744073709551615", "0", "null"}},
		// float32 values are widened exactly, then printed as JavaScript prints the float64.
		{"float32", arrow.PrimitiveTypes.Float32, `[0.7, 3.4028234663852886e38, 1e-30, -0.5, 0, null]`,
			[]string{"0.699999988079071", "3.4028234663852886e+38", "1.0000000031710769e-30", "-0.5", "0", "null"}},
		{"float64", arrow.PrimitiveTypes.Float64,
			`[3.141592653589793, 1e300, -1e-300, 1e21, 1e20, 1.5e-7, 0.000001, 123.456, -2, null]`,
			[]string{"3.141592653589793", "1e+300", "-1e-300", "1e+21", "100000000000000000000", "1.5e-7", "0.000001", "123.456", "-2", "null"}},
		{"bool", arrow.FixedWidthTypes.Boolean, `[true, false, null]`, []string{"true", "false", "null"}},
		{"utf8", arrow.BinaryTypes.String, `["", "héllo wörld 🌍", "q\"b\\n\nt\t\u0001\u001f\u007f <>& \u2028", null]`,
			[]string{`""`, `"héllo wörld 🌍"`, `"q\"b\\n\nt\t\u0001\u001f` + "\x7f <>& \u2028" + `"`, "null"}},
		{"large_utf8", arrow.BinaryTypes.LargeString, `["L_1_x", null]`, []string{`"L_1_x"`, "null"}},
		{"utf8_view", arrow.BinaryTypes.StringView, `["short", "a string longer than twelve bytes", null]`,
			[]string{`"short"`, `"a string longer than twelve bytes"`, "null"}},
		{"date32", arrow.FixedWidthTypes.Date32, `[19000, -1, null]`, []string{"19000", "-1", "null"}},
		{"decimal128(12,3)", &arrow.Decimal128Type{Precision: 12, Scale: 3},
			`["-61728.350", "-999999999.999", "0.005", "0", "-0.001", "12.3", null]`,
			[]string{`"-61728.350"`, `"-999999999.999"`, `"0.005"`, `"0.000"`, `"-0.001"`, `"12.300"`, "null"}},
		{"decimal128(38,2) beyond int64", &arrow.Decimal128Type{Precision: 38, Scale: 2},
			`["123456789012345678901234567890.12", "-123456789012345678901234567890.12", "-92233720368547758.08"]`,
			[]string{`"123456789012345678901234567890.12"`, `"-123456789012345678901234567890.12"`, `"-92233720368547758.08"`}},
		{"decimal128(10,0)", &arrow.Decimal128Type{Precision: 10, Scale: 0}, `["42", "-7", "0"]`, []string{`"42"`, `"-7"`, `"0"`}},
		{"decimal256(76,10)", &arrow.Decimal256Type{Precision: 76, Scale: 10},
			`["-1234567890123456789012345678901234567890.0123456789", "1.5", null]`,
			[]string{`"-1234567890123456789012345678901234567890.0123456789"`, `"1.5000000000"`, "null"}},
		{"list<int32>", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1, null, 3], [], null, [null]]`,
			[]string{"[1,null,3]", "[]", "null", "[null]"}},
		{"large_list<utf8>", arrow.LargeListOf(arrow.BinaryTypes.String), `[["t1_0", null, ""], null]`,
			[]string{`["t1_0",null,""]`, "null"}},
		{"fixed_size_list<float32,3>", arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32), `[[1, null, 0.7], null, [0, -1, 2.5]]`,
			[]string{"[1,null,0.699999988079071]", "null", "[0,-1,2.5]"}},
		{"list<list<int32>>", arrow.ListOf(arrow.ListOf(arrow.PrimitiveTypes.Int32)), `[[[10], null, []], null]`,
			[]string{"[[10],null,[]]", "null"}},
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}),
			`[{"a": 2, "b": "b1"}, null, {"a": null, "b": null}]`,
			[]string{`{"a":2,"b":"b1"}`, "null", `{"a":null,"b":null}`}},
		{"nested", nested,
			`[{"name": "n1", "inner": {"x": 0.25, "ys": [100]}, "kv": []},
			  {"name": null, "inner": null, "kv": null},
			  null,
			  {"name": "n3", "inner": {"x": null, "ys": null}, "kv": [{"k": "k0", "v": 3}, {"k": null, "v": null}, null]}]`,
			[]string{
				`{"name":"n1","inner":{"x":0.25,"ys":[100]},"kv":[]}`,
				`{"name":null,"inner":null,"kv":null}`,
				"null",
				`{"name":"n3","inner":{"x":null,"ys":null},"kv":[{"k":"k0","v":3},{"k":null,"v":null},null]}`,
			}},
		{"map<utf8,int32>", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
			`[[{"key": "m0", "value": 0}, {"key": "m1", "value": null}], [], null]`,
			[]string{`[["m0",0],["m1",null]]`, "[]", "null"}},
		{"null", arrow.Null, `[null, null]`, []string{"null", "null"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arr := fromJSON(t, mem, tc.dt, tc.in)
			defer arr.Release()
			checkElems(t, tc.name, arr, tc.want)
		})
	}
}

func TestBuiltTypes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	t.Run("float64 specials", func(t *testing.T) {
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		b.AppendValues([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 5e-324, math.MaxFloat64}, nil)
		arr := b.NewArray()
		defer arr.Release()
		// NaN, ±Inf and -0, which JSON.stringify prints as null and 0,
		// print so that they read back as themselves.
		checkElems(t, "float64", arr, []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, "-0.0", "5e-324", "1.7976931348623157e+308"})
	})
	t.Run("float32 and float16 specials", func(t *testing.T) {
		b32 := array.NewFloat32Builder(mem)
		defer b32.Release()
		b32.AppendValues([]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}, nil)
		a32 := b32.NewArray()
		defer a32.Release()
		checkElems(t, "float32", a32, []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, "-0.0"})
		b16 := array.NewFloat16Builder(mem)
		defer b16.Release()
		b16.AppendValues([]float16.Num{float16.NaN(), float16.Inf(), float16.Inf().Negate(), float16.New(0).Negate()}, nil)
		a16 := b16.NewArray()
		defer a16.Release()
		checkElems(t, "float16", a16, []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, "-0.0"})
	})
	t.Run("float16", func(t *testing.T) {
		b := array.NewFloat16Builder(mem)
		defer b.Release()
		b.Append(float16.New(65504))
		b.Append(float16.New(-6.25))
		b.Append(float16.New(0.1)) // nearest float16 is 0.0999755859375
		b.AppendNull()
		b.Append(float16.FromBits(0x0001)) // subnormals: 2^-24, which Num.Float32 misreads
		b.Append(float16.FromBits(0x83ff)) // -(2^-14 - 2^-24)
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "float16", arr, []string{"65504", "-6.25", "0.0999755859375", "null", "5.960464477539063e-8", "-0.00006097555160522461"})
	})
	t.Run("invalid utf8", func(t *testing.T) {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.Append("a\xffb")
		b.Append("\xed\xa0\x80") // an encoded surrogate is not UTF-8 either
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "utf8", arr, []string{"\"a\uFFFDb\"", "\"\uFFFD\uFFFD\uFFFD\""})
	})
	t.Run("binary", func(t *testing.T) {
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Append([]byte{0x1f, 0x22, 0x25})
		b.Append([]byte{})
		b.AppendNull()
		b.Append([]byte{0x1f, 0x24, 0x29, 0x2e, 0x33})
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "binary", arr, []string{`"HyIl"`, `""`, "null", `"HyQpLjM="`})
	})
	t.Run("large_binary", func(t *testing.T) {
		b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary)
		defer b.Release()
		b.Append([]byte{0xff, 0xfe})
		b.AppendNull()
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "large_binary", arr, []string{`"//4="`, "null"})
	})
	t.Run("binary_view", func(t *testing.T) {
		b := array.NewBinaryViewBuilder(mem)
		defer b.Release()
		b.Append([]byte("0123456789abcdef"))
		b.AppendNull()
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "binary_view", arr, []string{`"MDEyMzQ1Njc4OWFiY2RlZg=="`, "null"})
	})
	t.Run("fixed_size_binary", func(t *testing.T) {
		b := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 16})
		defer b.Release()
		v := make([]byte, 16)
		for j := range v {
			v[j] = byte(16 + j)
		}
		b.Append(v)
		b.AppendNull()
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "fsb16", arr, []string{`"EBESExQVFhcYGRobHB0eHw=="`, "null"})
	})
	t.Run("temporal", func(t *testing.T) {
		cases := []struct {
			dt   arrow.DataType
			vals []int64
			want []string
		}{
			{arrow.FixedWidthTypes.Date64, []int64{1641600000000, -86400000}, []string{"1641600000000", "-86400000"}},
			{&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, []int64{-1234567, 1700000000000000}, []string{"-1234567", "1700000000000000"}},
			{&arrow.TimestampType{Unit: arrow.Nanosecond}, []int64{1700000001111111110}, []string{"1700000001111111110"}},
			{arrow.FixedWidthTypes.Time32s, []int64{86399}, []string{"86399"}},
			{arrow.FixedWidthTypes.Time64ns, []int64{86399999999999}, []string{"86399999999999"}},
			{arrow.FixedWidthTypes.Duration_ms, []int64{-5, math.MaxInt64}, []string{"-5", "9223372036854775807"}},
		}
		for _, c := range cases {
			b := array.NewBuilder(mem, c.dt)
			for _, v := range c.vals {
				switch bb := b.(type) {
				case *array.Date64Builder:
					bb.Append(arrow.Date64(v))
				case *array.TimestampBuilder:
					bb.Append(arrow.Timestamp(v))
				case *array.Time32Builder:
					bb.Append(arrow.Time32(v))
				case *array.Time64Builder:
					bb.Append(arrow.Time64(v))
				case *array.DurationBuilder:
					bb.Append(arrow.Duration(v))
				default:
					t.Fatalf("no builder case for %s", c.dt)
				}
			}
			b.AppendNull()
			arr := b.NewArray()
			b.Release()
			checkElems(t, c.dt.String(), arr, append(c.want, "null"))
			arr.Release()
		}
	})
	t.Run("decimal negative scale", func(t *testing.T) {
		b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 5, Scale: -2})
		defer b.Release()
		b.Append(decimal128.FromI64(123))
		b.Append(decimal128.FromI64(-4))
		b.Append(decimal128.FromI64(0))
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "decimal128(5,-2)", arr, []string{`"12300"`, `"-400"`, `"0"`})
	})
	t.Run("decimal32 and decimal64", func(t *testing.T) {
		b32 := array.NewDecimal32Builder(mem, &arrow.Decimal32Type{Precision: 9, Scale: 2})
		defer b32.Release()
		b32.Append(decimal.Decimal32(-12345))
		b32.Append(decimal.Decimal32(7))
		a32 := b32.NewArray()
		defer a32.Release()
		checkElems(t, "decimal32(9,2)", a32, []string{`"-123.45"`, `"0.07"`})

		b64 := array.NewDecimal64Builder(mem, &arrow.Decimal64Type{Precision: 18, Scale: 4})
		defer b64.Release()
		b64.Append(decimal.Decimal64(math.MinInt64))
		b64.AppendNull()
		a64 := b64.NewArray()
		defer a64.Release()
		checkElems(t, "decimal64(18,4)", a64, []string{`"-922337203685477.5808"`, "null"})
	})
	t.Run("dictionary", func(t *testing.T) {
		dict := fromJSON(t, mem, arrow.BinaryTypes.String, `["red", "green", null, ""]`)
		defer dict.Release()
		idx := fromJSON(t, mem, arrow.PrimitiveTypes.Int32, `[0, 1, null, 2, 3, 1]`)
		defer idx.Release()
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
		arr := array.NewDictionaryArray(dt, idx, dict)
		defer arr.Release()
		// A null index and an index pointing at a null entry both print null.
		checkElems(t, "dictionary", arr, []string{`"red"`, `"green"`, "null", "null", `""`, `"green"`})
	})
	t.Run("run_end_encoded", func(t *testing.T) {
		b := array.NewRunEndEncodedBuilder(mem, arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String)
		defer b.Release()
		vb := b.ValueBuilder().(*array.StringBuilder)
		b.Append(2)
		vb.Append("aa")
		b.AppendNull()
		b.Append(1)
		vb.Append("b")
		arr := b.NewArray()
		defer arr.Release()
		checkElems(t, "ree", arr, []string{`"aa"`, `"aa"`, "null", `"b"`})
	})
	t.Run("extension prints its storage", func(t *testing.T) {
		storage := fromJSON(t, mem, arrow.PrimitiveTypes.Int8, `[1, 0, null]`)
		defer storage.Release()
		arr := array.NewExtensionArrayWithStorage(extensions.NewBool8Type(), storage)
		defer arr.Release()
		checkElems(t, "bool8", arr, []string{"1", "0", "null"})
	})
	t.Run("map with nested value", func(t *testing.T) {
		dt := arrow.MapOf(arrow.PrimitiveTypes.Int64, arrow.ListOf(arrow.BinaryTypes.String))
		arr := fromJSON(t, mem, dt, `[[{"key": 9007199254740993, "value": ["x", null]}, {"key": -1, "value": null}]]`)
		defer arr.Release()
		checkElems(t, "map", arr, []string{`[[9007199254740993,["x",null]],[-1,null]]`})
	})
}

// Sliced arrays carry an offset that every nested reader must honour.
func TestSlicedArrays(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	cases := []struct {
		name string
		dt   arrow.DataType
		in   string
		want []string // elements 1..3 of the input
	}{
		{"list", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[0], [1, 2], null, [], [4]]`, []string{"[1,2]", "null", "[]"}},
		{"fixed_size_list", arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16), `[[0, 0], [1, 2], null, [3, null], [4, 4]]`,
			[]string{"[1,2]", "null", "[3,null]"}},
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "s", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}),
			`[{"a": 0, "s": ["z"]}, {"a": 1, "s": ["x", null]}, null, {"a": null, "s": []}, {"a": 4, "s": null}]`,
			[]string{`{"a":1,"s":["x",null]}`, "null", `{"a":null,"s":[]}`}},
		{"map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
			`[[{"key": "a", "value": 0}], [{"key": "b", "value": 1}], null, [], [{"key": "e", "value": 4}]]`,
			[]string{`[["b",1]]`, "null", "[]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			arr := fromJSON(t, mem, tc.dt, tc.in)
			defer arr.Release()
			sl := array.NewSlice(arr, 1, 4)
			defer sl.Release()
			checkElems(t, tc.name, sl, tc.want)
		})
	}
}

func TestUnsupported(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	b := array.NewMonthIntervalBuilder(mem)
	defer b.Release()
	b.Append(arrow.MonthInterval(3))
	b.AppendNull()
	arr := b.NewArray()
	defer arr.Release()
	for i := 0; i < arr.Len(); i++ { // the null must fail as well
		out, err := AppendValue([]byte("keep"), arr, i)
		if !errors.Is(err, lancer.ErrUnsupported) {
			t.Fatalf("element %d: err = %v, want ErrUnsupported", i, err)
		}
		if !strings.Contains(err.Error(), "month_interval") {
			t.Errorf("error %q does not name the type", err)
		}
		if string(out) != "keep" {
			t.Errorf("dst changed on error: %q", out)
		}
	}

	lt := arrow.ListOf(arrow.FixedWidthTypes.MonthInterval)
	if err := CheckType(lt); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("CheckType(%s) = %v, want ErrUnsupported", lt, err)
	}
	if err := CheckType(arrow.MapOf(arrow.BinaryTypes.String, arrow.ListOf(arrow.PrimitiveTypes.Float32))); err != nil {
		t.Errorf("CheckType(map) = %v", err)
	}

	_, err := AppendValue(nil, arr, 2)
	if !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("out of range index: err = %v, want ErrInvalidArgument", err)
	}
}

// TestDecimalScaleBound: a decimal prints with up to |scale| zeros, and the
// scale comes from a file, so a scale beyond Arrow's (an int8 in Lance's
// Rust Arrow) is refused, null or not, rather than printed.
func TestDecimalScaleBound(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	decimals := func(scale int32) []arrow.Array { // 5 and null, in 128 and 256 bits
		b128 := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: scale})
		defer b128.Release()
		b128.Append(decimal128.FromI64(5))
		b128.AppendNull()
		b256 := array.NewDecimal256Builder(mem, &arrow.Decimal256Type{Precision: 76, Scale: scale})
		defer b256.Release()
		b256.Append(decimal256.FromI64(5))
		b256.AppendNull()
		return []arrow.Array{b128.NewArray(), b256.NewArray()}
	}
	for _, scale := range []int32{-129, 128, -1 << 30, 1 << 30} {
		for _, arr := range decimals(scale) {
			for i := range arr.Len() {
				out, err := AppendValue([]byte("keep"), arr, i)
				if !errors.Is(err, lancer.ErrUnsupported) || string(out) != "keep" {
					t.Errorf("%s element %d: %.40q, %v; want ErrUnsupported", arr.DataType(), i, out, err)
				}
			}
			if err := CheckType(arr.DataType()); !errors.Is(err, lancer.ErrUnsupported) {
				t.Errorf("CheckType(%s) = %v, want ErrUnsupported", arr.DataType(), err)
			}
			arr.Release()
		}
	}
	for _, scale := range []int32{-128, 127} {
		for _, arr := range decimals(scale) {
			out, err := AppendValue(nil, arr, 0)
			// "5" then 128 zeros, or "0." then 126 zeros and "5", in quotes.
			if err != nil || len(out) != 2+129 {
				t.Errorf("%s: %.40s (%d bytes), %v", arr.DataType(), out, len(out), err)
			}
			arr.Release()
		}
	}
}

func newRecord(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatalf("RecordFromJSON: %v", err)
	}
	return rec
}

func TestAppendRowAndWriteJSONL(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "label \"quoted\"", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "_rowid", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	rec := newRecord(t, mem, schema, `[
		{"id": 1, "label \"quoted\"": "row-1", "vec": [1, 1.5], "_rowid": 1},
		{"id": 9223372036854775807, "label \"quoted\"": null, "vec": null, "_rowid": 8589934609}
	]`)
	defer rec.Release()

	want := []string{
		`{"id":1,"label \"quoted\"":"row-1","vec":[1,1.5],"_rowid":1}`,
		`{"id":9223372036854775807,"label \"quoted\"":null,"vec":null,"_rowid":8589934609}`,
	}
	var buf []byte
	for r := range want {
		var err error
		start := len(buf)
		if buf, err = AppendRow(buf, rec, r); err != nil {
			t.Fatal(err)
		}
		if got := string(buf[start:]); got != want[r] {
			t.Errorf("AppendRow(%d) = %s, want %s", r, got, want[r])
		}
	}
	if _, err := AppendRow(nil, rec, 2); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("AppendRow past the end: err = %v, want ErrInvalidArgument", err)
	}

	var out bytes.Buffer
	if err := WriteJSONL(&out, rec); err != nil {
		t.Fatal(err)
	}
	if got, w := out.String(), strings.Join(want, "\n")+"\n"; got != w {
		t.Errorf("WriteJSONL:\n%s\nwant\n%s", got, w)
	}
}

func TestWriteJSONLRejectsUnsupportedColumnFirst(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.AppendValues([]int32{1, 2}, nil)
	ids := ib.NewArray()
	defer ids.Release()
	mb := array.NewMonthIntervalBuilder(mem)
	defer mb.Release()
	mb.AppendValues([]arrow.MonthInterval{1, 2}, nil)
	months := mb.NewArray()
	defer months.Release()

	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: ids.DataType()}, {Name: "months", Type: months.DataType()}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{ids, months}, 2)
	defer rec.Release()

	var out bytes.Buffer
	err := WriteJSONL(&out, rec)
	if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), `"months"`) {
		t.Fatalf("err = %v, want ErrUnsupported naming column months", err)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q before failing", out.String())
	}
	if b, err := AppendRow([]byte("x"), rec, 0); err == nil || string(b) != "x" {
		t.Errorf("AppendRow = %q, %v; want the buffer untouched and an error", b, err)
	}
}

// Every printed row must be valid JSON that encoding/json reads back to the
// same values, with int64 beyond 2^53 intact.
func TestRoundTripThroughEncodingJSON(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	rec := newRecord(t, mem, schema, `[
		{"i64": -9223372036854775808, "u64": 18446744073709551615, "f32": 0.1, "s": "tab\there \u0000 \"q\" é", "bin": "AAEC", "dec": "-1.5", "st": {"l": [9007199254740993, null]}, "m": [{"key": "k", "value": 1}]},
		{"i64": null, "u64": null, "f32": null, "s": null, "bin": null, "dec": null, "st": null, "m": null}
	]`)
	defer rec.Release()

	var out bytes.Buffer
	if err := WriteJSONL(&out, rec); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.UseNumber()
	var row map[string]any
	if err := dec.Decode(&row); err != nil {
		t.Fatalf("row 0 %s: %v", lines[0], err)
	}
	checks := map[string]string{
		"i64": "-9223372036854775808",
		"u64": "18446744073709551615",
		"f32": "0.10000000149011612",
		"s":   "tab\there \x00 \"q\" é",
		"bin": "AAEC",
		"dec": "-1.500",
	}
	for k, want := range checks {
		var got string
		switch v := row[k].(type) {
		case json.Number:
			got = v.String()
		case string:
			got = v
		}
		if got != want {
			t.Errorf("%s = %#v, want %s", k, row[k], want)
		}
	}
	if l := row["st"].(map[string]any)["l"].([]any); l[0].(json.Number) != "9007199254740993" || l[1] != nil {
		t.Errorf("st.l = %v", l)
	}
	if m := row["m"].([]any); len(m) != 1 || m[0].([]any)[0] != "k" || m[0].([]any)[1].(json.Number) != "1" {
		t.Errorf("m = %v", m)
	}
	var nulls map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &nulls); err != nil {
		t.Fatalf("row 1 %s: %v", lines[1], err)
	}
	for _, f := range schema.Fields() {
		if v, ok := nulls[f.Name]; !ok || v != nil {
			t.Errorf("row 1 %s = %v (present %v), want null", f.Name, v, ok)
		}
	}
}

func TestAppendFloatMatchesJavaScript(t *testing.T) {
	// Expected strings are what node prints for String(x) / JSON.stringify(x).
	cases := map[float64]string{
		1:                      "1",
		-1.5:                   "-1.5",
		0.1:                    "0.1",
		1e21:                   "1e+21",
		1e-7:                   "1e-7",
		1.2345e-7:              "1.2345e-7",
		123e-20:                "1.23e-18",
		999999999999999900000:  "999999999999999900000",
		float64(float32(1e-6)): "9.999999974752427e-7",
		1e-6:                   "0.000001",
		2.5e-100:               "2.5e-100",
	}
	for f, want := range cases {
		if got := string(AppendFloat(nil, f)); got != want {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func BenchmarkWriteJSONL(b *testing.B) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "small", Type: arrow.PrimitiveTypes.Int32},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	const n = 10000
	for i := 0; i < n; i++ {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		rb.Field(1).(*array.Int32Builder).Append(int32(i % 1000))
		rb.Field(2).(*array.StringBuilder).Append("row-12345-alpha-padding-padding")
		lb := rb.Field(3).(*array.FixedSizeListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(i), 0.5, -1.25, 3.3}, nil)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		if err := WriteJSONL(io.Discard, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
