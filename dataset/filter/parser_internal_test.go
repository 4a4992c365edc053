package filter

import (
	"strings"
	"testing"
)

// tree writes a parsed node as an s-expression, every grouping explicit,
// so that tests see the shape precedence gave it.
func tree(n node) string {
	var b strings.Builder
	writeTree(&b, n)
	return b.String()
}

func writeTree(b *strings.Builder, n node) {
	list := func(head string, parts ...node) {
		b.WriteString("(" + head)
		for _, p := range parts {
			b.WriteByte(' ')
			writeTree(b, p)
		}
		b.WriteByte(')')
	}
	switch n := n.(type) {
	case *literalNode:
		writeLiteral(b, n)
	case *columnNode:
		b.WriteString(strings.Join(n.path, "."))
	case *unaryNode:
		list(map[unaryOp]string{opNot: "not", opNeg: "neg"}[n.op], n.x)
	case *binaryNode:
		list(binaryOpText[n.op], n.l, n.r)
	case *logicNode:
		head := "and"
		if n.or {
			head = "or"
		}
		list(head, n.terms...)
	case *isNode:
		list(strings.ToLower(strings.ReplaceAll(isTestText[n.test], " ", "-")), n.x)
	case *betweenNode:
		head := "between"
		if n.negated {
			head = "not-between"
		}
		list(head, n.x, n.lo, n.hi)
	case *inNode:
		head := "in"
		if n.negated {
			head = "not-in"
		}
		list(head, append([]node{n.x}, n.list...)...)
	case *likeNode:
		head := "like"
		if n.insensitive {
			head = "ilike"
		}
		if n.negated {
			head = "not-" + head
		}
		if n.escape != "" {
			head += "/" + n.escape
		}
		list(head, n.x, n.pattern)
	case *castNode:
		list("cast:"+n.to.name, n.x)
	case *callNode:
		list(n.name, n.args...)
	}
}

