package filter

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

func (b *binder) bindComparison(n *binaryNode) (evaluator, error) {
	l, r, err := b.bindPair(n.l, n.r)
	if err != nil {
		return nil, err
	}
	return b.comparison(n, n.op, n.l, l, n.r, r)
}

// comparison binds "l op r" for bound operands. A literal compared with
// something else is first brought to that side's type (coerceLiteral);
// otherwise both sides meet in their common type.
func (b *binder) comparison(at node, op binaryOp, ln node, l evaluator, rn node, r evaluator) (evaluator, error) {
	_, lIsLit := ln.(*literalNode)
	_, rIsLit := rn.(*literalNode)
	if rIsLit && !lIsLit {
		return b.compareWithLiteral(at, op, ln, l, rn.(*literalNode), r)
	}
	if lIsLit && !rIsLit {
		return b.compareWithLiteral(at, op.flip(), rn, r, ln.(*literalNode), l)
	}
	return b.compareByCommonType(at, op, l, r)
}

// compareWithLiteral binds "x op lit".
func (b *binder) compareWithLiteral(at node, op binaryOp, xn node, x evaluator, lit *literalNode, litEv evaluator) (evaluator, error) {
	_, strict := xn.(*columnNode)
	c, err := b.coerceLiteral(lit, x.dataType(), op, strict)
	if err != nil {
		return nil, err
	}
	switch c.kind {
	case coerceValue:
		return b.compareByCommonType(at, c.op, x, &literalEval{value: c.value})
	case coerceConstant:
		return &constOutcomeEval{x: x, outcome: c.outcome}, nil
	}
	return b.compareByCommonType(at, op, x, litEv)
}

// compareByCommonType binds "l op r" in the common type of both sides.
func (b *binder) compareByCommonType(at node, op binaryOp, l, r evaluator) (evaluator, error) {
	lt, rt := l.dataType(), r.dataType()
	if listItemType(lt) != nil && listItemType(rt) != nil && (op == opEq || op == opNe) {
		return b.compareLists(at, op, l, r)
	}
	t := commonType(lt, rt)
	if t == nil || !isComparable(t) {
		return nil, b.errorf(at.pos(), lancer.ErrInvalidArgument, "cannot compare %s with %s", typeName(lt), typeName(rt))
	}
	if isNull(t) || isNullLiteral(l) || isNullLiteral(r) {
		return nullOf(arrow.FixedWidthTypes.Boolean), nil
	}
	var err error
	if l, err = b.convert(at, l, t); err != nil {
		return nil, err
	}
	if r, err = b.convert(at, r, t); err != nil {
		return nil, err
	}
	return &compareEval{op: op, l: l, r: r}, nil
}

// isComparable reports whether values of type t can be ordered and compared.
func isComparable(t arrow.DataType) bool {
	return isNull(t) || isNumeric(t) || isString(t) || isBinary(t) || isTemporal(t) || isBool(t)
}

// compareEval compares two operands of one type.
type compareEval struct {
	op   binaryOp
	l, r evaluator
}

