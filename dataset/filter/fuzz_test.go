package filter_test

import (
	"context"
	"errors"
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
