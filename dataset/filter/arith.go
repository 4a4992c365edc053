package filter

import (
	"context"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
)

// bindArithmetic binds + - * / % on numbers, and date ± days.
//
// Operands meet in their common numeric type (commonNumeric), so an int8
// column times the integer literal 2 is computed in int64, while int32
// times int32 stays int32. Integer +, - and * wrap on overflow, as
// DataFusion's do; integer / truncates toward zero and % takes the sign of
// the dividend; either fails on a zero divisor. Float arithmetic is IEEE.
// Decimal arithmetic is exact, in the decimal types DataFusion gives it
// (decimalResult).
func (b *binder) bindArithmetic(n *binaryNode) (evaluator, error) {
	l, r, err := b.bindPair(n.l, n.r)
	if err != nil {
		return nil, err
	}
	lt, rt := l.dataType(), r.dataType()
	switch {
	case (n.op == opAdd || n.op == opSub) && lt.ID() == arrow.DATE32 && (isInteger(rt) || isNull(rt)):
		return b.dateShift(n, l, r, n.op == opSub)
	case n.op == opAdd && (isInteger(lt) || isNull(lt)) && rt.ID() == arrow.DATE32:
		return b.dateShift(n, r, l, false)
	case isNull(lt) && isNull(rt):
		return nullOf(arrow.Null), nil
	case isNull(lt) && isNumeric(rt):
		return nullOf(commonNumeric(rt, rt)), nil
	case isNull(rt) && isNumeric(lt):
		return nullOf(commonNumeric(lt, lt)), nil
	case !isNumeric(lt) || !isNumeric(rt):
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "cannot apply %s to %s and %s", binaryOpText[n.op], typeName(lt), typeName(rt))
	}
	t := commonNumeric(lt, rt)
	result, lTarget, rTarget := t, t, t
	if isDecimal(t) {
		// Each side keeps its own scale; the result's follows from them.
		pl, sl := asDecimal(lt)
		pr, sr := asDecimal(rt)
		lTarget = &arrow.Decimal128Type{Precision: min(pl, 38), Scale: sl}
		rTarget = &arrow.Decimal128Type{Precision: min(pr, 38), Scale: sr}
		if result, err = decimalResult(n.op, pl, sl, pr, sr); err != nil {
			return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "%s of %s and %s: %v", binaryOpText[n.op], typeName(lt), typeName(rt), err)
		}
	}
	if l, err = b.convert(n, l, lTarget); err != nil {
		return nil, err
	}
	if r, err = b.convert(n, r, rTarget); err != nil {
		return nil, err
	}
	switch {
	case isDecimal(t):
		return &kernelEval{site: b.site(n), typ: result, args: []evaluator{l, r}, run: decimalKernel(b.site(n), n.op, lTarget, rTarget, result)}, nil
	case n.op == opMod && isFloat(t):
		return &kernelEval{site: b.site(n), typ: t, args: []evaluator{l, r}, run: floatModulo(t)}, nil
	}
	return &arithEval{site: b.site(n), op: n.op, l: l, r: r, typ: result}, nil
}

// decimalResult is the decimal type of l op r for l of decimal(pl, sl) and
// r of decimal(pr, sr), by DataFusion's rules (Spark's): a sum has the
// larger scale and one more digit; a product's scale is the sum of the
// scales; a quotient keeps at least 6 digits after the point, more for a
// precise divisor, unless that leaves too few digits before it; a
// remainder has the larger scale.
func decimalResult(op binaryOp, pl, sl, pr, sr int32) (arrow.DataType, error) {
	switch op {
	case opAdd, opSub:
		scale := max(sl, sr)
		return decimalHolding(max(pl-sl, pr-sr)+1, scale), nil
	case opMul:
		if sl+sr > 38 {
			return nil, errorString("the product has more than 38 digits after the point")
		}
		return &arrow.Decimal128Type{Precision: min(pl+pr+1, 38), Scale: sl + sr}, nil
	case opDiv:
		scale := max(6, sl+pr+1)
		precision := pl - sl + sr + scale
		if precision > 38 {
			intDigits := precision - scale
			scale = max(38-intDigits, min(scale, 6))
			precision = 38
		}
		return &arrow.Decimal128Type{Precision: precision, Scale: scale}, nil
	}
	scale := max(sl, sr)
	return &arrow.Decimal128Type{Precision: min(min(pl-sl, pr-sr)+scale, 38), Scale: scale}, nil
}