func (c *compareEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (c *compareEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, []evaluator{c.l, c.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	return compareDatums(ctx, in.mem, c.op, ds[0], ds[1])
}

var compareFunctions = [...]string{
	opEq: "equal", opNe: "not_equal", opLt: "less", opLe: "less_equal", opGt: "greater", opGe: "greater_equal",
}

// compareDatums compares two datums of one type. Floats are compared by
// Lance's rules, not IEEE's: NaN equals NaN and sorts above every number
// (Arrow's total order), and -0 equals 0.
func compareDatums(ctx context.Context, mem memory.Allocator, op binaryOp, l, r compute.Datum) (compute.Datum, error) {
	switch datumType(l).ID() {
	case arrow.FLOAT32:
		return compareFloats[float32](mem, op, l, r)
	case arrow.FLOAT64:
		return compareFloats[float64](mem, op, l, r)
	case arrow.BOOL:
		if op != opEq && op != opNe {
			return compareBools(mem, op, l, r), nil
		}
	}
	return callCompute(ctx, compareFunctions[op], nil, l, r)
}

func datumType(d compute.Datum) arrow.DataType {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		return d.Type()
	case *compute.ScalarDatum:
		return d.Type()
	}
	return arrow.Null
}

// totalCompare orders floats as Lance does: NaN above everything, NaNs
// equal, -0 equal to 0.
func totalCompare[T float32 | float64](a, b T) int {
	aNaN, bNaN := a != a, b != b
	switch {
	case aNaN || bNaN:
		switch {
		case aNaN && bNaN:
			return 0
		case aNaN:
			return 1
		}
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func holds(op binaryOp, cmp int) bool {
	switch op {
	case opEq:
		return cmp == 0
	case opNe:
		return cmp != 0
	case opLt:
		return cmp < 0
	case opLe:
		return cmp <= 0
	case opGt:
		return cmp > 0
	}
	return cmp >= 0
}

// floats reads a float datum: an array's values, or one scalar.
type floats[T float32 | float64] struct {
	arr    arrow.Array
	values []T
	scalar T
	valid  bool // for a scalar
}

func readFloats[T float32 | float64](d compute.Datum) floats[T] {
	if s := scalarOf(d); s != nil {
		var v T
		switch s := s.(type) {
		case *scalar.Float32:
			v = T(s.Value)
		case *scalar.Float64:
			v = T(s.Value)
		}
		return floats[T]{scalar: v, valid: s.IsValid()}
	}
	arr := d.(*compute.ArrayDatum).MakeArray()
	f := floats[T]{arr: arr}
	switch a := arr.(type) {
	case *array.Float32:
		f.values = any(a.Float32Values()).([]T)
	case *array.Float64:
		f.values = any(a.Float64Values()).([]T)
	}
	return f
}

func (f floats[T]) release() {
	if f.arr != nil {
		f.arr.Release()
	}
}

func compareFloats[T float32 | float64](mem memory.Allocator, op binaryOp, l, r compute.Datum) (compute.Datum, error) {
	lf, rf := readFloats[T](l), readFloats[T](r)
	defer lf.release()
	defer rf.release()
	if lf.arr == nil && rf.arr == nil {
		if !lf.valid || !rf.valid {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean)), nil
		}
		return compute.NewDatum(scalar.NewBooleanScalar(holds(op, totalCompare(lf.scalar, rf.scalar)))), nil
	}
	if lf.arr == nil && !lf.valid || rf.arr == nil && !rf.valid {
		return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean)), nil
	}
	// Tight loops over the values; the result's nulls are the operands'.
	var (
		n   int
		out *boolWriter
	)
	switch {
	case rf.arr == nil:
		n = len(lf.values)
		out = newBoolWriter(mem, n)
		bits, v := out.values.Bytes(), rf.scalar
		for i, a := range lf.values {
			if holds(op, totalCompare(a, v)) {
				bitutil.SetBit(bits, i)
			}
		}
	case lf.arr == nil:
		n = len(rf.values)
		out = newBoolWriter(mem, n)
		bits, v := out.values.Bytes(), lf.scalar
		for i, b := range rf.values {
			if holds(op, totalCompare(v, b)) {
				bitutil.SetBit(bits, i)
			}
		}
	default:
		n = len(lf.values)
		out = newBoolWriter(mem, n)
		bits := out.values.Bytes()
		for i, a := range lf.values {
			if holds(op, totalCompare(a, rf.values[i])) {
				bitutil.SetBit(bits, i)
			}
		}
	}
	out.nullsFrom(lf.arr, rf.arr)
	return arrayDatum(out.finish()), nil
}

func (b *binder) bindBetween(n *betweenNode) (evaluator, error) {
	x, err := b.bind(n.x)
	if err != nil {
		return nil, err
	}
	lo, err := b.bind(n.lo)
	if err != nil {
		return nil, err
	}
	hi, err := b.bind(n.hi)
	if err != nil {
		return nil, err
	}
	x = share(x)
	ge, err := b.comparison(n, opGe, n.x, x, n.lo, lo)
	if err != nil {
		return nil, err
	}
	le, err := b.comparison(n, opLe, n.x, x, n.hi, hi)
	if err != nil {
		return nil, err
	}
	var ev evaluator = &logicEval{terms: []evaluator{ge, le}}
	if n.negated {
		ev = &notEval{x: ev}
	}
	return ev, nil
}

// bindIn binds x IN (a, b, …) as x = a OR x = b OR …, which gives SQL's
// answer: TRUE on a match, else NULL if x or an item is NULL, else FALSE.
// Items that no value of x can equal (2.5 for an integer column) drop out;
// many constants are looked up in a hash set (inSet).
func (b *binder) bindIn(n *inNode) (evaluator, error) {
	x, err := b.bind(n.x)
	if err != nil {
		return nil, err
	}
	x = share(x)
	var terms []evaluator
	for _, item := range n.list {
		ev, err := b.bind(item)
		if err != nil {
			return nil, err
		}
		eq, err := b.comparison(n, opEq, n.x, x, item, ev)
		if err != nil {
			return nil, err
		}
		if c, ok := eq.(*constOutcomeEval); ok && !c.outcome {
			continue
		}
		terms = append(terms, eq)
	}
	terms = inSet(x, terms)
	var ev evaluator
	switch len(terms) {
	case 0:
		ev = &constOutcomeEval{x: x, outcome: false}
	case 1:
		ev = terms[0]
	default:
		ev = &logicEval{or: true, terms: terms}
	}
	if n.negated {
		ev = &notEval{x: ev}
	}
	return ev, nil
}

