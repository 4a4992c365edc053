package filter_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
)

// rs is n r's, quoted: the replacement that makes replace(s, 'r', …) grow.
func rs(n int) string { return "'" + strings.Repeat("r", n) + "'" }

// limitsBatch is rows rows of a string column s (each value s), a list
// column tags (items copies of 't'), and a dictionary column dict whose one
// entry, dictValue, every row refers to.
func limitsBatch(t *testing.T, mem memory.Allocator, rows int, s string, items int, dictValue string) arrow.RecordBatch {
	t.Helper()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "dict", Type: dictType, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	tags := b.Field(1).(*array.ListBuilder)
	dict := b.Field(2).(*array.BinaryDictionaryBuilder)
	for range rows {
		b.Field(0).(*array.StringBuilder).Append(s)
		tags.Append(true)
		for range items {
			tags.ValueBuilder().(*array.StringBuilder).Append("t")
		}
		if err := dict.AppendString(dictValue); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewRecordBatch()
}

// bindLimits parses sql, a predicate or a value expression, and binds it
// to schema.
func bindLimits(t *testing.T, sql string, predicate bool, schema *arrow.Schema) *filter.Bound {
	t.Helper()
	parse := filter.ParseExpr
	if predicate {
		parse = filter.Parse
	}
	e, err := parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Bind(schema)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvalLimits: an expression that would build more than a function may
// (filter.MaxValueBytes) or than one batch may (filter.MaxBatchBytes)
// fails with an error naming the function and the limit, before building
// it: the Go heap grows by far less than the expression asked for.
//
// Each case would build tens or hundreds of megabytes without the limits
// (so that, run against code without them, it fails by succeeding rather
// than by exhausting memory); the last, the filter, would build a
// terabyte, and runs only once the others have passed.
func TestEvalLimits(t *testing.T) {
	inner := "replace(replace(s, 'r', " + rs(1024) + "), 'r', " + rs(1000) + ")" // 16 r's → 16,384,000 bytes
	half := "replace(replace(s, 'r', " + rs(1024) + "), 'r', " + rs(600) + ")"   // 16 r's → 9,830,400 bytes
	for _, tc := range []struct {
		name      string
		sql       string
		predicate bool
		rows      int
		s         string // every row's s
		items     int    // every row's number of tags
		dict      string // the dictionary's one value
		want      string // in the error
	}{
		{"nested replace", "replace(replace(replace(s, 'r', " + rs(300) + "), 'r', " + rs(300) + "), 'r', " + rs(300) + ") = 'x'",
			true, 1, "r", 0, "", "replace would build a value of 27000000 bytes, more than the 16 MiB a function may build (filter.MaxValueBytes)"},
		{"concat", half + " || " + half, false, 1, strings.Repeat("r", 16), 0, "", "|| would build a value of 19660800 bytes"},
		// lower may build as much as its argument, but no more: Ⱥ (2
		// bytes) lowers to ⱥ (3 bytes), 12 MiB to 18 MiB.
		{"lower growing", "lower(s)", false, 1, strings.Repeat("Ⱥ", 6<<20), 0, "", "lower would build a value of 18874368 bytes"},
		{"regexp_match groups", "regexp_match(replace(s, 'r', " + rs(1024) + "), '((((((((((r*))))))))))')",
			false, 1, strings.Repeat("r", 8192), 0, "", "regexp_match would build a value of 83886080 bytes"},
		{"rows together", inner, false, 17, strings.Repeat("r", 16), 0, "",
			"replace would take the values the expression builds for one batch past 256 MiB (filter.MaxBatchBytes)"},
		{"a constant spread over rows", "replace(replace('rrrr', 'r', " + rs(1024) + "), 'r', " + rs(1024) + ")",
			false, 100, "", 0, "", "spreading a constant over 100 rows would take the values the expression builds for one batch past 256 MiB"},
		// A literal is spread uncounted, but within MaxSpreadBytes: 1 MiB
		// over 2048 rows would be 2 GiB from one request.
		{"a literal spread past MaxSpreadBytes", "'" + strings.Repeat("x", 1<<20-16) + "'",
			false, 2048, "", 0, "", "more than the 1024 MiB one batch may hold (filter.MaxSpreadBytes)"},
		{"coalesce", "coalesce(s, replace(replace('rrrr', 'r', " + rs(1024) + "), 'r', " + rs(1024) + ")) = 'x'",
			true, 100, "", 0, "", "past 256 MiB (filter.MaxBatchBytes)"},
		{"array_has needles", "array_has(tags, replace(s, 'r', " + rs(1024) + "))",
			true, 1, strings.Repeat("r", 1024), 300, "", "array_has's needles would take the values"},
		{"dictionary decoded", "dict = 'x'", true, 300, "", 0, strings.Repeat("d", 1<<20), "decoding a dictionary column would take the values"},
		{"regexp pattern per row", "regexp_like('x', s)", true, 1, strings.Repeat("r", 17<<20), 0, "", "regexp_like's pattern would build a value of 17825792 bytes"},
		{"LIKE pattern per row", "'x' LIKE s", true, 1, strings.Repeat("r", 40<<20), 0, "", "LIKE's pattern would take the values"},
		{"the issue's filter", "replace(replace(replace(s, 'r', " + rs(10000) + "), 'r', " + rs(10000) + "), 'r', " + rs(10000) + ") = 'x'",
			true, 1, "r", 0, "", "replace would build a value of 100000000 bytes, more than the 16 MiB"},
	} {
		if tc.name == "the issue's filter" && t.Failed() {
			t.Fatal("not running the issue's filter, which would build a terabyte: the limits do not hold")
		}
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			rec := limitsBatch(t, mem, tc.rows, tc.s, tc.items, tc.dict)
			defer rec.Release()
			b := bindLimits(t, tc.sql, tc.predicate, rec.Schema())
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, err := b.Eval(context.Background(), mem, rec)
			runtime.ReadMemStats(&after)
			if err == nil {
				out.Release()
				t.Fatalf("%s: no error, want one containing %q", tc.sql[:min(len(tc.sql), 80)], tc.want)
			}
			if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want an ErrInvalidArgument containing %q", err, tc.want)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
				t.Errorf("evaluating allocated %d MiB before failing", grown>>20)
			}
		})
	}
}

