package filter_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
)

func TestString(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		{"a=1 and b<>2", "a = 1 AND b != 2"},
		{"not (a or b)", "NOT (a OR b)"},
		{"NOT NOT x", "NOT NOT x"},
		{"(a and b) or c", "a AND b OR c"},
		{"a and (b or c)", "a AND (b OR c)"},
		{"(a + b) * c", "(a + b) * c"},
		{"a - (b - c)", "a - (b - c)"},
		{"(a - b) - c", "a - b - c"},
		{"a - (b + c)", "a - (b + c)"},
		{"a * (b / c)", "a * (b / c)"},
		{"(a = b) = c", "a = b = c"},
		{"a = (b = c)", "a = (b = c)"},
		{"(a IS NULL) = TRUE", "(a IS NULL) = TRUE"},
		{"(a = b) IS NULL", "a = b IS NULL"},
		{"NOT (a IS NULL)", "NOT a IS NULL"},
		{"x in (1,2)", "x IN (1, 2)"},
		{"b = x'0aFF'", "b = X'0aff'"},
		{"tags = ['a',make_array(1)]", "tags = ['a', make_array(1)]"},
		{"x not in (1)", "x NOT IN (1)"},
		{"x between 1 and 2", "x BETWEEN 1 AND 2"},
		{"x not between (a or b) and c", "x NOT BETWEEN (a OR b) AND c"},
		{"(x between 1 and 2) = y", "x BETWEEN 1 AND 2 = y"},
		{"x = (y between 1 and 2)", "x = (y BETWEEN 1 AND 2)"},
		{"x like 'a%'", "x LIKE 'a%'"},
		{"lower(NAME) not ilike 'A!%' escape '!'", "lower(NAME) NOT ILIKE 'A!%' ESCAPE '!'"},
		{"x is not distinct from y", "x IS NOT DISTINCT FROM y"},
		{"a || (b || c)", "a || (b || c)"},
		{"-x", "-x"},
		{"- -x", "-(-x)"},
		{"-(-1)", "1"},
		{"-(x + 1)", "-(x + 1)"},
		{"1.0 = 1", "1.0 = 1"},
		{"1e3", "1000.0"},
		{"1.5e-7", "1.5e-07"},
		{"'it''s'", "'it''s'"},
		{"`my col` = 1", "`my col` = 1"},
		{`"my col" = 1`, "`my col` = 1"},
		{"`a``b` = 1", "`a``b` = 1"},
		{"`and` = 1", "`and` = 1"},
		{"`Date` > 1", "`Date` > 1"},
		{"`1st` > 1", "`1st` > 1"},
		{"größe > 1", "`größe` > 1"},
		{"s.`x.y`.z = 1", "s.`x.y`.z = 1"},
		{"LOWER(x) = 'a'", "lower(x) = 'a'"},
		{"Array_Contains(tags, 'x')", "array_contains(tags, 'x')"},
		{"cast(x as varchar(10))", "CAST(x AS STRING)"},
		{"cast(x as integer)", "CAST(x AS INT)"},
		{"cast(x as decimal(10,2))", "CAST(x AS DECIMAL(10, 2))"},
		{"cast(x as datetime(9))", "CAST(x AS TIMESTAMP(9))"},
		{"date '2024-01-02'", "DATE '2024-01-02'"},
		{"timestamp '2024-01-02T03:04:05Z'", "TIMESTAMP '2024-01-02T03:04:05Z'"},
		{"x is not true", "x IS NOT TRUE"},
		{"null is null", "NULL IS NULL"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			e, err := filter.Parse(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tt.want {
				t.Errorf("String() = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestRoundTrip: String gives SQL that parses back to the same expression.
func TestRoundTrip(t *testing.T) {
	for _, sql := range roundTripCorpus {
		t.Run(sql, func(t *testing.T) {
			e, err := filter.ParseExpr(sql)
			if err != nil {
				t.Fatal(err)
			}
			again, err := filter.ParseExpr(e.String())
			if err != nil {
				t.Fatalf("%s does not parse: %v", e, err)
			}
			if again.String() != e.String() {
				t.Errorf("%s reads back as %s", e, again)
			}
			if !slices.Equal(again.Columns(), e.Columns()) {
				t.Errorf("columns %v read back as %v", e.Columns(), again.Columns())
			}
		})
	}
}

var roundTripCorpus = []string{
	"price > 10 AND cat IN ('a', 'b')",
	"a OR b AND NOT c OR (d OR e) AND f",
	"NOT (a AND b) OR NOT NOT c",
	"a - (b - (c - d)) * -(e + f) / g % h",
	"((a)) = (((b)))",
	"x BETWEEN -1 AND 2 + 3 AND NOT y NOT BETWEEN a AND b",
	"x IN (1, -2, 3.5, 'four', NULL, TRUE, DATE '2024-01-01') OR y NOT IN (z)",
	"name LIKE 'a\\%b%' OR name NOT ILIKE '_x' ESCAPE '#'",
	"(a IS NULL) IS NOT NULL IS TRUE IS NOT FALSE",
	"a IS DISTINCT FROM (b IS NOT DISTINCT FROM c)",
	"-9223372036854775808 < x AND x < 18446744073709551615",
	"1e300 > f AND f > -1.5e-300 AND f != -0.0",
	"`weird name`.`x.y`.z = 'it''s' AND \"dq\" = 1",
	"lower(upper(trim(s))) || 'x' = replace(s, 'a', 'b')",
	"CAST(CAST(x AS DOUBLE) AS DECIMAL(38, 10)) > CAST('1' AS TINYINT UNSIGNED)",
	"coalesce(a, b, c) = 0 AND array_has(tags, 'x') AND array_length(tags) > 2",
	"TIMESTAMP '2024-01-02 03:04:05.123456789+05:30' > ts",
	"-(-x) = - -y",
	"a || b || (c || d)",
	"a = b = c",
	"a = (b = c)",
	"x = (y BETWEEN 1 AND 2)",
}

func TestColumns(t *testing.T) {
	e, err := filter.Parse("b.c = 1 AND a > 2 AND a < 5 AND `x.y`.z IS NULL AND lower(B) = 'q' AND `a``b` IS NULL AND 1 = 1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"B", "`a``b`", "`x.y`.z", "a", "b.c"}
	if got := e.Columns(); !slices.Equal(got, want) {
		t.Errorf("Columns() = %q, want %q", got, want)
	}
	e, err = filter.Parse("TRUE")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Columns(); len(got) != 0 {
		t.Errorf("Columns() = %q, want none", got)
	}
}

// TestParseErrors: malformed filters fail with ErrInvalidArgument, saying
// what is wrong and where.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		sql, msg string
		column   int
	}{
		{"price >> 3", "unexpected '>'", 8},
		{"", "empty expression", 1},
		{"a =", "unexpected end of input", 4},
		{"(a = 1", "expected ')', found end of input", 7},
		{"a = 1)", "unexpected ')'", 6},
		{"a = 1 2", "unexpected number 2", 7},
		{"a IN ()", "empty IN list", 7},
		{"a IN (1,", "unexpected end of input", 9},
		{"a IN 1", "expected '(', found number 1", 6},
		{"a BETWEEN 1", "expected AND, found end of input", 12},
		{"a BETWEEN 1 OR 2", "expected AND, found OR", 13},
		{"'abc", "unterminated string", 1},
		{"b = X'abc'", "invalid binary literal X'abc': expected an even number of hex digits", 6},
		{"b = X 'ab'", "unexpected string 'ab'", 7},
		{"a = \"abc", "unterminated quoted name", 5},
		{"`abc", "unterminated quoted name", 1},
		{"a = ``", "empty quoted name", 5},
		{"a = 1e", "malformed number '1e'", 5},
		{"a = 12abc", "malformed number '12abc'", 5},
		{"a = 1.2.3", "malformed number '1.2.3'", 5},
		{"x = 1e999", "out of the range of a double", 5},
		{"a IS 3", "expected NULL, TRUE, FALSE or DISTINCT FROM after IS, found number 3", 6},
		{"a IS DISTINCT b", "expected FROM, found name b", 15},
		{"CAST(a AS foo)", "unknown type foo", 11},
		{"CAST(a)", "expected AS, found ')'", 7},
		{"CAST(a AS DECIMAL)", "DECIMAL needs a precision", 11},
		{"CAST(a AS DECIMAL(40, 2))", "needs 1 ≤ precision ≤ 38", 11},
		{"CAST(a AS TIMESTAMP(4))", "timestamp precision must be 0, 3, 6 or 9", 11},
		{"foo(a)", "unknown function foo", 1},
		{"x AND lower(a, b)", "lower takes 1 argument, found 2", 7},
		{"substr(a)", "substr takes 2 or 3 arguments, found 1", 1},
		{"coalesce()", "coalesce takes at least 1 argument, found 0", 1},
		{"count(*)", "unknown function count", 1},
		{"a LIKE 'x' ESCAPE 'ab'", "ESCAPE takes a string of exactly one character", 19},
		{"a LIKE 'x' ESCAPE b", "ESCAPE takes a string of exactly one character, found name b", 19},
		{"d = DATE '2024-13-01'", "invalid date '2024-13-01'", 10},
		{"d = DATE '2023-02-29'", "invalid date '2023-02-29'", 10},
		{"TIMESTAMP '2024-01-01 25:00'", "invalid timestamp", 11},
		{"a = #", "unexpected '#'", 5},
		{"a.", "expected a field name after '.', found end of input", 3},
		{"NOT", "unexpected end of input", 4},
		{"a AND", "unexpected end of input", 6},
		{"AND a", "unexpected AND", 1},
		{"a NOT 3", "unexpected NOT", 3},
		{"in = 1", "unexpected IN", 1},
		{"é = ", "unexpected end of input", 5},
		{"a = 'ü' +", "unexpected end of input", 10},
		{"a = \xff", "invalid UTF-8", 5},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			_, err := filter.Parse(tt.sql)
			if err == nil {
				t.Fatal("parses")
			}
			if !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("%v does not wrap ErrInvalidArgument", err)
			}
			where := " at column " + strconv.Itoa(tt.column) + ":"
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), where) {
				t.Errorf("got  %v\nwant %q%s", err, tt.msg, where)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	_, err := filter.Parse("a = '" + strings.Repeat("x", filter.MaxLength) + "'")
	if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("got %v, want a length error", err)
	}
	// The message repeats only the start of a long filter.
	_, err = filter.Parse(strings.Repeat("a AND ", 1000) + ")")
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("got a %d-byte error: %.100v", len(err.Error()), err)
	}
}
