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
		{"lower", "lower(s)", false, 1, strings.Repeat("A", 17<<20), 0, "", "lower would build a value of 17825792 bytes"},
		{"regexp_match groups", "regexp_match(replace(s, 'r', " + rs(1024) + "), '((((((((((r*))))))))))')",
			false, 1, strings.Repeat("r", 8192), 0, "", "regexp_match would build a value of 83886080 bytes"},
		{"rows together", inner, false, 17, strings.Repeat("r", 16), 0, "",
			"replace would take the values the expression builds for one batch past 256 MiB (filter.MaxBatchBytes)"},
		{"a constant spread over rows", "replace(replace('rrrr', 'r', " + rs(1024) + "), 'r', " + rs(1024) + ")",
			false, 100, "", 0, "", "spreading a constant over 100 rows would take the values the expression builds for one batch past 256 MiB"},
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
			parse := filter.ParseExpr
			if tc.predicate {
				parse = filter.Parse
			}
			e, err := parse(tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Bind(rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
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