func TestParseTree(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		// NOT binds tighter than AND, AND tighter than OR.
		{"a OR b AND c", "(or a (and b c))"},
		{"a AND b OR c", "(or (and a b) c)"},
		{"NOT a AND b", "(and (not a) b)"},
		{"NOT a OR b", "(or (not a) b)"},
		{"NOT NOT a", "(not (not a))"},
		{"(a OR b) AND c", "(and (or a b) c)"},
		{"a AND (b AND c) AND d", "(and a b c d)"},
		{"a OR (b OR c)", "(or a b c)"},
		{"a or b or c and d", "(or a b (and c d))"},
		// Comparisons bind tighter than NOT, IS looser than comparisons.
		{"NOT a = b", "(not (= a b))"},
		{"NOT a IS NULL", "(not (is-null a))"},
		{"a = b IS NULL", "(is-null (= a b))"},
		{"a IS NOT NULL AND b IS TRUE", "(and (is-not-null a) (is-true b))"},
		{"a IS NOT FALSE IS NULL", "(is-null (is-not-false a))"},
		{"a = 1 = TRUE", "(= (= a 1) TRUE)"},
		{"a <> b", "(!= a b)"},
		{"a IS DISTINCT FROM b + 1", "(IS DISTINCT FROM a (+ b 1))"},
		{"a IS NOT DISTINCT FROM NULL", "(IS NOT DISTINCT FROM a NULL)"},
		// Arithmetic: * / % over + -, left to right, unary minus tightest.
		{"a + b * c", "(+ a (* b c))"},
		{"a * b + c", "(+ (* a b) c)"},
		{"a - b - c", "(- (- a b) c)"},
		{"a / b * c % d", "(% (* (/ a b) c) d)"},
		{"-a * b", "(* (neg a) b)"},
		{"-(a + b)", "(neg (+ a b))"},
		{"a + b = c * d", "(= (+ a b) (* c d))"},
		{"a || b = c", "(= (|| a b) c)"},
		{"a || b + c", "(|| a (+ b c))"},
		{"+a", "a"},
		// BETWEEN takes its bounds before AND.
		{"x BETWEEN 1 AND 2 AND y", "(and (between x 1 2) y)"},
		{"x BETWEEN a + 1 AND b * 2", "(between x (+ a 1) (* b 2))"},
		{"x NOT BETWEEN 1 AND 2 OR y", "(or (not-between x 1 2) y)"},
		{"NOT x BETWEEN 1 AND 2", "(not (between x 1 2))"},
		{"x BETWEEN (a OR b) AND c", "(between x (or a b) c)"},
		// IN lists hold whole expressions.
		{"x IN (1, 2 + 3, y)", "(in x 1 (+ 2 3) y)"},
		{"x NOT IN ('a')", "(not-in x 'a')"},
		{"x IN (a OR b, c)", "(in x (or a b) c)"},
		{"x + 1 IN (2)", "(in (+ x 1) 2)"},
		// LIKE.
		{"x LIKE 'a%' AND y ILIKE 'b'", "(and (like x 'a%') (ilike y 'b'))"},
		{"x NOT LIKE 'a!%' ESCAPE '!'", "(not-like/! x 'a!%')"},
		{"x not ilike y || '%'", "(not-ilike x (|| y '%'))"},
		// Literals.
		{"-5", "-5"},
		{"- 5", "-5"},
		{"--5", "5"},
		{"-(-5)", "5"},
		{"-9223372036854775808", "-9223372036854775808"},
		{"9223372036854775808", "9223372036854775808"},
		{"18446744073709551616", "1.8446744073709552e+19"},
		{"-18446744073709551615", "-1.8446744073709552e+19"},
		{"1e3", "1000.0"},
		{".5", "0.5"},
		{"-0.0", "-0.0"},
		{"'it''s'", "'it''s'"},
		{"''", "''"},
		{"true AND False", "(and TRUE FALSE)"},
		{"null", "NULL"},
		{"DATE '2024-01-02'", "DATE '2024-01-02'"},
		{"timestamp '2024-01-02 03:04:05.123'", "TIMESTAMP '2024-01-02 03:04:05.123'"},
		// Names.
		{"a.b.c", "a.b.c"},
		{"`a b`.c", "a b.c"},
		{`"a""b".c`, `a"b.c`},
		{"`a``b`", "a`b"},
		{"`AND` = 1", "(= AND 1)"},
		{"date = 1", "(= date 1)"},
		{"timestamp", "timestamp"},
		{"_rowid < 5", "(< _rowid 5)"},
		{"größe > 1", "(> größe 1)"},
		{"struct.`in`", "struct.in"},
		// Calls and casts.
		{"LOWER(name) = 'x'", "(= (lower name) 'x')"},
		{"coalesce(a, b, 0)", "(coalesce a b 0)"},
		{"array_has(tags, 'x')", "(array_has tags 'x')"},
		{"CAST(a AS bigint unsigned)", "(cast:BIGINT UNSIGNED a)"},
		{"cast(a as varchar(10))", "(cast:STRING a)"},
		{"CAST(a AS DECIMAL(10,2))", "(cast:DECIMAL(10, 2) a)"},
		{"CAST(a AS timestamp(3))", "(cast:TIMESTAMP(3) a)"},
		{"CAST(a AS DOUBLE PRECISION)", "(cast:DOUBLE a)"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			n, err := parse(tt.sql)
			if err != nil {
				t.Fatalf("parse: %s at %d", err.msg, err.pos)
			}
			if got := tree(n); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestParseDepth: nesting is bounded, so no later walk of the tree can
// recurse without limit, and long flat chains are not nesting.
func TestParseDepth(t *testing.T) {
	deep := []string{
		strings.Repeat("(", maxDepth) + "a" + strings.Repeat(")", maxDepth),
		strings.Repeat("NOT ", maxDepth+1) + "a",
		strings.Repeat("-", maxDepth+1) + "a",
		"a" + strings.Repeat(" + a", maxDepth+1),
		strings.Repeat("lower(", maxDepth) + "a" + strings.Repeat(")", maxDepth),
	}
	for _, sql := range deep {
		if _, err := parse(sql); err == nil || !strings.Contains(err.msg, "nests deeper") {
			t.Errorf("%.40s…: got %v, want a nesting error", sql, err)
		}
	}
	flat := []string{
		"a" + strings.Repeat(" OR a", 10000),
		"a" + strings.Repeat(" AND a", 10000),
		"a IN (" + strings.Repeat("1, ", 10000) + "1)",
	}
	for _, sql := range flat {
		if _, err := parse(sql); err != nil {
			t.Errorf("%.40s…: %s", sql, err.msg)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"price", "price", 0},
		{"pricee", "price", 1},
		{"prcie", "price", 2},
		{"", "abc", 3},
		{"größe", "grösse", 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