// decimalKernel computes decimal arithmetic exactly, on the unscaled
// integers: a quotient is truncated at the result's scale, a remainder is
// that of truncated division (its sign the dividend's). A zero divisor, or
// a result beyond the result's precision, fails. (Arrow's decimal kernels
// would fail on results above 38 digits of precision, and lack / and %.)
func decimalKernel(s site, op binaryOp, lt, rt, result arrow.DataType) rowKernel {
	_, sl := decimalParams(lt)
	_, sr := decimalParams(rt)
	precision, scale := decimalParams(result)
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	pow10 := func(e int32) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil) }
	return func(in *input, n int, args []operand) (arrow.Array, error) {
		lv, rv := args[0].decimals(), args[1].decimals()
		bld := array.NewDecimal128Builder(in.mem, result.(*arrow.Decimal128Type))
		defer bld.Release()
		for i := 0; i < n; i++ {
			if !args[0].valid(i) || !args[1].valid(i) {
				bld.AppendNull()
				continue
			}
			a, d := lv(i), rv(i)
			if d.Sign() == 0 && (op == opDiv || op == opMod) {
				return nil, s.fail(nil, "division by zero")
			}
			var v *big.Int
			switch op {
			case opAdd, opSub:
				a.Mul(a, pow10(scale-sl))
				d.Mul(d, pow10(scale-sr))
				if op == opAdd {
					v = a.Add(a, d)
				} else {
					v = a.Sub(a, d)
				}
			case opMul:
				v = a.Mul(a, d) // its scale is sl + sr, the result's
			case opDiv:
				// a/10^sl ÷ d/10^sr at scale: a·10^(scale-sl+sr) ÷ d.
				if e := scale - sl + sr; e >= 0 {
					a.Mul(a, pow10(e))
				} else {
					d.Mul(d, pow10(-e))
				}
				v = a.Quo(a, d)
			default:
				a.Mul(a, pow10(scale-sl))
				d.Mul(d, pow10(scale-sr))
				v = a.Rem(a, d)
			}
			if new(big.Int).Abs(v).Cmp(limit) >= 0 {
				return nil, s.fail(nil, "%s overflows %s", binaryOpText[op], typeName(result))
			}
			bld.Append(decimal128.FromBigInt(v))
		}
		return bld.NewArray(), nil
	}
}

// decimals reads a decimal128 operand as big integers (its unscaled
// values); each call returns a fresh integer the caller may change.
func (o operand) decimals() func(i int) *big.Int {
	if o.arr == nil {
		var v decimal128.Num
		if d, ok := o.sc.(*scalar.Decimal128); ok {
			v = d.Value
		}
		return func(int) *big.Int { return v.BigInt() }
	}
	a := o.arr.(*array.Decimal128)
	return func(i int) *big.Int { return a.Value(i).BigInt() }
}

// arithEval is integer and float + - * / by Arrow's compute functions.
type arithEval struct {
	site
	op   binaryOp
	l, r evaluator
	typ  arrow.DataType
}

func (a *arithEval) dataType() arrow.DataType { return a.typ }

