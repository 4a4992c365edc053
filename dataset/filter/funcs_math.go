package filter

import (
	"context"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/lancerdb/lancer"
)

// bindAbs binds abs(x). As in DataFusion, the absolute value of the
// smallest integer of a type overflows it, which is an error.
func bindAbs(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	x, t := args[0], args[0].dataType()
	switch {
	case isNull(t), isUnsignedInt(t):
		return x, nil
	case !isNumeric(t):
		return nil, b.argError(n, 0, "a number", t)
	case t.ID() == arrow.FLOAT16:
		if x, err = b.convert(n, x, arrow.PrimitiveTypes.Float32); err != nil {
			return nil, err
		}
	}
	return &computeEval{site: b.site(n), fn: "abs", x: x}, nil
}

// computeEval applies a unary Arrow compute function that keeps the type.
type computeEval struct {
	site
	fn string
	x  evaluator
}

func (c *computeEval) dataType() arrow.DataType { return c.x.dataType() }

func (c *computeEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	x, err := c.x.eval(ctx, in)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out, err := compute.CallFunction(ctx, c.fn, nil, x)
	if err != nil {
		return nil, c.fail(err, "%s failed", c.fn)
	}
	return out, nil
}

type rounding uint8

const (
	roundHalfAway rounding = iota // round: halves away from zero
	roundFloor
	roundCeil
)

// bindRounding binds round(x[, digits]), floor(x) and ceil(x). Like
// DataFusion they return float32 for a float32 (or float16) argument and
// float64 for anything else, integers and decimals included.
func bindRounding(mode rounding) func(b *binder, n *callNode) (evaluator, error) {
	return func(b *binder, n *callNode) (evaluator, error) {
		args, err := b.bindArgs(n)
		if err != nil {
			return nil, err
		}
		t := args[0].dataType()
		if !isNumeric(t) && !isNull(t) {
			return nil, b.argError(n, 0, "a number", t)
		}
		result := arrow.DataType(arrow.PrimitiveTypes.Float64)
		if t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT16 {
			result = arrow.PrimitiveTypes.Float32
		}
		if args[0], err = b.convert(n, args[0], result); err != nil {
			return nil, err
		}
		if len(args) > 1 {
			if dt := args[1].dataType(); !isInteger(dt) && !isNull(dt) {
				return nil, b.argError(n, 1, "an integer", dt)
			}
		}
		for _, a := range args {
			if isNull(a.dataType()) || isNullLiteral(a) {
				return nullOf(result), nil
			}
		}
		run := func(in *input, rows int, ops []operand) (arrow.Array, error) {
			x := floatReader(ops[0])
			digits := func(int) int64 { return 0 }
			if len(ops) > 1 {
				digits = ops[1].int64s()
			}
			bld := array.NewBuilder(in.mem, result)
			defer bld.Release()
			for i := 0; i < rows; i++ {
				if !allValid(ops, i) {
					bld.AppendNull()
					continue
				}
				v := roundTo(x(i), digits(i), mode)
				if result.ID() == arrow.FLOAT32 {
					bld.(*array.Float32Builder).Append(float32(v))
				} else {
					bld.(*array.Float64Builder).Append(v)
				}
			}
			return bld.NewArray(), nil
		}
		return &kernelEval{site: b.site(n), typ: result, args: args, run: run}, nil
	}
}

// roundTo rounds v to a number of decimal digits (negative: to tens,
// hundreds, …) as DataFusion does: scale, round, unscale.
func roundTo(v float64, digits int64, mode rounding) float64 {
	f := func(x float64) float64 {
		switch mode {
		case roundFloor:
			return math.Floor(x)
		case roundCeil:
			return math.Ceil(x)
		}
		return math.Round(x)
	}
	if digits == 0 {
		return f(v)
	}
	scale := math.Pow(10, float64(max(min(digits, 400), -400)))
	return f(v*scale) / scale
}

// bindCoalesce binds coalesce(a, b, …): the first argument that is not
// NULL, in the common type of all of them.
func bindCoalesce(b *binder, n *callNode) (evaluator, error) {
	args, err := b.bindArgs(n)
	if err != nil {
		return nil, err
	}
	t := arrow.DataType(arrow.Null)
	for i, a := range args {
		at := a.dataType()
		if isNull(at) {
			continue
		}
		common := commonType(t, at)
		if common == nil {
			return nil, b.errorf(n.args[i].pos(), lancer.ErrInvalidArgument, "coalesce cannot mix %s and %s", typeName(t), typeName(at))
		}
		t = common
	}
	if isNull(t) {
		return nullOf(arrow.Null), nil
	}
	for i := range args {
		if args[i], err = b.convert(n.args[i], args[i], t); err != nil {
			return nil, err
		}
	}
	return &coalesceEval{site: b.site(n), args: args, typ: t}, nil
}

type coalesceEval struct {
	site
	args []evaluator
	typ  arrow.DataType
}

func (c *coalesceEval) dataType() arrow.DataType { return c.typ }

// eval picks, row by row, the first valid argument: it concatenates the
// arguments and takes from them, which works for values of every type.
func (c *coalesceEval) eval(ctx context.Context, in *input) (compute.Datum, error) {
	ds, err := evalAll(ctx, in, c.args)
	if err != nil {
		return nil, err
	}
	defer releaseAll(ds)
	allScalar := true
	for _, d := range ds {
		allScalar = allScalar && scalarOf(d) != nil
	}
	if allScalar {
		for _, d := range ds {
			if scalarOf(d).IsValid() {
				return compute.NewDatum(d), nil
			}
		}
		return compute.NewDatum(ds[len(ds)-1]), nil
	}
	arrays := make([]arrow.Array, len(ds))
	defer func() {
		for _, a := range arrays {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, d := range ds {
		if arrays[i], err = materialize(in, c.site, d); err != nil {
			return nil, err
		}
	}
	if arrays[0].NullN() == 0 {
		return compute.NewDatum(arrays[0]), nil
	}
	idx := array.NewInt64Builder(in.mem)
	defer idx.Release()
	idx.Reserve(in.rows)
	for row := 0; row < in.rows; row++ {
		pick := len(arrays) - 1
		for k, a := range arrays {
			if a.IsValid(row) {
				pick = k
				break
			}
		}
		idx.UnsafeAppend(int64(pick*in.rows + row))
	}
	indices := idx.NewArray()
	defer indices.Release()
	var size int64
	for _, a := range arrays {
		size = satAdd(size, valueBytes(a))
	}
	if err := in.budget.bytes(c.site, "coalesce", size); err != nil {
		return nil, err
	}
	all, err := array.Concatenate(arrays, in.mem)
	if err != nil {
		return nil, c.fail(err, "coalesce failed")
	}
	defer all.Release()
	out, err := compute.TakeArray(ctx, all, indices)
	if err != nil {
		return nil, c.fail(err, "coalesce failed")
	}
	if err := in.budget.bytes(c.site, "coalesce", 0); err != nil { // built, live
		out.Release()
		return nil, err
	}
	return arrayDatum(out), nil
}