// bindDistinct binds IS [NOT] DISTINCT FROM, a comparison where NULL is a
// value: NULL IS DISTINCT FROM 1 is TRUE, NULL IS DISTINCT FROM NULL FALSE.
func (b *binder) bindDistinct(n *binaryNode) (evaluator, error) {
	l, r, err := b.bindPair(n.l, n.r)
	if err != nil {
		return nil, err
	}
	t := commonType(l.dataType(), r.dataType())
	if t == nil || !isComparable(t) {
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "cannot compare %s with %s", typeName(l.dataType()), typeName(r.dataType()))
	}
	if isNull(t) {
		t = arrow.FixedWidthTypes.Boolean
	}
	if l, err = b.convert(n, l, t); err != nil {
		return nil, err
	}
	if r, err = b.convert(n, r, t); err != nil {
		return nil, err
	}
	return &distinctEval{l: l, r: r, not: n.op == opIsNotDistinct}, nil
}

type distinctEval struct {
	l, r evaluator
	not  bool
}

func (d *distinctEval) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (d *distinctEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, []evaluator{d.l, d.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	ne, err := compareDatums(ctx, in.mem, opNe, ds[0], ds[1])
	if err != nil {
		return nil, err
	}
	defer ne.Release()
	lv, rv, nev := operandOf(ds[0]), operandOf(ds[1]), operandOf(ne)
	defer lv.release()
	defer rv.release()
	defer nev.release()
	unequal := nev.bools()
	distinct := func(i int) bool {
		if a, b := lv.valid(i), rv.valid(i); !a || !b {
			return a != b
		}
		return unequal(i)
	}
	if scalarOf(ds[0]) != nil && scalarOf(ds[1]) != nil {
		return compute.NewDatum(scalar.NewBooleanScalar(distinct(0) != d.not)), nil
	}
	out := newBoolWriter(in.mem, in.rows)
	for i := 0; i < in.rows; i++ {
		out.set(i, distinct(i) != d.not)
	}
	return arrayDatum(out.finish()), nil
}

// sharedEval evaluates an operand used twice (the x of BETWEEN and IN) once
// per batch.
type sharedEval struct {
	x evaluator
}

// share wraps ev so that its value is computed once per batch, unless it is
// a constant anyway.
func share(ev evaluator) evaluator {
	if _, ok := ev.(*literalEval); ok {
		return ev
	}
	return &sharedEval{x: ev}
}

func (s *sharedEval) dataType() arrow.DataType { return s.x.dataType() }

func (s *sharedEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	if d, ok := in.shared[s]; ok {
		return compute.NewDatum(d), nil
	}
	d, err := s.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	if in.shared == nil {
		in.shared = map[*sharedEval]compute.Datum{}
	}
	in.shared[s] = d
	return compute.NewDatum(d), nil
}

// compareBools orders booleans, FALSE before TRUE, which Arrow's compare
// functions do not.
func compareBools(mem memory.Allocator, op binaryOp, l, r compute.Datum) compute.Datum {
	lo, ro := operandOf(l), operandOf(r)
	defer lo.release()
	defer ro.release()
	lv, rv := lo.bools(), ro.bools()
	toInt := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	if lo.arr == nil && ro.arr == nil {
		if !lo.valid(0) || !ro.valid(0) {
			return compute.NewDatum(scalar.MakeNullScalar(arrow.FixedWidthTypes.Boolean))
		}
		return compute.NewDatum(scalar.NewBooleanScalar(holds(op, toInt(lv(0))-toInt(rv(0)))))
	}
	n := 0
	if lo.arr != nil {
		n = lo.arr.Len()
	} else {
		n = ro.arr.Len()
	}
	out := newBoolWriter(mem, n)
	for i := 0; i < n; i++ {
		if !lo.valid(i) || !ro.valid(i) {
			out.setNull(i)
			continue
		}
		out.set(i, holds(op, toInt(lv(i))-toInt(rv(i))))
	}
	return arrayDatum(out.finish())
}