func (a *arithEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, []evaluator{a.l, a.r})
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	if a.op == opMod {
		return a.modulo(ctx, ds[0], ds[1])
	}
	fn := map[binaryOp]string{opAdd: "add_unchecked", opSub: "subtract_unchecked", opMul: "multiply_unchecked", opDiv: "divide_unchecked"}[a.op]
	if a.op == opDiv && isInteger(a.typ) {
		fn = "divide" // checked: fails on a zero divisor
	}
	out, err := compute.CallFunction(ctx, fn, nil, ds[0], ds[1])
	if err != nil {
		return nil, a.fail(err, "%s failed", binaryOpText[a.op])
	}
	return out, nil
}

// modulo is integer %, which Arrow's compute lacks, as x - (x / y) * y:
// the remainder of truncated division, its sign the dividend's, as in Rust
// and SQL. A zero divisor fails in the division.
func (a *arithEval) modulo(ctx context.Context, x, y compute.Datum) (compute.Datum, error) {
	q, err := compute.CallFunction(ctx, "divide", nil, x, y)
	if err != nil {
		return nil, a.fail(err, "%% failed")
	}
	defer q.Release()
	p, err := compute.CallFunction(ctx, "multiply_unchecked", nil, q, y)
	if err != nil {
		return nil, a.fail(err, "%% failed")
	}
	defer p.Release()
	out, err := compute.CallFunction(ctx, "subtract_unchecked", nil, x, p)
	if err != nil {
		return nil, a.fail(err, "%% failed")
	}
	return out, nil
}

// floatModulo is float %: C's fmod, as in Rust.
func floatModulo(t arrow.DataType) rowKernel {
	return func(in *input, n int, args []operand) (arrow.Array, error) {
		l, r := args[0], args[1]
		lf, rf := floatReader(l), floatReader(r)
		bld := array.NewBuilder(in.mem, t)
		defer bld.Release()
		for i := 0; i < n; i++ {
			if !l.valid(i) || !r.valid(i) {
				bld.AppendNull()
				continue
			}
			v := math.Mod(lf(i), rf(i))
			if t.ID() == arrow.FLOAT32 {
				bld.(*array.Float32Builder).Append(float32(v))
			} else {
				bld.(*array.Float64Builder).Append(v)
			}
		}
		return bld.NewArray(), nil
	}
}

// appendInteger appends to an integer builder of any width; the value fits
// because it came from operands of that type.
func appendInteger(bld array.Builder, v int64) {
	switch b := bld.(type) {
	case *array.Int8Builder:
		b.Append(int8(v))
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	case *array.Uint8Builder:
		b.Append(uint8(v))
	case *array.Uint16Builder:
		b.Append(uint16(v))
	case *array.Uint32Builder:
		b.Append(uint32(v))
	case *array.Uint64Builder:
		b.Append(uint64(v))
	}
}

// floatReader reads a float32 or float64 operand as float64.
func floatReader(o operand) func(i int) float64 {
	if o.arr == nil {
		v := 0.0
		switch s := o.sc.(type) {
		case *scalar.Float32:
			v = float64(s.Value)
		case *scalar.Float64:
			v = s.Value
		}
		return func(int) float64 { return v }
	}
	switch a := o.arr.(type) {
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Float64:
		return a.Value
	}
	return func(int) float64 { return 0 }
}

// bindNegate binds unary minus. As in DataFusion, unsigned integers have no
// negation; signed integers wrap (-(-128) is -128 in int8).
func (b *binder) bindNegate(n *unaryNode) (evaluator, error) {
	x, err := b.bind(n.x)
	if err != nil {
		return nil, err
	}
	t := x.dataType()
	switch {
	case isNull(t):
		return x, nil
	case isSignedInt(t) || isFloat(t) || isDecimal(t):
	default:
		return nil, b.errorf(n.pos(), lancer.ErrInvalidArgument, "cannot negate %s", typeName(t))
	}
	if t.ID() == arrow.FLOAT16 {
		t = arrow.PrimitiveTypes.Float32
		if x, err = b.convert(n, x, t); err != nil {
			return nil, err
		}
	}
	return &negateEval{site: b.site(n), x: x}, nil
}

type negateEval struct {
	site
	x evaluator
}

