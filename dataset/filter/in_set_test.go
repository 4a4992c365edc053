package filter_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset/filter"
)

// inColumn is a column of the IN test: its values, as JSON, and the
// literals a filter compares it with, which hit some of the values and
// miss others.
type inColumn struct {
	field    arrow.Field
	values   []string
	literals []string
}

var inColumns = []inColumn{
	{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		[]string{"0", "1", "-5", "7", "9223372036854775807", "-9223372036854775808"},
		[]string{"0", "1", "-5", "8", "9223372036854775807", "-9223372036854775808", "2.5", "1.0"}},
	{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		[]string{"0", "1", "-5", "7", "2147483647"},
		[]string{"0", "1", "-5", "8", "2147483647", "-2147483648", "7.5"}},
	{arrow.Field{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		[]string{"0", "1", "200", "255"},
		[]string{"0", "1", "200", "255", "3", "0.5"}},
	{arrow.Field{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		[]string{"0", "1", "18446744073709551615", "9223372036854775808"},
		[]string{"0", "2", "18446744073709551615", "9223372036854775808", "9223372036854775807"}},
	{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		[]string{"0", "-0.0", "1.5", `"NaN"`, `"+Inf"`, "2", "-7.25"},
		[]string{"0", "-0.0", "1.5", "2", "-7.25", "3", "1e308"}},
	{arrow.Field{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		[]string{"0", "-0.0", "1.5", `"NaN"`, "2", "0.1"},
		[]string{"0", "-0.0", "1.5", "2", "0.1", "3"}},
	{arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		[]string{`"a"`, `"b"`, `""`, `"it's"`, `"Ünï"`},
		[]string{"'a'", "'b'", "''", "'it''s'", "'Ünï'", "'c'", "'A'"}},
	{arrow.Field{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		[]string{`"a"`, `"b"`, `""`},
		[]string{"'a'", "'b'", "''", "'c'"}},
	{arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		[]string{`"YQ=="`, `"Yg=="`, `""`}, // a, b, empty
		[]string{"'a'", "'b'", "''", "'c'"}},
	{arrow.Field{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}, Nullable: true},
		[]string{`"YWI="`, `"Y2Q="`}, // ab, cd
		[]string{"'ab'", "'cd'", "'ef'"}},
	{arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		[]string{`"2024-01-01"`, `"2024-01-02"`, `"1970-01-01"`},
		[]string{"DATE '2024-01-01'", "'2024-01-02'", "DATE '1970-01-01'", "DATE '2000-02-29'"}},
	{arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		[]string{`"2024-01-01T00:00:00"`, `"2024-01-01T00:00:00.000001"`, `"1970-01-01T00:00:00"`},
		[]string{"TIMESTAMP '2024-01-01 00:00:00'", "'2024-01-01 00:00:00.000001'", "TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '2024-01-01 00:00:01'"}},
	{arrow.Field{Name: "tsk", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Asia/Kolkata"}, Nullable: true},
		[]string{`"2024-01-01T00:00:00Z"`, `"2023-12-31T18:30:00Z"`},
		[]string{"TIMESTAMP '2024-01-01 05:30:00'", "TIMESTAMP '2024-01-01 00:00:00Z'", "TIMESTAMP '2024-01-01 00:00:00'"}},
	{arrow.Field{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		[]string{`"1.50"`, `"-0.01"`, `"2"`, `"99999999.99"`},
		[]string{"1.5", "-0.01", "2", "99999999.99", "3", "0.001"}},
	{arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		[]string{"true", "false"},
		[]string{"TRUE", "FALSE"}},
}

// TestInSet: x IN (…) answers as x = a OR x = b OR … does (the answer IN
// had before it looked items up in a hash set), NULLs included, for every
// type, on random lists long and short, with and without NULL items, for
// IN and NOT IN, on columns and on expressions.
func TestInSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 9))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	// 300 rows, each column's value drawn from its values or null.
	const rows = 300
	fields := make([]arrow.Field, len(inColumns))
	var js strings.Builder
	js.WriteString("[")
	for r := range rows {
		if r > 0 {
			js.WriteString(",")
		}
		js.WriteString("{")
		for c, col := range inColumns {
			fields[c] = col.field
			if c > 0 {
				js.WriteString(",")
			}
			v := "null"
			if rng.IntN(6) > 0 {
				v = col.values[rng.IntN(len(col.values))]
			}
			js.WriteString(`"` + col.field.Name + `": ` + v)
		}
		js.WriteString("}")
	}
	js.WriteString("]")
	rec, _, err := array.RecordFromJSON(mem, arrow.NewSchema(fields, nil), strings.NewReader(js.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()

	eval := func(sql string) (string, error) {
		out, _, err := evalSQL(filter.Parse, sql, mem, rec)
		if err != nil {
			return "", err
		}
		defer out.Release()
		return out.String(), nil
	}
	for _, col := range inColumns {
		subjects := []string{col.field.Name}
		switch col.field.Name {
		case "i64":
			subjects = append(subjects, "i64 + 1", "coalesce(i64, 7)", "7")
		case "s":
			subjects = append(subjects, "lower(s)", "'b'", "NULL")
		}
		for _, x := range subjects {
			for range 40 {
				n := 1 + rng.IntN(30)
				items := make([]string, n)
				for k := range items {
					if rng.IntN(8) == 0 {
						items[k] = "NULL"
					} else {
						items[k] = col.literals[rng.IntN(len(col.literals))]
					}
				}
				eqs := make([]string, n)
				for k, item := range items {
					eqs[k] = x + " = " + item
				}
				list := strings.Join(items, ", ")
				for _, pair := range [][2]string{
					{x + " IN (" + list + ")", strings.Join(eqs, " OR ")},
					{x + " NOT IN (" + list + ")", "NOT (" + strings.Join(eqs, " OR ") + ")"},
				} {
					got, err := eval(pair[0])
					if err != nil {
						t.Fatalf("%s: %v", pair[0], err)
					}
					want, err := eval(pair[1])
					if err != nil {
						t.Fatalf("%s: %v", pair[1], err)
					}
					if got != want {
						t.Fatalf("%s:\n got %s\nwant %s (%s)", pair[0], got, want, pair[1])
					}
				}
			}
		}
	}
}
