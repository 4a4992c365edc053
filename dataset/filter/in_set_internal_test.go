package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestInUsesSet: a long list of constants is one hash lookup per row, not
// a comparison per item (the IN of 10,000 ids that took seconds), whatever
// else the list holds; a short one stays comparisons.
func TestInUsesSet(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "j", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	ids := make([]string, 1000)
	for k := range ids {
		ids[k] = fmt.Sprint(k * 3)
	}
	long := strings.Join(ids, ", ")
	for _, tc := range []struct {
		sql  string
		want string // the bound tree's shape
	}{
		{"i IN (" + long + ")", "set(1000)"},
		{"i NOT IN (" + long + ")", "not(set(1000))"},
		{"i IN (" + long + ", NULL)", "set(1000, NULL)"},
		{"i IN (j, " + long + ", 2.5)", "or(set(1000), compare)"},
		{"i IN (1, 2, 3)", "or(compare, compare, compare)"},
		{"b IN (TRUE, FALSE, TRUE, FALSE, TRUE, FALSE, TRUE, FALSE)", "or(compare, compare, compare, compare, compare, compare, compare, compare)"},
	} {
		e, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(b.root); got != tc.want {
			t.Errorf("%.40s…: bound as %s, want %s", tc.sql, got, tc.want)
		}
	}
}

// shape describes the evaluators TestInUsesSet looks for.
func shape(ev evaluator) string {
	switch ev := ev.(type) {
	case *inSetEval:
		n := ev.size
		if ev.hasNull {
			return fmt.Sprintf("set(%d, NULL)", n)
		}
		return fmt.Sprintf("set(%d)", n)
	case *notEval:
		return "not(" + shape(ev.x) + ")"
	case *logicEval:
		parts := make([]string, len(ev.terms))
		for i, t := range ev.terms {
			parts[i] = shape(t)
		}
		op := "and"
		if ev.or {
			op = "or"
		}
		return op + "(" + strings.Join(parts, ", ") + ")"
	case *compareEval:
		return "compare"
	}
	return fmt.Sprintf("%T", ev)
}