func (e *negateEval) dataType() arrow.DataType { return e.x.dataType() }

func (e *negateEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := e.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	fn := "negate_unchecked"
	if isDecimal(e.x.dataType()) {
		fn = "negate"
	}
	out, err := compute.CallFunction(ctx, fn, nil, x)
	if err != nil {
		return nil, e.fail(err, "negation failed")
	}
	return out, nil
}

// dateShift binds date ± integer, which moves a date32 by whole days.
func (b *binder) dateShift(n node, date, days evaluator, subtract bool) (evaluator, error) {
	if isNull(days.dataType()) {
		return nullOf(arrow.FixedWidthTypes.Date32), nil
	}
	s := b.site(n)
	run := func(in *input, rows int, args []operand) (arrow.Array, error) {
		d, k := args[0].int64sOfDate(), args[1].int64s()
		bld := array.NewDate32Builder(in.mem)
		defer bld.Release()
		for i := 0; i < rows; i++ {
			if !args[0].valid(i) || !args[1].valid(i) {
				bld.AppendNull()
				continue
			}
			shift := k(i)
			if subtract {
				shift = -shift
			}
			v := d(i) + shift // wraps only for a shift the check below refuses anyway
			if shift < -1<<40 || shift > 1<<40 || v < math.MinInt32 || v > math.MaxInt32 {
				return nil, s.fail(nil, "date out of range")
			}
			bld.Append(arrow.Date32(v))
		}
		return bld.NewArray(), nil
	}
	return &kernelEval{site: s, typ: arrow.FixedWidthTypes.Date32, args: []evaluator{date, days}, run: run}, nil
}

// int64sOfDate reads a date32 operand as days since the epoch.
func (o operand) int64sOfDate() func(i int) int64 {
	if o.arr == nil {
		var v int64
		if d, ok := o.sc.(*scalar.Date32); ok {
			v = int64(d.Value)
		}
		return func(int) int64 { return v }
	}
	a := o.arr.(*array.Date32)
	return func(i int) int64 { return int64(a.Value(i)) }
}

// bindConcat binds ||, string concatenation: NULL if any side is. A side
// that is not a string is cast to one. A chain a || b || c is one kernel
// over all its sides, so that it builds its result once rather than every
// prefix of it: s||s||s||s||s holds five times s, not fourteen (nor nine at
// once, the last two prefixes).
func (b *binder) bindConcat(n *binaryNode) (evaluator, error) {
	sides := concatSides(n, nil)
	args := make([]evaluator, len(sides))
	t := arrow.BinaryTypes.String
	for i, side := range sides {
		ev, err := b.bind(side)
		if err != nil {
			return nil, err
		}
		if ev.dataType().ID() == arrow.LARGE_STRING {
			t = arrow.BinaryTypes.LargeString
		}
		args[i] = ev
	}
	for i, side := range sides {
		ev, err := b.convert(side, args[i], t)
		if err != nil {
			return nil, err
		}
		args[i] = ev
	}
	s := b.site(n)
	run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
		row := textRow(ops)
		out := newTextWriter(in, s, "||", t, rows)
		if err := out.growRows(rows, func(i int) (int64, bool) {
			var n int64
			for _, side := range row(i) {
				n += int64(len(side))
			}
			return n, allValid(ops, i)
		}); err != nil {
			return nil, err
		}
		for i := 0; i < rows; i++ {
			if !allValid(ops, i) {
				out.appendNull()
				continue
			}
			out.append(strings.Join(row(i), ""))
		}
		return out.finish(), nil
	}
	return &kernelEval{site: s, typ: t, args: args, run: run}, nil
}

// concatSides appends to sides the operands of a chain of ||, in order.
// The chain is at most the parser's depth deep.
func concatSides(n node, sides []node) []node {
	if c, ok := n.(*binaryNode); ok && c.op == opConcat {
		return concatSides(c.r, concatSides(c.l, sides))
	}
	return append(sides, n)
}
