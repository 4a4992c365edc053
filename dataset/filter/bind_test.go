package filter_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
)

// TestBindErrors: names that are no column fail with ErrNotFound, type
// errors with ErrInvalidArgument; both say what and where.
func TestBindErrors(t *testing.T) {
	tests := []struct {
		sql      string
		category error
		msg      string
		column   int
	}{
		{"i88 > 1", lancer.ErrNotFound, "no column i88 (did you mean i8?)", 1},
		{"b AND price > 1", lancer.ErrNotFound, "no column price", 7},
		{"lower(i64x) = 'x'", lancer.ErrNotFound, "no column i64x (did you mean i64?)", 7},
		{"st.c = 1", lancer.ErrNotFound, "struct st has no field c (did you mean a, b?)", 1},
		{"i8.x = 1", lancer.ErrInvalidArgument, "i8 is int8, not a struct: it has no field x", 1},
		{"s = 1", lancer.ErrInvalidArgument, "cannot compare utf8 with integer 1", 5},
		{"1 = s", lancer.ErrInvalidArgument, "cannot compare utf8 with integer 1", 1},
		{"i8 = 300", lancer.ErrInvalidArgument, "integer 300 is out of range for int8", 6},
		{"u64 > -1", lancer.ErrInvalidArgument, "integer -1 is out of range for uint64", 7},
		{"i8 IN (1, 300)", lancer.ErrInvalidArgument, "integer 300 is out of range for int8", 11},
		{"i8 BETWEEN 0 AND 200", lancer.ErrInvalidArgument, "integer 200 is out of range for int8", 18},
		{"dec = 100000000", lancer.ErrInvalidArgument, "integer 100000000 is out of range for decimal(10, 2)", 7},
		{"i8 = 'x'", lancer.ErrInvalidArgument, "cannot compare int8 with string 'x'", 6},
		{"d > 19000", lancer.ErrInvalidArgument, "cannot compare date32 with integer 19000", 5},
		{"d > 'yesterday'", lancer.ErrInvalidArgument, "string 'yesterday' is no date32", 5},
		{"b = 1", lancer.ErrInvalidArgument, "cannot compare bool with integer 1", 5},
		{"fsb = 'abc'", lancer.ErrInvalidArgument, "string 'abc' has 3 bytes, fixed_size_binary[2] holds 2", 7},
		{"f16 = 1e10", lancer.ErrInvalidArgument, "number 1e+10 is out of range for float16", 7},
		{"l = 1", lancer.ErrInvalidArgument, "cannot compare list<item: int32, nullable> with int64", 3},
		{"l = [s]", lancer.ErrInvalidArgument, "cannot compare list<item: int32, nullable> with list<item: utf8, nullable>", 3},
		{"st = st", lancer.ErrInvalidArgument, "cannot compare struct<a: int32 nullable, b: utf8 nullable> with struct<a: int32 nullable, b: utf8 nullable>", 4},
		{"s < i8", lancer.ErrInvalidArgument, "cannot compare utf8 with int8", 3},
		{"s AND b", lancer.ErrInvalidArgument, "an operand of AND must be boolean, s is utf8", 1},
		{"b OR 1", lancer.ErrInvalidArgument, "an operand of OR must be boolean, 1 is int64", 6},
		{"NOT i8", lancer.ErrInvalidArgument, "the operand of NOT must be boolean, i8 is int8", 5},
		{"i8 + 1", lancer.ErrInvalidArgument, "a filter must be boolean, i8 + 1 is int64", 4},
		{"NULL", lancer.ErrInvalidArgument, "a filter must be boolean, NULL is null", 1},
		{"s IS TRUE", lancer.ErrInvalidArgument, "the operand of IS TRUE must be boolean, s is utf8", 1},
		{"i8 + s > 1", lancer.ErrInvalidArgument, "cannot apply + to int8 and utf8", 4},
		{"-u8 = 1", lancer.ErrInvalidArgument, "cannot negate uint8", 1},
		{"-s = 'a'", lancer.ErrInvalidArgument, "cannot negate utf8", 1},
		{"lower(i8) = 'x'", lancer.ErrInvalidArgument, "lower needs a string as argument 1, found int8", 7},
		{"starts_with(s, 1)", lancer.ErrInvalidArgument, "starts_with needs a string as argument 2, found int64", 16},
		{"substr(s, 'a') = ''", lancer.ErrInvalidArgument, "substr needs an integer as argument 2, found utf8", 11},
		{"round(s) > 1", lancer.ErrInvalidArgument, "round needs a number as argument 1, found utf8", 7},
		{"abs(s) > 1", lancer.ErrInvalidArgument, "abs needs a number as argument 1, found utf8", 5},
		{"array_has(s, 'a')", lancer.ErrInvalidArgument, "array_has needs a list as argument 1, found utf8", 11},
		{"array_has(l, 'x')", lancer.ErrInvalidArgument, "array_has cannot look for utf8 in a list of int32", 1},
		{"array_has_any(l, l)", lancer.ErrUnsupported, "array_has_any needs a list literal [x, y, ...] as argument 2", 18},
		{"array_has_all(l, [])", lancer.ErrUnsupported, "array_has_all of an empty list is not supported", 18},
		{"array_has_any(l, [1, NULL])", lancer.ErrUnsupported, "array_has_any of a list holding NULL is not supported", 22},
		{"[1, 'a'] IS NULL", lancer.ErrInvalidArgument, "a list cannot hold both int64 and utf8", 5},
		{"named_struct('a', 1, 'a', 2) IS NULL", lancer.ErrInvalidArgument, `named_struct names field "a" twice`, 22},
		{"named_struct(1, 2) IS NULL", lancer.ErrInvalidArgument, "named_struct needs a string literal as argument 1", 14},
		{"array_length(i8) > 1", lancer.ErrInvalidArgument, "array_length needs a list as argument 1, found int8", 14},
		{"s LIKE 1", lancer.ErrInvalidArgument, "LIKE needs strings, 1 is int64", 8},
		{"i8 LIKE 'a'", lancer.ErrInvalidArgument, "LIKE needs strings, i8 is int8", 1},
		{"coalesce(s, 1) = 's'", lancer.ErrInvalidArgument, "coalesce cannot mix utf8 and int64", 13},
		{"regexp_like(s, '(')", lancer.ErrInvalidArgument, "invalid regular expression: error parsing regexp", 16},
		{"regexp_like(s, 'a', 'g')", lancer.ErrInvalidArgument, "unsupported regexp flags 'g'", 16},
		{"CAST(l AS INT) = 1", lancer.ErrInvalidArgument, "cannot cast list<item: int32, nullable> to INT", 1},
		{"i8 IS DISTINCT FROM s", lancer.ErrInvalidArgument, "cannot compare int8 with utf8", 4},
		{"dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec * dec > 1",
			lancer.ErrInvalidArgument, "the product has more than 38 digits after the point", 113},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			e, err := filter.Parse(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Bind(testSchema)
			if err == nil {
				t.Fatal("binds")
			}
			if !errors.Is(err, tt.category) {
				t.Errorf("%v does not wrap %v", err, tt.category)
			}
			where := " at column " + strconv.Itoa(tt.column) + ":"
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), where) {
				t.Errorf("got  %v\nwant %q%s", err, tt.msg, where)
			}
		})
	}
}