// TestEvalLimitsAllow: what stays under the limits evaluates as before,
// however many rows share the work.
func TestEvalLimitsAllow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := limitsBatch(t, mem, 64, strings.Repeat("r", 16), 2, "red")
	defer rec.Release()
	for _, tc := range []struct {
		sql  string
		want int // bytes of the first value
	}{
		{"replace(replace(s, 'r', " + rs(1024) + "), 'r', " + rs(1000) + ")", 16384000},
		{"s || s || s", 48},
		{"coalesce(s, 'x') || dict", 19},
		// 100 é's have 101 places to insert at: the size computed before
		// building agrees with what replace builds.
		{"replace('" + strings.Repeat("é", 100) + "', '', " + rs(100000) + ")", 10100200},
	} {
		e, err := filter.ParseExpr(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if tc.want > 1<<20 {
			// 64 rows of 16 MB would pass the batch's limit: evaluate 8.
			small := rec.NewSlice(0, 8)
			defer small.Release()
			out, err := b.Eval(context.Background(), mem, small)
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if got := len(out.(*array.String).Value(7)); got != tc.want {
				t.Errorf("%s: %d bytes, want %d", tc.sql, got, tc.want)
			}
			out.Release()
			continue
		}
		out, err := b.Eval(context.Background(), mem, rec)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if got := len(out.(*array.String).Value(63)); got != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.sql, got, tc.want)
		}
		out.Release()
	}
}

// TestEvalLimitsOrdinary: the limits bound what an expression multiplies,
// not what ordinary workloads hold. A batch holds at most MaxBatchBytes at
// once, not in total (an OR of six lower(s) LIKE … terms over a 48 MiB
// batch holds one lower(s) at a time; a chain of || builds its result
// once); a function whose result cannot outgrow its argument works on a
// value longer than MaxValueBytes; and a value expression's result may be
// a long constant spread over every row, as SET note = '<33 KB>' is.
//
// Each case holds a few hundred megabytes when it succeeds; against code
// that refuses it, it fails with an error before building much.
func TestEvalLimitsOrdinary(t *testing.T) {
	or6 := "lower(s) LIKE '%a%' OR upper(s) LIKE '%B%' OR lower(s) LIKE '%c%' OR trim(s) = 'x' OR lower(s) LIKE '%d%' OR lower(s) LIKE '%e%'"
	note := strings.Repeat("n", 33000) // 8192 of them: 270 MB, past MaxBatchBytes
	for _, tc := range []struct {
		name      string
		sql       string
		predicate bool
		large     bool // s is a large_string
		rows      int
		s         string // every row's s
		want      int    // length of the last row's value, or 1 for TRUE
	}{
		{"six terms of lower and upper", or6, true, false, 8192, strings.Repeat("xyzw", 1536), 0},
		{"a chain of ||", "s || s || s || s || s", false, false, 8192, strings.Repeat("x", 4096), 5 * 4096},
		{"lower of a value past MaxValueBytes", "lower(s)", false, true, 1, strings.Repeat("A", 20<<20), 20 << 20},
		{"upper of a value past MaxValueBytes", "upper(s)", false, true, 1, strings.Repeat("a", 20<<20), 20 << 20},
		{"trim of a value past MaxValueBytes", "trim(s)", false, true, 1, " " + strings.Repeat("a", 20<<20) + " ", 20 << 20},
		{"substr of a value past MaxValueBytes", "substr(s, 2)", false, true, 1, strings.Repeat("a", 20<<20), 20<<20 - 1},
		{"a long constant over every row", "'" + note + "'", false, false, 8192, "", len(note)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			typ := arrow.BinaryTypes.String
			if tc.large {
				typ = arrow.BinaryTypes.LargeString
			}
			schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: typ, Nullable: true}}, nil)
			bld := array.NewRecordBuilder(mem, schema)
			for range tc.rows {
				switch b := bld.Field(0).(type) {
				case *array.StringBuilder:
					b.Append(tc.s)
				case *array.LargeStringBuilder:
					b.Append(tc.s)
				}
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			defer rec.Release()
			b := bindLimits(t, tc.sql, tc.predicate, rec.Schema())
			out, err := b.Eval(context.Background(), mem, rec)
			if err != nil {
				t.Fatalf("%s: %v", tc.sql[:min(len(tc.sql), 80)], err)
			}
			defer out.Release()
			last := out.Len() - 1
			if out.Len() != tc.rows {
				t.Fatalf("%d values, want %d", out.Len(), tc.rows)
			}
			var got int
			switch a := out.(type) {
			case *array.Boolean:
				if a.Value(last) {
					got = 1
				}
			case *array.String:
				got = len(a.Value(last))
			case *array.LargeString:
				got = len(a.Value(last))
			}
			if got != tc.want {
				t.Errorf("last value %d (bytes, or 1 for TRUE), want %d", got, tc.want)
			}
		})
	}
}
