// Package filter parses and evaluates the SQL filters and expressions that
// Lance and LanceDB take: the where of a scan, count, delete, update or
// merge-insert ("price > 10 AND cat IN ('a', 'b')"), and the scalar
// expressions of an update's SET and of an added column.
//
// A filter is parsed once (Parse or ParseExpr), bound to an Arrow schema
// (Expr.Bind), and then evaluated on any number of record batches
// (Bound.Eval, Bound.Filter), vectorised over whole arrays with Arrow's
// compute functions and, where those lack a function, kernels of its own.
// Real Lance (which parses filters with DataFusion's SQL parser) is the
// reference: the tests run their filters through Lance 12 too.
//
// # Syntax
//
// Keywords are case-insensitive. From loosest to tightest binding:
//
//	a OR b
//	a AND b
//	NOT a
//	a IS [NOT] NULL | TRUE | FALSE,  a IS [NOT] DISTINCT FROM b
//	a = b, a != b (a <> b), a < b, a <= b, a > b, a >= b,
//	a [NOT] BETWEEN lo AND hi,  a [NOT] IN (x, y, …),
//	a [NOT] LIKE p [ESCAPE 'c'],  a [NOT] ILIKE p [ESCAPE 'c']
//	a || b                       (string concatenation)
//	a + b, a - b
//	a * b, a / b, a % b
//	-a
//	literals, names, f(x, …), CAST(x AS type), [x, y, …], (a)
//
// Literals:
//
//	42, -7                       int64 (uint64 above its range)
//	1.5, 1e3, .5                 float64
//	'text', 'it''s'              utf8, a doubled quote standing for one
//	X'0aff'                      binary (what LanceDB's client writes for a Buffer)
//	TRUE, FALSE, NULL
//	DATE '2024-01-02'
//	TIMESTAMP '2024-01-02 03:04:05.123'     optionally with a zone: Z, +02:00
//
// A minus before a number is part of it: -9223372036854775808 is an int64.
//
// Names: a column is a bare word (id, _rowid), or any text in backticks
// (`a b`) or double quotes ("a b"), a doubled quote standing for one. A
// struct's field is reached with dots: nested.inner.x. A name matches its
// column exactly, else case-insensitively, as in Lance. The bare words AND,
// OR, NOT, IS, IN, NULL, TRUE, FALSE, BETWEEN, LIKE, ILIKE and ESCAPE are
// reserved: quote a column so named.
//
// CAST types: TINYINT, SMALLINT, INT (INTEGER), BIGINT, each optionally
// UNSIGNED; FLOAT (REAL), DOUBLE; STRING (VARCHAR, TEXT); BINARY; BOOLEAN;
// DATE; TIMESTAMP[(0|3|6|9)]; DECIMAL(p, s).
//
// Functions (DataFusion's names): lower, upper, length (char_length,
// character_length), octet_length, trim (btrim), ltrim, rtrim,
// starts_with, ends_with, contains, strpos (instr), replace, substr
// (substring), regexp_like, regexp_match; abs, round, floor, ceil
// (ceiling); coalesce, is_valid; array_has (array_contains, list_has,
// list_contains), array_has_any (list_has_any, arrays_overlap) and
// array_has_all (list_has_all) of a list literal [x, y, …], array_length
// (list_length, cardinality); make_array (make_list), named_struct and
// struct build values. Expr.IndexExpr picks out the terms scalar indices
// can answer.
//
// A list literal [x, y, …] (or make_array(x, y, …)) is a value like any
// other: the value of a SET (tags = ['a', 'b'], what LanceDB's
// update({values: {tags: [...]}}) sends), an argument of the array
// functions. Its items meet in their common type, as DataFusion's do; []
// is a list of nulls, which a SET casts to its column's type.
// named_struct('a', x, 'b', y) is a struct of fields a and b, struct(x, y)
// one of fields c0 and c1. Two lists compare with = and != (tags = ['a',
// 'b']): equal when of one length and equal item by item, NULL items
// equal to each other.
//
// # Semantics
//
// SQL's three-valued logic: a comparison with NULL is NULL (unknown),
// NULL AND FALSE is FALSE, NULL OR TRUE is TRUE, NOT NULL is NULL, and
// x IN (1, NULL) is NULL when x is 2. IS [NOT] NULL/TRUE/FALSE and IS
// [NOT] DISTINCT FROM are never NULL. Filter keeps the rows where the
// predicate is TRUE.
//
// Types, as Lance resolves them:
//
//   - A literal compared with a column (=, <, …, BETWEEN, IN) takes the
//     column's type: id = 3 compares int64 with int64, u8 = 255 uint8 with
//     uint8. A literal the column's type cannot hold is an error, as in
//     Lance: u8 = 256, u64 > -1, id = '3'. A number with a fraction
//     against an integer or decimal column is compared exactly (i > 2.5 is
//     i >= 3; i = 2.5 is FALSE), as newer Lance does. A string against a
//     date, timestamp or binary column is read as one.
//   - Elsewhere operands meet in a common type: integers in the narrowest
//     type holding both (int8 with uint8 in int16; uint64 with a signed
//     type in decimal(20, 0), so nothing is lost), a float with anything
//     in the wider float, decimals in a decimal holding both, utf8 with
//     large utf8 as large utf8, a date with a timestamp as the timestamp.
//   - Arithmetic is done in that common type: int32 * int32 wraps in
//     int32, int8 * 2 (an int64 literal) is int64. Integer + - * wrap on
//     overflow; integer / truncates and % takes the dividend's sign, and
//     both fail on a zero divisor; unary minus of an unsigned is an error.
//     date32 ± integer moves by days.
//   - Floats compare in Arrow's total order, as in Lance: NaN equals NaN
//     and is greater than every number; -0 equals 0.
//   - A timestamp literal without a zone, compared with a zoned column, is
//     a wall-clock time in the column's zone; with a zone it is an
//     instant.
//   - LIKE's % matches any characters, _ exactly one character; the
//     escape is backslash unless ESCAPE names another.
//   - Dictionary columns are compared by value; a field of a NULL struct is
//     NULL.
//
// Where Lance 12 rejects a filter that lancer answers (a fraction against
// an integer or decimal column, a string against a date or binary column,
// LIKE … ESCAPE with another character than backslash, IS DISTINCT FROM,
// floor, ceil, trim, substr), lancer answers as newer Lance or plain
// DataFusion would. lancer computes float16 arithmetic in float32, and
// CAST(x AS BIGINT) = 3 casts x, where DataFusion's optimizer would compare
// x with 3 instead.
//
// # Errors
//
// Every error wraps a lancer category and points at the column of the
// filter it is about:
//
//	filter: "price >> 3": unexpected '>' at column 8: lancer: invalid argument
//	filter: "pricee > 3": no column pricee (did you mean price?) at column 1: lancer: not found
//
// Syntax and type errors wrap lancer.ErrInvalidArgument, an unknown name
// lancer.ErrNotFound; errors only the data reveals (an integer division by
// zero, a cast that overflows) wrap lancer.ErrInvalidArgument too.
//
// # Limits
//
// A filter is at most MaxLength bytes, nested at most 200 levels deep. What
// evaluating it may build is bounded too (limits.go), since its functions
// multiply: three nested replace(s, 'r', '<10,000 r's>') would build a
// terabyte. Sizes are checked before building wherever a function can
// outgrow its input. Two things are bounded:
//
//  1. Growth per value: a string, binary or list a function builds is at
//     most MaxValueBytes; for lower, upper, trim and substr, whose results
//     are about as long as their arguments, at most the longer of that and
//     their arguments: a 20 MiB document may be lowered, only growth past
//     it is refused.
//  2. Peak live bytes per batch: what evaluating one batch holds at once
//     (everything it allocated and has not yet released, plus what it is
//     about to build, plus patterns compiled per row) is at most
//     MaxBatchBytes, or BatchCopies times the batch's own size if that is
//     more. A child's result is credited back when it is released, so an
//     OR of terms holds one term's values at a time, not their sum; a
//     chain a || b || c builds its result once. The batch itself is not
//     counted, nor is the spreading of a value expression's result when it
//     is a constant no longer than MaxLength (SET note = '<40 KB>' stores
//     those bytes for every row anyway), which is held to MaxSpreadBytes
//     instead; a longer constant, which only a function builds, counts.
//
// Past either, Eval fails with an error wrapping
// lancer.ErrInvalidArgument that names the function and the limit:
//
//	filter: "replace(…) = 'x'": replace would build a value of 100000000 bytes, more than the 16 MiB a function may build (filter.MaxValueBytes) at column 1: lancer: invalid argument
//
// # Concurrency and lifetimes
//
// Expr and Bound are immutable and safe for concurrent use. Eval and Filter
// allocate their results from the allocator they are given; the caller
// releases them. Nothing else outlives a call.
//
// # Example
//
//	e, err := filter.Parse("price > 10 AND cat IN ('a', 'b')")
//	...
//	s, err := ds.Scan(&dataset.ScanOptions{Columns: e.Columns()})
//	...
//	b, err := e.Bind(s.Schema())
//	...
//	for rec, err := range s.Batches(ctx) {
//		...
//		kept, err := b.Filter(ctx, mem, rec)
//		...
//	}
package filter