// TestBindType: the type of what Eval returns is known at Bind.
func TestBindType(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		{"i8", "int8"},
		{"d64", "date64"},
		{"dict", "utf8"},
		{"st.b", "utf8"},
		{"i8 > 1", "bool"},
		{"i8 + 1", "int64"},
		{"i8 + i8", "int8"},
		{"i8 + u8", "int16"},
		{"u8 + u64", "uint64"},
		{"i32 + u64", "decimal(21, 0)"},
		{"i8 + 1.5", "float64"},
		{"f16 + f16", "float32"},
		{"f32 * 2", "float32"},
		{"f32 * 2.5", "float64"},
		{"dec + 1", "decimal(22, 2)"},
		{"dec * 2", "decimal(30, 2)"},
		{"dec + 1.5", "float64"},
		{"d + 1", "date32"},
		{"s || 'x'", "utf8"},
		{"ls || 'x'", "large_utf8"},
		{"length(s)", "int32"},
		{"length(ls)", "int64"},
		{"round(i8)", "float64"},
		{"round(f32)", "float32"},
		{"coalesce(i8, 0)", "int64"},
		{"coalesce(s, ls)", "large_utf8"},
		{"array_length(l)", "uint64"},
		{"regexp_match(s, 'x')", "list<item: utf8, nullable>"},
		{"CAST(i8 AS DECIMAL(5, 2))", "decimal(5, 2)"},
		{"CAST(s AS TIMESTAMP(9))", "timestamp[ns]"},
		{"NULL", "null"},
		{"NULL + 1", "int64"},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			e, err := filter.ParseExpr(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			b, err := e.Bind(testSchema)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Type().String(); got != tt.want {
				t.Errorf("Type() = %s, want %s", got, tt.want)
			}
		})
	}
}
