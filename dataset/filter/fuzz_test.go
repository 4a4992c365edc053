package filter_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
)

// FuzzParse: no input makes the package panic or leak. What parses has a
// canonical form that parses back to itself; binding it to the test schema
// and evaluating it on the test batch fails, if at all, with a categorised
// error, releasing everything it allocated.
func FuzzParse(f *testing.F) {
	for _, sql := range roundTripCorpus {
		f.Add(sql)
	}
	for _, c := range lanceCases {
		f.Add(c.filter)
	}
	for _, sql := range []string{
		"i8 BETWEEN -1 AND 1 OR s LIKE '%a_' OR array_has(l, i8)",
		"coalesce(st.a, i32, 0) % 3 = -1 AND d + 1 > '2024-01-01'",
		"regexp_match(s, '(a)(n+)') IS NULL OR tsk < '2024-01-01 05:30'",
		"CAST(dec AS BIGINT) / 0 > 1 OR substr(ls, -3, 10) = ''",
		"price >> 3", "'unterminated", "a IN ()", "((((", "NOT NOT NOT",
		// Values built per row: lists, structs, binary literals.
		"l = [i32, NULL, 3] OR ll != make_array(s, ls) OR array_length([[s], []]) > 1",
		"named_struct('a', [i8], 'b', struct(s, X'00ff')) IS NULL AND bin = x'61'",
		"array_has_any(l, make_array(1, 2)) AND [" + strings.Repeat("s, ", 200) + "s] IS NOT NULL",
		// Past the limits on what an expression builds (limits.go).
		"replace(replace(replace(s, 'a', '" + strings.Repeat("a", 300) + "'), 'a', '" + strings.Repeat("a", 300) + "'), 'a', '" + strings.Repeat("a", 300) + "') = ''",
		"replace(replace(ls, '', '" + strings.Repeat("x", 4096) + "'), '', '" + strings.Repeat("y", 4096) + "') IS NULL",
		"regexp_match(s, '((((((((((.*))))))))))') IS NULL OR s LIKE s OR regexp_like(s, s || '.*')",
		"coalesce(dict, replace(replace('abcd', '', '" + strings.Repeat("z", 2048) + "'), 'z', '" + strings.Repeat("z", 64) + "')) = 'x'",
		"i64 IN (1, 2, 3, 4, 5, 6, 7, 8, 9, NULL) AND f64 NOT IN (0, -0.0, 1.5, 2, 3, 4, 5, 6, 7) AND s IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', NULL)",
	} {
		f.Add(sql)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, sql string) {
		e, err := filter.ParseExpr(sql)
		if err != nil {
			if !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Fatalf("%q: %v is not an ErrInvalidArgument", sql, err)
			}
			return
		}
		canonical := e.String()
		again, err := filter.ParseExpr(canonical)
		if err != nil {
			t.Fatalf("%q: its String %q does not parse: %v", sql, canonical, err)
		}
		if again.String() != canonical {
			t.Fatalf("%q: String %q reads back as %q", sql, canonical, again.String())
		}
		_ = e.Columns()

		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rec := testBatch(t, mem)
		defer rec.Release()
		b, err := e.Bind(rec.Schema())
		if err != nil {
			if !errors.Is(err, lancer.ErrInvalidArgument) && !errors.Is(err, lancer.ErrNotFound) {
				t.Fatalf("%q: Bind: %v has no category", sql, err)
			}
			return
		}
		out, err := b.Eval(ctx, mem, rec)
		if err != nil {
			if !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Fatalf("%q: Eval: %v is not an ErrInvalidArgument", sql, err)
			}
			return
		}
		out.Release()
	})
}
