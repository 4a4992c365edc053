package filter

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// minInSet is the number of constants of x's type from which x IN (…)
// looks x up in a hash set rather than comparing it with each: below it a
// few vectorised comparisons are cheaper than a lookup per row.
const minInSet = 8

// inSet replaces, among the terms of x IN (…) (x = item, for each item),
// the comparisons of x with a constant of its own type by one lookup in a
// hash set, so that the IN costs rows + items rather than rows × items
// (10,000 ids over 200,000 rows took seconds). A NULL item's term (NULL
// for every row) becomes the set's hasNull. It returns the terms left,
// the set's first, or terms unchanged when the set would be too small or
// x's type is not one it holds.
func inSet(x evaluator, terms []evaluator) []evaluator {
	var (
		values  []scalar.Scalar
		hasNull bool
		rest    []evaluator
	)
	for _, t := range terms {
		if isNullLiteral(t) {
			hasNull = true
			continue
		}
		if c, ok := t.(*compareEval); ok && c.op == opEq && c.l == x {
			if lit, ok := c.r.(*literalEval); ok && lit.value.IsValid() && arrow.TypeEqual(lit.value.DataType(), x.dataType()) {
				values = append(values, lit.value)
				continue
			}
		}
		rest = append(rest, t)
	}
	if len(values) < minInSet {
		return terms
	}
	member := memberOf(x.dataType(), values)
	if member == nil {
		return terms
	}
	return append([]evaluator{&inSetEval{x: x, member: member, size: len(values), hasNull: hasNull}}, rest...)
}

// inSetEval is x IN (the set's values[, NULL]): TRUE when x is one of
// them, else NULL when x is NULL or the list holds a NULL, else FALSE.
type inSetEval struct {
	x evaluator
	// member returns whether row i of an array of x's type is in the set.
	member  func(arr arrow.Array) func(i int) bool
	size    int // the number of items it stands for, duplicates included
	hasNull bool
}

func (s *inSetEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (s *inSetEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	d, err := s.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer d.Release()
	if sc := scalarOf(d); sc != nil {
		if !sc.IsValid() {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean)), nil
		}
		arr, err := scalar.MakeArrayFromScalar(sc, 1, in.mem)
		if err != nil {
			return nil, err
		}
		defer arr.Release()
		if s.member(arr)(0) {
			return compute.NewDatum(scalar.NewBooleanScalar(true)), nil
		}
		if s.hasNull {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean)), nil
		}
		return compute.NewDatum(scalar.NewBooleanScalar(false)), nil
	}
	arr := d.(*compute.ArrayDatum).MakeArray()
	defer arr.Release()
	contains := s.member(arr)
	out := newBoolWriter(in.mem, arr.Len())
	for i := 0; i < arr.Len(); i++ {
		switch {
		case arr.IsNull(i):
			out.setNull(i)
		case contains(i):
			out.set(i, true)
		case s.hasNull:
			out.setNull(i)
		}
	}
	return arrayDatum(out.finish()), nil
}

// memberOf builds the set of values (all of type t, none NULL), or returns
// nil for a type it does not hash. Keys follow the comparison's equality:
// integers, dates and timestamps by value, floats in Lance's total order
// (NaN equals NaN, -0 equals 0), strings and binaries by their bytes,
// decimals by their unscaled value (the values have t's scale).
func memberOf(t arrow.DataType, values []scalar.Scalar) func(arrow.Array) func(int) bool {
	switch {
	case isInteger(t) || isTemporal(t):
		return setOf(values, integerKeys)
	case t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT64:
		return setOf(values, floatKeys)
	case isString(t) || isBinary(t):
		return setOf(values, func(arr arrow.Array) func(int) string { return operand{arr: arr}.texts() })
	case t.ID() == arrow.DECIMAL128:
		return setOf(values, func(arr arrow.Array) func(int) decimal128.Num { return arr.(*array.Decimal128).Value })
	case t.ID() == arrow.DECIMAL256:
		return setOf(values, func(arr arrow.Array) func(int) decimal256.Num { return arr.(*array.Decimal256).Value })
	}
	return nil
}

// setOf builds a hash set of values' keys, read by keys, and returns its
// membership test.
func setOf[K comparable](values []scalar.Scalar, keys func(arrow.Array) func(int) K) func(arrow.Array) func(int) bool {
	set := make(map[K]struct{}, len(values))
	for _, v := range values {
		arr, err := scalar.MakeArrayFromScalar(v, 1, memory.DefaultAllocator)
		if err != nil {
			return nil
		}
		set[keys(arr)(0)] = struct{}{}
		arr.Release()
	}
	return func(arr arrow.Array) func(int) bool {
		key := keys(arr)
		return func(i int) bool {
			_, ok := set[key(i)]
			return ok
		}
	}
}

// integerKeys reads integers, dates and timestamps as int64: a uint64
// keeps its bits, so equal keys are equal values of one type.
func integerKeys(arr arrow.Array) func(int) int64 {
	switch a := arr.(type) {
	case *array.Date32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Date64:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Timestamp:
		return func(i int) int64 { return int64(a.Value(i)) }
	}
	return operand{arr: arr}.int64s()
}

// floatKeys reads floats as the bits of a float64, with every NaN one NaN
// and -0 as 0, so that keys are equal exactly when totalCompare says so.
func floatKeys(arr arrow.Array) func(int) uint64 {
	read := floatReader(operand{arr: arr})
	nan := math.Float64bits(math.NaN())
	return func(i int) uint64 {
		switch f := read(i); {
		case f != f:
			return nan
		case f == 0:
			return 0
		default:
			return math.Float64bits(f)
		}
	}
}
